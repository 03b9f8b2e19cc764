"""The fold's per-queue totals equal a fresh re-sum of every task after every record."""

from __future__ import annotations

import random
from typing import Any

import pytest

from projections.cluster import ClusterState
from projections.model import ALLOCATED_STATUSES, Resource, TaskStatus
from streams.events import Event, make_event
from tests.builders import at, build_node, build_pod, build_podgroup, build_queue, watch

Totals = dict[str, tuple[tuple[Any, ...], tuple[Any, ...], int]]


def _key(resource: Resource) -> tuple[Any, ...]:
    return (resource.milli_cpu, resource.memory, sorted(resource.scalars.items()))


def resummed(state: ClusterState) -> Totals:
    """The reference: every non-placeholder job's tasks summed from scratch, by queue."""
    out: dict[str, tuple[Resource, Resource, int]] = {}
    for job in state.jobs.values():
        if job.placeholder:
            continue
        allocated, request, count = out.get(job.queue, (Resource(), Resource(), 0))
        for task in job.tasks.values():
            if task.status in ALLOCATED_STATUSES:
                allocated.add(task.resreq)
                request.add(task.resreq)
            elif task.status == TaskStatus.PENDING:
                request.add(task.resreq)
        out[job.queue] = (allocated, request, count + 1)
    return {q: (_key(a), _key(r), n) for q, (a, r, n) in sorted(out.items())}


def maintained(state: ClusterState) -> Totals:
    return {
        q: (_key(s.allocated), _key(s.request), s.jobs)
        for q, s in state.queue_totals.totals(state.jobs).items()
    }


def running_recounted(state: ClusterState) -> dict[str, int]:
    """The reference of the running index: every non-placeholder job's Running tasks."""
    return {
        job_id: sum(t.status == TaskStatus.RUNNING for t in job.tasks.values())
        for job_id, job in sorted(state.jobs.items())
        if not job.placeholder
    }


def running_maintained(state: ClusterState) -> dict[str, int]:
    return dict(sorted(state.queue_totals.running(state.jobs).items()))


def finished_recounted(state: ClusterState) -> dict[str, int]:
    """The reference of the finished index: every non-placeholder job's Succeeded and
    Failed tasks."""
    final = {TaskStatus.SUCCEEDED, TaskStatus.FAILED}
    return {
        job_id: sum(t.status in final for t in job.tasks.values())
        for job_id, job in sorted(state.jobs.items())
        if not job.placeholder
    }


def finished_maintained(state: ClusterState) -> dict[str, int]:
    return dict(sorted(state.queue_totals.finished(state.jobs).items()))


def gpu_pod(namespace: str, name: str, **kwargs: Any) -> dict[str, Any]:
    requests = {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}
    container = {"name": "main", "image": "x", "resources": {"requests": requests}}
    return build_pod(namespace, name, containers=[container], **kwargs)


def decision(kind: str, pod: str, node: str = "") -> Event:
    data = {"kind": kind, "namespace": "ns", "pod": pod, "uid": f"ns-{pod}", "node": node}
    return make_event(f"decision.{kind}", at(1), {**data, "reason": "r", "source": "t"})


def failed(of: Event) -> Event:
    data = {"decision": of.id, "kind": of.data["kind"], "target": "x", "error": "no"}
    return make_event("effect.failed", at(2), data, cause=of.id)


BIND = decision("bind", "b", "n1")

