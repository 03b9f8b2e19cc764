"""Ownership, system pods, opt-in preemptability and budget precedence in the cluster fold."""

from __future__ import annotations

from typing import Any

import pytest

from projections.cluster import ClusterState
from projections.snapshot import dump_cluster, load_cluster
from streams.events import Event, make_event
from tests.builders import T0, build_pod, build_podgroup, watch

PREEMPTABLE = "volcano.sh/preemptable"


def applied(config: dict[str, Any], behaviour: int | None = 2) -> Event:
    data: dict[str, Any] = {"config": config, "source": "test"}
    if behaviour is not None:
        data["behaviour"] = behaviour
    return make_event("config.applied", T0, data)


def fold(*events: Event) -> ClusterState:
    state = ClusterState()
    for event in events:
        state.apply(event)
    return state


POD_CASES = [
    # (pod kwargs, config, behaviour, owned, evictable, preemptable, forms a job)
    ({}, {}, 2, True, True, False, True),
    ({"annotations": {PREEMPTABLE: "true"}}, {}, 2, True, True, True, True),
    ({"labels": {PREEMPTABLE: "true"}}, {}, 2, True, True, True, True),
    (
        {"annotations": {PREEMPTABLE: "false"}, "labels": {PREEMPTABLE: "true"}},
        {},
        2,
        True,
        True,
        False,
        True,
    ),
    ({"annotations": {PREEMPTABLE: "yes"}}, {}, 2, True, True, False, True),
    ({}, {"preemptableByDefault": True}, 2, True, True, True, True),
    ({"scheduler": "default-scheduler"}, {}, 2, False, True, False, False),
    (
        {"scheduler": "default-scheduler", "annotations": {PREEMPTABLE: "true"}},
        {},
        2,
        False,
        True,
        False,
        False,
    ),
    (
        {"scheduler": "kube-batch"},
        {"schedulerName": ["volcano", "kube-batch"]},
        2,
        True,
        True,
        False,
        True,
    ),
    (
        {"owner_kind": "DaemonSet", "annotations": {PREEMPTABLE: "true"}},
        {},
        2,
        True,
        False,
        False,
        True,
    ),
    ({"annotations": {"kubernetes.io/config.mirror": "x"}}, {}, 2, True, False, False, True),
    # level 1 (a log written before the rules): everything is a job, preemptable by default
    (
        {"scheduler": "default-scheduler", "owner_kind": "DaemonSet"},
        {},
        None,
        True,
        True,
        True,
        True,
    ),
    ({}, {}, None, True, True, True, True),
]
POD_IDS = [
    "unmarked",
    "annotation-true",
    "label-true",
    "annotation-before-label",
    "invalid-is-false",
    "preemptable-by-default",
    "other-scheduler",
    "other-scheduler-marked",
    "second-scheduler-name",
    "daemonset",
    "mirror",
    "level1-daemonset",
    "level1-unmarked",
]


@pytest.mark.parametrize(
    ("pod", "config", "behaviour", "owned", "evictable", "preemptable", "job"),
    POD_CASES,
    ids=POD_IDS,
)
def test_task_flags_follow_the_rules_in_force(
    pod: dict[str, Any],
    config: dict[str, Any],
    behaviour: int | None,
    owned: bool,
    evictable: bool,
    preemptable: bool,
    job: bool,
) -> None:
    state = fold(applied(config, behaviour), watch("pods", build_pod("ns", "p", node="n", **pod)))
    task = state.tasks["ns/p"]
    assert (task.owned, task.evictable, task.preemptable) == (owned, evictable, preemptable)
    assert ("ns/p" in state.jobs) == job
    assert "ns/p" in state.nodes["n"].tasks  # counts on its node either way


@pytest.mark.parametrize(
    ("group_annotations", "pod_annotations", "expected"),
    [
        ({PREEMPTABLE: "true"}, {}, True),
        ({PREEMPTABLE: "true"}, {PREEMPTABLE: "false"}, False),
        ({}, {}, False),
    ],
    ids=["from-podgroup", "pod-wins", "neither"],
)
def test_podgroup_annotation_marks_its_tasks(
    group_annotations: dict[str, str], pod_annotations: dict[str, str], expected: bool
) -> None:
    pod = build_pod("ns", "p", node="n", group="g", annotations=pod_annotations)
    group = build_podgroup("ns", "g", annotations=group_annotations)
    for order in ((pod, group), (group, pod)):
        state = ClusterState()
        state.apply(applied({}))
        for obj in order:
            state.apply(watch("podgroups" if obj is group else "pods", obj))
        assert state.tasks["ns/p"].preemptable is expected


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [(2, ("", "1")), (None, ("1", ""))],
    ids=["level2-max-wins", "level1-min-wins"],
)
def test_budget_precedence_when_both_are_set(
    behaviour: int | None, expected: tuple[str, str]
) -> None:
    both = {"volcano.sh/jdb-min-available": "1", "volcano.sh/jdb-max-unavailable": "1"}
    state = fold(
        applied({}, behaviour), watch("podgroups", build_podgroup("ns", "g", annotations=both))
    )
    job = state.jobs["ns/g"]
    assert (job.budget_min_available, job.budget_max_unavailable) == expected


def test_a_configuration_change_rederives_every_task() -> None:
    pod = watch("pods", build_pod("ns", "p", node="n", scheduler="default-scheduler"))
    state = fold(applied({}), pod)
    assert "ns/p" not in state.jobs
    state.apply(applied({"schedulerName": ["volcano", "default-scheduler"]}))
    assert "ns/p" in state.jobs and state.tasks["ns/p"].owned
    assert state.nodes["n"].used.milli_cpu == 1000.0  # placed once, not twice


def test_rules_survive_a_checkpoint() -> None:
    state = fold(applied({"schedulerName": "tide", "preemptableByDefault": True}))
    fresh = ClusterState()
    load_cluster(fresh, dump_cluster(state))
    assert fresh.rules == state.rules
