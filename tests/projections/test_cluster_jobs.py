"""PodGroups → JobInfo, budgets and their aliases, implicit jobs, placeholders, queues."""

from __future__ import annotations

from typing import Any

import pytest

from projections.cluster import ClusterState
from streams.events import Event
from tests.builders import T0, at, build_pod, build_podgroup, build_queue, watch


def fold(events: list[Event], state: ClusterState | None = None) -> ClusterState:
    state = state if state is not None else ClusterState()
    for event in events:
        state.apply(event.with_offset(state.position))
    return state


@pytest.mark.parametrize(
    ("annotations", "budget"),
    [
        pytest.param({}, ("", ""), id="none"),
        pytest.param({"volcano.sh/jdb-min-available": "2"}, ("2", ""), id="min"),
        pytest.param({"volcano.sh/jdb-max-unavailable": "30%"}, ("", "30%"), id="max"),
        pytest.param(
            {"volcano.sh/jdb-min-available": "2", "volcano.sh/jdb-max-unavailable": "1"},
            ("2", ""),
            id="min-wins",
        ),
        pytest.param(
            {"volcano.sh/job-disruption-budget-min-available": "50%"}, ("50%", ""), id="alias-min"
        ),
        pytest.param(
            {"volcano.sh/job-disruption-budget-max-unavailable": "1"}, ("", "1"), id="alias-max"
        ),
        pytest.param(
            {
                "volcano.sh/jdb-min-available": "3",
                "volcano.sh/job-disruption-budget-min-available": "1",
            },
            ("3", ""),
            id="real-key-beats-alias",
        ),
        pytest.param(
            {
                "volcano.sh/jdb-max-unavailable": "1",
                "volcano.sh/job-disruption-budget-min-available": "2",
            },
            ("2", ""),
            id="alias-min-beats-real-max",
        ),
    ],
)
def test_budget_from_podgroup_annotations(
    annotations: dict[str, str], budget: tuple[str, str]
) -> None:
    state = fold([watch("podgroups", build_podgroup("ns", "pg", annotations=annotations))])
    job = state.jobs["ns/pg"]
    assert (job.budget_min_available, job.budget_max_unavailable) == budget


@pytest.mark.parametrize(
    ("annotations", "labels", "preemptable", "zone"),
    [
        pytest.param({}, {}, False, "", id="default-false"),
        pytest.param({"volcano.sh/preemptable": "true"}, {}, True, "*", id="annotation"),
        pytest.param({}, {"volcano.sh/preemptable": "true"}, True, "", id="label"),
        pytest.param(
            {"volcano.sh/preemptable": "false"},
            {"volcano.sh/preemptable": "true"},
            False,
            "",
            id="annotation-first",
        ),
        pytest.param({"volcano.sh/preemptable": "maybe"}, {}, False, "", id="invalid"),
        pytest.param({"volcano.sh/revocable-zone": "*"}, {}, False, "*", id="zone-star"),
    ],
)
def test_job_preemptable_and_zone(
    annotations: dict[str, str], labels: dict[str, str], preemptable: bool, zone: str
) -> None:
    pg = build_podgroup("ns", "pg", annotations=annotations)
    pg["metadata"]["labels"] = labels
    job = fold([watch("podgroups", pg)]).jobs["ns/pg"]
    assert (job.preemptable, job.revocable_zone) == (preemptable, zone)


def test_podgroup_fields() -> None:
    pg = build_podgroup("ns", "pg", min_member=3, queue="", phase="Inqueue", created=at(5))
    pg["spec"]["minTaskMember"] = {"worker": 2, "ps": 1}
    job = fold([watch("podgroups", pg)]).jobs["ns/pg"]
    assert job.id == "ns/pg" and job.uid == "pg-ns-pg"
    assert job.min_available == 3
    assert job.task_min_available == {"ps": 1, "worker": 2}
    assert job.queue == "default"  # empty queue: Volcano's admission default
    assert (job.phase, job.creation) == ("Inqueue", at(5))
    assert not job.implicit and not job.placeholder


def test_missing_min_member_is_zero_as_in_go() -> None:
    pg = build_podgroup("ns", "pg")
    del pg["spec"]["minMember"]
    assert fold([watch("podgroups", pg)]).jobs["ns/pg"].min_available == 0