SCENARIOS = {
    "pending-then-running-then-done": [
        watch("pods", build_pod("ns", "a", phase="Pending")),
        watch("pods", build_pod("ns", "a", node="n1"), event="MODIFIED"),
        watch("pods", build_pod("ns", "a", node="n1", phase="Succeeded"), event="MODIFIED"),
    ],
    "gpu-scalar-appears-and-leaves": [
        watch("pods", gpu_pod("ns", "g", node="n1")),
        watch("pods", build_pod("ns", "c", node="n1")),
        watch("pods", gpu_pod("ns", "g", node="n1"), event="DELETED"),
    ],
    "podgroup-late-then-queue-moves": [
        watch("queues", build_queue("q1")),
        watch("pods", build_pod("ns", "p0", group="pg", node="n1")),
        watch("pods", build_pod("ns", "p1", group="pg", phase="Pending")),
        watch("podgroups", build_podgroup("ns", "pg", queue="q1")),
        watch("podgroups", build_podgroup("ns", "pg", queue="q2"), event="MODIFIED"),
        watch("podgroups", build_podgroup("ns", "pg", queue="q2"), event="DELETED"),
    ],
    "empty-podgroup-counts-as-a-job": [
        watch("podgroups", build_podgroup("ns", "empty", queue="q3")),
    ],
    "bind-overlay-then-failed": [
        watch("pods", gpu_pod("ns", "b", phase="Pending")),
        BIND,
        failed(BIND),
    ],
    "evict-overlay-then-deleted": [
        watch("pods", build_pod("ns", "e", node="n1")),
        decision("evict", "e", "n1"),
        watch("pods", build_pod("ns", "e", node="n1"), event="DELETED"),
    ],
    "config-change-rederives": [
        watch("pods", build_pod("ns", "o", node="n1", scheduler="other")),
        watch("pods", build_pod("ns", "v", node="n1")),
        make_event("config.applied", at(1), {"config": {"schedulerName": "other"}, "source": "t"}),
    ],
}


@pytest.mark.parametrize("events", list(SCENARIOS.values()), ids=list(SCENARIOS))
def test_totals_match_a_resum_after_every_record(events: list[Event]) -> None:
    state = ClusterState()
    maintained(state)  # built before the first record: later ones are maintained
    for event in events:
        state.apply(event.with_offset(state.position))
        assert maintained(state) == resummed(state)
        assert running_maintained(state) == running_recounted(state)
        assert finished_maintained(state) == finished_recounted(state)


def _random_events(seed: int, count: int) -> list[Event]:
    rng = random.Random(seed)
    events: list[Event] = []
    for step in range(count):
        name = f"p{rng.randrange(12)}"
        group = rng.choice([None, "g1", "g2"])
        roll = rng.random()
        if roll < 0.15:
            pg = build_podgroup("ns", rng.choice(["g1", "g2"]), queue=rng.choice(["q1", "q2"]))
            events.append(watch("podgroups", pg, event=rng.choice(["ADDED", "DELETED"])))
            continue
        phase = rng.choice(["Pending", "Running", "Succeeded", "Failed"])
        node = "" if phase == "Pending" else f"n{rng.randrange(3)}"
        build = gpu_pod if rng.random() < 0.3 else build_pod
        pod = build("ns", name, node=node, phase=phase, group=group, created=at(step))
        events.append(watch("pods", pod, at(step), rng.choice(["ADDED", "MODIFIED", "DELETED"])))
    return events


@pytest.mark.parametrize("seed", [1, 2, 3, 4], ids=["seed1", "seed2", "seed3", "seed4"])
def test_random_churn_matches_a_resum(seed: int) -> None:
    state = ClusterState()
    counted = done = 0
    for position, event in enumerate(_random_events(seed, 300)):
        state.apply(event.with_offset(state.position))
        if position % 7 == 0:  # queries at irregular points: touches accumulate between
            assert maintained(state) == resummed(state)
        if position % 5 == 0:  # the running index alone, at other points
            expected = running_recounted(state)
            assert running_maintained(state) == expected
            counted = max(counted, *expected.values(), 0)
        if position % 3 == 0:  # the finished index alone, at others again
            finished = finished_recounted(state)
            assert finished_maintained(state) == finished
            done = max(done, *finished.values(), 0)
    assert maintained(state) == resummed(state)
    assert running_maintained(state) == running_recounted(state)
    assert finished_maintained(state) == finished_recounted(state)
    assert counted > 1  # the churn does reach jobs with several Running tasks
    assert done > 1  # and with several finished ones


def test_checkpoint_load_rebuilds_the_index() -> None:
    state = ClusterState()
    for event in _random_events(5, 120):
        state.apply(event.with_offset(state.position))
    expected = maintained(state)
    loaded = ClusterState()
    loaded.load(state.dump())
    assert maintained(loaded) == expected == resummed(loaded)
    assert running_maintained(loaded) == running_recounted(loaded) == running_maintained(state)


def zone_resummed(state: ClusterState) -> dict[str, dict[str, list[str]]]:
    """The reference for the zone index: every Ready revocable node's tasks walked."""
    out: dict[str, dict[str, list[str]]] = {}
    for node in state.nodes.values():
        if not node.ready or node.placeholder or not node.revocable_zone:
            continue
        for key, task in node.tasks.items():
            if task.preemptable and task.status == TaskStatus.RUNNING:
                out.setdefault(node.revocable_zone, {}).setdefault(task.job, []).append(key)
    return {z: {j: sorted(k) for j, k in sorted(g.items())} for z, g in sorted(out.items())}


