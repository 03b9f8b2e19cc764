"""The simulated cluster answers only for the object it acted on: a pod the recording deletes
between its bind and its start does not come back as a ghost (issue 28)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controller.drive.effector import SimulatedCluster
from controller.policy.loader import load_config
from controller.simulate.runner import Simulation
from projections.model import TaskStatus
from replay.verify import replay
from streams.events import Event, make_event
from tests.builders import build_node, build_pod, build_queue, watch

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
CONFIG = {
    "actions": "allocate",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "predicates"}]},
    ],
}


def s(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def pod(name: str, when: float, priority: int = 0) -> dict[str, object]:
    return build_pod("default", name, phase="Pending", cpu="3", created=s(when), priority=priority)


def smallest_case(deleted: float) -> list[Event]:
    """One 4-CPU node; ``a`` (3 CPU) added at 0.5 s, bound at the 1 s tick, deleted at
    ``deleted``; ``b`` and ``c`` (3 CPU each) wait; ``b`` is deleted at 20 s."""
    return [
        watch("queues", build_queue(), s(0)),
        watch("nodes", build_node("n1", cpu="4"), s(0)),
        watch("pods", pod("a", 0.5, 20), s(0.5)),
        watch("pods", pod("b", 0.7, 10), s(0.7)),  # b before c
        watch("pods", pod("c", 0.8), s(0.8)),
        watch("pods", pod("a", 0.5, 20), s(deleted), "DELETED"),
        watch("pods", pod("b", 0.7, 10), s(20), "DELETED"),
    ]


def run(inputs: list[Event], until: float) -> Simulation:
    sim = Simulation(load_config(CONFIG))
    sim.run(inputs, until=s(until))
    return sim


def binds(sim: Simulation) -> dict[str, datetime]:
    return {d.data["pod"]: d.at for d in sim.log.events if d.type == "decision.bind"}


#: instants between a's bind (1 s) and its planned start (6 s), the start included (at 1 s
#: itself the deletion, an input, comes before the tick and a is never bound)
DELETION_TIMES = [1.001, 1.5, 2.0, 3.25, 4.0, 5.0, 5.5, 5.999, 6.0]


@pytest.mark.parametrize("deleted", DELETION_TIMES)
def test_a_pod_deleted_before_it_starts_is_not_a_ghost(deleted: float) -> None:
    sim = run(smallest_case(deleted), until=40)
    bound = binds(sim)
    assert bound["a"] == s(1)
    # b takes the room a left, c the room b left: neither waits for a ghost
    assert s(deleted) <= bound["b"] <= s(deleted) + timedelta(seconds=1)
    assert s(20) <= bound["c"] <= s(21)
    # nothing about a reaches the log after its deletion
    after = [
        e
        for e in sim.log.events
        if e.at >= s(deleted)
        and e.type == "k8s.watch"
        and e.data["object"]["metadata"]["name"] == "a"
        and e.data["event"] != "DELETED"
    ]
    assert after == []
    tasks = sim.world.cluster.tasks
    assert "default/a" not in tasks and "default/b" not in tasks
    assert tasks["default/c"].status == TaskStatus.RUNNING
    assert sim.cluster.planned == 0
    report = replay(sim.log.events)
    assert report.ok, [d.describe() for d in report.differences]


def test_a_pod_that_stays_starts_as_before() -> None:
    sim = run(smallest_case(30), until=40)
    started = [
        e.at
        for e in sim.log.events
        if e.type == "k8s.watch"
        and e.data["object"]["metadata"]["name"] == "a"
        and e.data["object"]["status"].get("phase") == "Running"
    ]
    assert started == [s(6)]
    # b waits for a, and goes (20 s) before a does (30 s); c then takes a's room
    assert binds(sim) == {"a": s(1), "c": s(30)}


# -- the cluster alone: each future event checked again when due ---------------------------


def decision(kind: str, name: str, **extra: object) -> Event:
    data = {
        "kind": kind,
        "namespace": "default",
        "pod": name,
        "uid": f"default-{name}",
        "node": "n1",
        "reason": "test",
        "source": "test",
        "evidence": {},
        **extra,
    }
    return make_event(f"decision.{kind}", s(1), data, cause="trigger-1")


def cluster_with(*objects: tuple[str, dict[str, object]]) -> SimulatedCluster:
    cluster = SimulatedCluster()
    cluster.observe(watch("nodes", build_node("n1"), s(0)))
    for resource, obj in objects:
        cluster.observe(watch(resource, obj, s(0)))
    return cluster


def fold(cluster: SimulatedCluster, events: list[Event]) -> None:
    for event in events:
        cluster.observe(event)


def test_a_start_is_dropped_for_a_gone_pod_or_another_incarnation() -> None:
    cluster = cluster_with(("pods", pod("a", 0)))
    effects = cluster.apply(decision("bind", "a"))
    fold(cluster, effects.now)
    (start,) = effects.later
    cluster.observe(watch("pods", pod("a", 0), s(2), "DELETED"))
    again = pod("a", 3)
    again["metadata"]["uid"] = "another"  # type: ignore[index]
    cluster.observe(watch("pods", again, s(3)))  # same name, new uid
    assert cluster.due(start) is None
    assert cluster.planned == 0


def test_a_start_is_dropped_for_a_pod_terminating_before_it() -> None:
    cluster = cluster_with(("pods", pod("a", 0)))
    bind = cluster.apply(decision("bind", "a"))
    fold(cluster, bind.now)
    evict = cluster.apply(decision("evict", "a"))
    fold(cluster, evict.now)
    (start,) = bind.later
    assert cluster.due(start) is None  # not Running over its deletionTimestamp
    (deleted,) = evict.later
    assert cluster.due(deleted) == deleted


def test_a_start_is_rebuilt_from_the_pod_as_it_is_then() -> None:
    cluster = cluster_with(("pods", pod("a", 0)))
    effects = cluster.apply(decision("bind", "a"))
    fold(cluster, effects.now)
    (start,) = effects.later
    assert cluster.due(start) == start  # nothing changed: as planned
    cluster = cluster_with(("pods", pod("a", 0)))
    bind = cluster.apply(decision("bind", "a"))
    fold(cluster, bind.now)
    labelled = bind.now[1].data["object"]
    labelled["metadata"] = {**labelled["metadata"], "labels": {"seen": "yes"}}
    cluster.observe(watch("pods", labelled, s(2), "MODIFIED"))
    got = cluster.due(bind.later[0])
    assert got is not None and got.at == s(6)
    assert got.data["object"]["metadata"]["labels"] == {"seen": "yes"}
    assert got.data["object"]["status"]["phase"] == "Running"


def test_a_delete_after_grace_is_dropped_with_its_recreation_for_a_gone_pod() -> None:
    owned = build_pod("default", "w", node="n1", owner_kind="ReplicaSet")
    cluster = cluster_with(("pods", owned))
    effects = cluster.apply(decision("evict", "w"))
    fold(cluster, effects.now)
    deleted, recreated = effects.later
    assert (deleted.data["event"], recreated.data["event"]) == ("DELETED", "ADDED")
    cluster.observe(watch("pods", owned, s(5), "DELETED"))  # the recording deletes it first
    assert cluster.due(deleted) is None
    assert cluster.due(recreated) is None
    assert cluster.planned == 0


def test_a_graceful_eviction_of_a_pod_gone_at_its_time_fails_and_ends_there() -> None:
    running = build_pod("default", "w", node="n1", owner_kind="ReplicaSet")
    cluster = cluster_with(("pods", running))
    effects = cluster.apply(decision("evict", "w", evict_at="2026-11-21T08:01:00Z"))
    fold(cluster, effects.now)
    outcome, *rest = effects.later
    assert outcome.type == "effect.applied" and len(rest) == 3
    cluster.observe(watch("pods", running, s(30), "DELETED"))
    failed = cluster.due(outcome)
    assert failed is not None and failed.type == "effect.failed"
    assert failed.at == s(60) and "not found" in failed.data["error"]
    assert [cluster.due(e) for e in rest] == [None, None, None]
    assert cluster.planned == 0