@pytest.mark.parametrize(
    ("class_name", "pods", "priority"),
    [
        pytest.param(None, [], 0, id="no-class"),
        pytest.param("unknown", [], 0, id="unknown-class"),
        pytest.param("system-node-critical", [], 2000001000, id="builtin"),
        pytest.param("high", [("high", 1000)], 1000, id="learned-from-a-pod"),
        pytest.param("high", [("low", 10)], 0, id="other-class-learned"),
    ],
)
def test_job_priority_from_priority_class(
    class_name: str | None, pods: list[tuple[str, int]], priority: int
) -> None:
    events = []
    for i, (name, value) in enumerate(pods):
        pod = build_pod("other", f"p{i}", priority=value)
        pod["spec"]["priorityClassName"] = name
        events.append(watch("pods", pod))
    events.append(watch("podgroups", build_podgroup("ns", "pg", priority_class=class_name)))
    assert fold(events).jobs["ns/pg"].priority == priority


def test_priority_learned_after_the_podgroup_updates_the_job() -> None:
    state = fold([watch("podgroups", build_podgroup("ns", "pg", priority_class="high"))])
    assert state.jobs["ns/pg"].priority == 0
    pod = build_pod("ns", "p", priority=500, group="pg")
    pod["spec"]["priorityClassName"] = "high"
    fold([watch("pods", pod)], state)
    assert state.jobs["ns/pg"].priority == 500
    assert state.class_priority("high") == 500


def implicit(annotations: dict[str, str] | None = None, **kwargs: Any) -> ClusterState:
    return fold([watch("pods", build_pod("ns", "solo", annotations=annotations, **kwargs))])


def test_pod_without_podgroup_is_a_job_of_one() -> None:
    state = implicit(priority=42, phase="Pending", created=at(3))
    job = state.jobs["ns/solo"]
    assert job.implicit and not job.placeholder
    assert (job.min_available, job.queue, job.priority, job.phase) == (1, "default", 42, "Inqueue")
    assert job.creation == at(3) and job.uid == "ns-solo"
    assert list(job.tasks) == ["ns/solo"]
    assert not job.preemptable  # job-level default is false


@pytest.mark.parametrize(
    ("annotations", "labels", "expected"),
    [
        pytest.param(
            {"volcano.sh/preemptable": "true"},
            {},
            {"preemptable": True, "revocable_zone": "*"},
            id="preemptable-annotation",
        ),
        pytest.param(
            {},
            {"volcano.sh/preemptable": "true"},
            {"preemptable": True, "revocable_zone": ""},
            id="preemptable-label",
        ),
        pytest.param({"volcano.sh/revocable-zone": "*"}, {}, {"revocable_zone": "*"}, id="zone"),
        pytest.param(
            {"volcano.sh/jdb-max-unavailable": "1"},
            {},
            {"budget_max_unavailable": "1"},
            id="budget-max",
        ),
        pytest.param(
            {"volcano.sh/job-disruption-budget-min-available": "1"},
            {},
            {"budget_min_available": "1"},
            id="budget-alias",
        ),
        pytest.param(
            {"scheduling.volcano.sh/queue-name": "batch"}, {}, {"queue": "batch"}, id="queue"
        ),
    ],
)
def test_implicit_job_inherits_pod_annotations(
    annotations: dict[str, str], labels: dict[str, str], expected: dict[str, Any]
) -> None:
    job = implicit(annotations, labels=labels).jobs["ns/solo"]
    for name, value in expected.items():
        assert getattr(job, name) == value, name


def test_implicit_job_follows_its_pod_and_goes_with_it() -> None:
    pending = build_pod("ns", "solo", phase="Pending")
    state = fold([watch("pods", pending)])
    job = state.jobs["ns/solo"]
    assert job.phase == "Inqueue"
    running = build_pod("ns", "solo", node="n1", annotations={"volcano.sh/preemptable": "1"})
    fold([watch("pods", running, event="MODIFIED")], state)
    assert state.jobs["ns/solo"] is job  # updated in place
    assert (job.phase, job.preemptable) == ("Running", True)
    fold([watch("pods", running, event="DELETED")], state)
    assert "ns/solo" not in state.jobs