def zone_maintained(state: ClusterState) -> dict[str, dict[str, list[str]]]:
    out = {}
    for zone in ("rz1", "rz2"):
        groups = state.zone_tasks.zone(zone, state.nodes)
        if groups:
            out[zone] = {j: sorted(tasks) for j, tasks in sorted(groups.items())}
    return out


def _zone_events(seed: int, count: int) -> list[Event]:
    rng = random.Random(seed)
    events: list[Event] = []
    for step in range(count):
        roll = rng.random()
        if roll < 0.15:
            name = f"n{rng.randrange(4)}"
            labels = {"volcano.sh/revocable-zone": rng.choice(["rz1", "rz2"])}
            node = build_node(
                name, labels=labels if rng.random() < 0.8 else {}, ready=rng.random() < 0.8
            )
            events.append(watch("nodes", node, at(step), rng.choice(["ADDED", "DELETED"])))
            continue
        if roll < 0.25:
            annotations = {"volcano.sh/preemptable": rng.choice(["true", "false"])}
            pg = build_podgroup("ns", "g1", annotations=annotations)
            events.append(watch("podgroups", pg, at(step), "MODIFIED"))
            continue
        phase = rng.choice(["Pending", "Running", "Running", "Succeeded"])
        node_name = "" if phase == "Pending" else f"n{rng.randrange(4)}"
        annotations = {"volcano.sh/preemptable": rng.choice(["true", "false"])}
        pod = build_pod(
            "ns",
            f"p{rng.randrange(12)}",
            node=node_name,
            phase=phase,
            group=rng.choice([None, "g1"]),
            annotations=annotations,
        )
        events.append(watch("pods", pod, at(step), rng.choice(["ADDED", "MODIFIED", "DELETED"])))
    return events


@pytest.mark.parametrize("behaviour", [1, 2], ids=["legacy", "behaviour2"])
@pytest.mark.parametrize("seed", [1, 2, 3], ids=["seed1", "seed2", "seed3"])
def test_zone_index_matches_a_walk_of_the_nodes(seed: int, behaviour: int) -> None:
    state = ClusterState()
    config = {"config": {"schedulerName": "volcano"}, "source": "t", "behaviour": behaviour}
    state.apply(make_event("config.applied", at(0), config).with_offset(0))
    reached = 0
    for position, event in enumerate(_zone_events(seed, 300)):
        state.apply(event.with_offset(state.position))
        if position % 5 == 0:
            expected = zone_resummed(state)
            assert zone_maintained(state) == expected
            reached += bool(expected)
    assert reached  # the scenario does reach candidates
    loaded = ClusterState()
    loaded.load(state.dump())
    assert zone_maintained(loaded) == zone_maintained(state) == zone_resummed(state)


@pytest.mark.parametrize("marks", [["true", "false", "true"], ["false", "true", "false"]])
def test_zone_index_follows_a_podgroup_mark_re_derived_in_place(marks: list[str]) -> None:
    """Pods without a mark of their own take the PodGroup's; flipping it re-derives the
    same task objects in place, which the index must not take for unchanged."""
    state = ClusterState()
    config = {"config": {"schedulerName": "volcano"}, "source": "t", "behaviour": 2}
    events = [
        make_event("config.applied", at(0), config),
        watch("nodes", build_node("n0", labels={"volcano.sh/revocable-zone": "rz1"})),
        watch("podgroups", build_podgroup("ns", "g1", annotations={})),
    ]
    events += [watch("pods", build_pod("ns", f"p{i}", node="n0", group="g1")) for i in range(3)]
    for event in events:
        state.apply(event.with_offset(state.position))
    seen = []
    for step, mark in enumerate(marks, 1):
        zone_maintained(state)  # the index is built and queried before each change
        pg = build_podgroup("ns", "g1", annotations={"volcano.sh/preemptable": mark})
        state.apply(watch("podgroups", pg, at(step), "MODIFIED").with_offset(state.position))
        expected = zone_resummed(state)
        assert zone_maintained(state) == expected
        seen.append(bool(expected))
    assert seen == [mark == "true" for mark in marks]  # the flips do move the tasks
