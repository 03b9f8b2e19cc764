"""The fold's per-node preemption readings (projections/preemptindex.py) equal a fresh
reading of every node after every record: node changes, pods placed, moved, re-marked
and finished, PodGroup marks re-derived in place, decision overlays, configuration
changes and checkpoint loads."""

from __future__ import annotations

import random
from typing import Any

import pytest

from projections.cluster import ClusterState
from projections.preemptindex import NodeVictims, PreemptIndex, read_node
from streams.events import Event, make_event
from tests.builders import at, build_pod, build_podgroup, watch
from tests.projections.test_queuetotals import _zone_events, decision, failed, gpu_pod


def _view(reading: NodeVictims) -> tuple[Any, ...]:
    room = reading.room
    return (
        [id(task) for task in reading.tasks],
        [task.key for task in reading.tasks],
        reading.jobs,
        (room.milli_cpu, room.memory, sorted(room.scalars.items())),
    )


def check(state: ClusterState) -> int:
    """Every node's kept reading equals a fresh one; how many tasks they hold."""
    held = 0
    for name in sorted(state.nodes):
        node = state.nodes[name]
        kept = state.preempt_index.node(node)
        assert _view(kept) == _view(read_node(node)), name
        held += len(kept.tasks)
    return held


def _events(seed: int, count: int) -> list[Event]:
    """The zone index's churn, with GPU pods, decision overlays and their failures."""
    rng = random.Random(seed)
    events: list[Event] = []
    for step, event in enumerate(_zone_events(seed, count)):
        events.append(event)
        roll = rng.random()
        if roll < 0.1:
            made = decision("evict", f"p{rng.randrange(12)}", f"n{rng.randrange(4)}")
            events.append(made)
            if rng.random() < 0.5:
                events.append(failed(made))
        elif roll < 0.2:
            made = decision("bind", f"p{rng.randrange(12)}", f"n{rng.randrange(4)}")
            events.append(made)
        elif roll < 0.3:
            pod = gpu_pod("ns", f"p{rng.randrange(12)}", node=f"n{rng.randrange(4)}")
            events.append(watch("pods", pod, at(step), "MODIFIED"))
    return events


@pytest.mark.parametrize("behaviour", [1, 2], ids=["legacy", "behaviour2"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4], ids=["seed1", "seed2", "seed3", "seed4"])
def test_readings_match_a_fresh_reading_after_every_record(seed: int, behaviour: int) -> None:
    state = ClusterState()
    config = {"config": {"schedulerName": "volcano"}, "source": "t", "behaviour": behaviour}
    state.apply(make_event("config.applied", at(0), config).with_offset(0))
    held = 0
    for event in _events(seed, 300):
        state.apply(event.with_offset(state.position))
        held += check(state)  # read before every record: each change must drop a reading
    assert held  # the churn does reach candidates
    loaded = ClusterState()
    loaded.load(state.dump())
    check(loaded)
    other = {"config": {"schedulerName": "other"}, "source": "t", "behaviour": behaviour}
    state.apply(make_event("config.applied", at(9), other).with_offset(state.position))
    check(state)


def test_a_podgroup_mark_re_derived_in_place_drops_the_reading() -> None:
    """Pods without a mark of their own take the PodGroup's; flipping it re-derives the
    same task objects in place: the reading must not be taken for unchanged."""
    state = ClusterState()
    config = {"config": {"schedulerName": "volcano"}, "source": "t", "behaviour": 2}
    events = [
        make_event("config.applied", at(0), config),
        watch("podgroups", build_podgroup("ns", "g1", annotations={})),
    ]
    events += [watch("pods", build_pod("ns", f"p{i}", node="n0", group="g1")) for i in range(3)]
    for event in events:
        state.apply(event.with_offset(state.position))
    seen = []
    for step, mark in enumerate(["false", "true", "false"], 1):
        check(state)
        pg = build_podgroup("ns", "g1", annotations={"volcano.sh/preemptable": mark})
        state.apply(watch("podgroups", pg, at(step), "MODIFIED").with_offset(state.position))
        seen.append(check(state))
    assert seen == [0, 3, 0]