def test_task_before_its_podgroup_gets_a_placeholder_job() -> None:
    state = fold([watch("pods", build_pod("ns", "w0", group="pg", phase="Pending"))])
    job = state.jobs["ns/pg"]
    assert job.placeholder and not job.implicit
    assert (job.min_available, job.queue, list(job.tasks)) == (0, "default", ["ns/w0"])
    fold([watch("podgroups", build_podgroup("ns", "pg", min_member=2, queue="q"))], state)
    assert state.jobs["ns/pg"] is job
    assert not job.placeholder and (job.min_available, job.queue) == (2, "q")
    assert list(job.tasks) == ["ns/w0"]


def test_podgroup_deleted_with_tasks_left_becomes_a_placeholder_again() -> None:
    pg = build_podgroup("ns", "pg", min_member=2)
    state = fold([watch("podgroups", pg), watch("pods", build_pod("ns", "w0", group="pg"))])
    fold([watch("podgroups", pg, event="DELETED")], state)
    job = state.jobs["ns/pg"]
    assert job.placeholder and job.min_available == 0 and "ns/w0" in job.tasks
    fold([watch("pods", build_pod("ns", "w0", group="pg"), event="DELETED")], state)
    assert "ns/pg" not in state.jobs


def test_podgroup_job_stays_without_tasks_and_goes_with_its_podgroup() -> None:
    pg = build_podgroup("ns", "pg")
    pod = build_pod("ns", "w0", group="pg")
    state = fold([watch("podgroups", pg), watch("pods", pod), watch("pods", pod, event="DELETED")])
    assert state.jobs["ns/pg"].tasks == {}
    fold([watch("podgroups", pg, event="DELETED")], state)
    assert state.jobs == {}


def test_pod_moving_to_another_group() -> None:
    state = fold([watch("pods", build_pod("ns", "w0", group="a"))])
    fold([watch("pods", build_pod("ns", "w0", group="b"), event="MODIFIED")], state)
    assert sorted(state.jobs) == ["ns/b"]
    assert state.tasks["ns/w0"].job == "ns/b"


def test_queues() -> None:
    q = build_queue("q", weight=3, capability={"cpu": "10", "memory": "10Gi"})
    q["spec"]["guarantee"] = {"resource": {"cpu": "2"}}
    q["spec"]["priority"] = 5
    state = fold([watch("queues", build_queue()), watch("queues", q)])
    queue = state.queues["q"]
    assert (queue.weight, queue.priority, queue.state, queue.uid) == (3, 5, "Open", "queue-q")
    assert queue.capability is not None and queue.capability.milli_cpu == 10_000
    assert queue.guarantee is not None and queue.guarantee.milli_cpu == 2000
    assert state.queues["default"].capability is None and queue.creation == T0
    q["status"]["state"] = "Closed"
    fold([watch("queues", q, event="MODIFIED")], state)
    assert state.queues["q"].state == "Closed"
    fold([watch("queues", q, event="DELETED")], state)
    assert sorted(state.queues) == ["default"]


def _config(scheduler: str, behaviour: int) -> Event:
    from streams.events import make_event

    data = {"config": {"schedulerName": scheduler}, "source": "t", "behaviour": behaviour}
    return make_event("config.applied", at(0), data)


@pytest.mark.parametrize(
    ("behaviour", "first", "then", "has_job"),
    [
        pytest.param(1, "volcano", "other", True, id="level-1-every-pod-forms-a-job"),
        pytest.param(2, "volcano", "other", False, id="scheduler-changed-away"),
        pytest.param(2, "other", None, False, id="pod-of-another-scheduler"),
        pytest.param(2, "volcano", None, True, id="pod-of-this-scheduler"),
        pytest.param(3, "volcano", "other", False, id="level-3-changed-away"),
    ],
)
def test_a_checkpoint_keeps_tasks_without_a_job(
    behaviour: int, first: str, then: str | None, has_job: bool
) -> None:
    """A pod no job owns (another scheduler's, from behaviour 2) survives a checkpoint."""
    events = [_config(first, behaviour), watch("pods", build_pod("ns", "p0", node="n0"))]
    if then is not None:
        events.append(_config(then, behaviour))
    state = fold(events)
    assert ("ns/p0" in state.jobs) is has_job
    again = ClusterState()
    again.load(state.dump())
    assert again.dump() == state.dump()
    assert again.nodes["n0"].tasks.keys() == {"ns/p0"}
    assert ("ns/p0" in again.jobs) is has_job