def test_a_reading_is_kept_while_the_node_is_unchanged() -> None:
    """The point of the index: a second query of an unchanged node reads nothing."""
    state = ClusterState()
    for i in range(3):
        state.apply(watch("pods", build_pod("ns", f"p{i}", node="n0")).with_offset(i))
    first = state.preempt_index.node(state.nodes["n0"])
    state.apply(watch("pods", build_pod("ns", "q", node="n1")).with_offset(3))
    assert state.preempt_index.node(state.nodes["n0"]) is first
    state.apply(watch("pods", build_pod("ns", "p0", node="n0"), event="DELETED").with_offset(4))
    assert state.preempt_index.node(state.nodes["n0"]) is not first


def test_a_reading_serves_only_its_own_node_object() -> None:
    index = PreemptIndex()
    state = ClusterState()
    state.apply(watch("pods", build_pod("ns", "p", node="n0")).with_offset(0))
    node = state.nodes["n0"]
    first = index.node(node)
    copy = read_node(node).node  # the same object: a reading names the node it read
    assert copy is node and index.node(node) is first
    from controller.policy.framework.view import copy_node

    assert index.node(copy_node(node)) is not first


@pytest.mark.parametrize("seed", [1, 2, 3], ids=["seed1", "seed2", "seed3"])
def test_the_room_answers_as_validate_victims(seed: int) -> None:
    """A request fits a reading's room exactly when ``validate_victims`` over all of the
    node's candidates says so: asked at the room itself and just beyond it, on nodes with
    Releasing (evicted) and Binding tasks."""
    from controller.policy.actions.preempt.victims import validate_victims
    from projections.model import Resource
    from tests.controller.policy.framework.scenario import task

    state = ClusterState()
    asked = releasing = 0
    for position, event in enumerate(_events(seed, 200)):
        state.apply(event.with_offset(state.position))
        if position % 4:
            continue
        for node in state.nodes.values():
            reading = state.preempt_index.node(node)
            releasing += node.releasing.milli_cpu > 0
            room = node.future_idle()
            for cpu, memory in ((room.milli_cpu, room.memory), (0.0, 0.0)):
                for extra in (0.0, 0.5):
                    for part in (0, 1):
                        want = Resource(cpu, memory)
                        want.milli_cpu += sum(t.resreq.milli_cpu for t in reading.tasks) * part
                        want.memory += sum(t.resreq.memory for t in reading.tasks) * part
                        want.milli_cpu += extra
                        preemptor = task("x", cpu=want.milli_cpu, memory=want.memory)
                        assert preemptor.init_resreq.less_equal(reading.room) == validate_victims(
                            preemptor, node, reading.tasks
                        )
                        asked += 1
    assert asked and releasing


def _job_facts(job: Any) -> tuple[Any, ...]:
    """Every field of a job and its tasks a job memo may derive from."""
    tasks = tuple(
        (key, task.status, task.best_effort, task.priority)
        for key, task in sorted(job.tasks.items())
    )
    return (job.priority, job.min_available, job.queue, job.creation, job.uid, job.phase, tasks)


def check_jobs(state: ClusterState) -> int:
    """Every job memo holds what was derived from the job as it is now; how many held."""
    held = 0
    for job_id in sorted(state.jobs):
        job = state.jobs[job_id]
        memo = state.preempt_index.job_memo(job)
        if "facts" in memo:
            assert memo["facts"] == _job_facts(job), job_id
            held += 1
        memo["facts"] = _job_facts(job)
    return held


@pytest.mark.parametrize("seed", [1, 2, 3, 4], ids=["seed1", "seed2", "seed3", "seed4"])
def test_job_memos_are_dropped_when_the_job_changes(seed: int) -> None:
    from tests.projections.test_queuetotals import _random_events

    state = ClusterState()
    held = 0
    for event in _events(seed, 150) + _random_events(seed, 150):
        state.apply(event.with_offset(state.position))
        held += check_jobs(state)
    assert held  # memos do survive unrelated records


def test_a_priority_class_learned_late_drops_the_job_memo() -> None:
    """A PodGroup naming a PriorityClass the log has not valued yet gets priority 0; a pod
    of that class teaches the value and the job's priority changes in place."""
    state = ClusterState()
    pg = build_podgroup("ns", "g1", priority_class="urgent")
    state.apply(watch("podgroups", pg).with_offset(0))
    check_jobs(state)
    before = state.jobs["ns/g1"].priority
    pod = build_pod("ns", "t", group="other", phase="Pending")
    pod["spec"]["priorityClassName"] = "urgent"
    pod["spec"]["priority"] = 1000
    state.apply(watch("pods", pod).with_offset(1))
    assert state.jobs["ns/g1"].priority != before
    check_jobs(state)
