"""The simulated cluster's answers folded back into the World: the task lifecycle a
decision should produce (evicted → releasing → gone → recreated pending; bound → running)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from controller.drive.effector import SimulatedCluster
from projections.model import TaskStatus
from projections.world import World
from streams.events import Event, make_event
from tests.builders import build_node, build_pod, build_podgroup, build_queue, watch

AT = datetime(2026, 11, 21, 21, 0, 1, tzinfo=UTC)


def decide(kind: str, pod: str, node: str, reason: str) -> Event:
    data = {
        "kind": kind,
        "namespace": "default",
        "pod": pod,
        "uid": f"default-{pod}",
        "node": node,
        "reason": reason,
        "source": "test",
        "evidence": {},
    }
    return make_event(f"decision.{kind}", AT, data)


SIM: dict[int, SimulatedCluster] = {}


def run(world: World, decision: Event) -> list[Event]:
    """Fold the decision, let the world's simulated cluster answer it, fold the answers."""
    sim = SIM[id(world)]
    world.apply(decision)
    effects = sim.apply(decision)
    for event in effects.now + effects.later:  # later events are already in time order
        world.apply(event)
        sim.observe(event)
    return effects.now + effects.later


def base_world() -> World:
    world = World()
    sim = SIM[id(world)] = SimulatedCluster()
    for event in [
        watch("queues", build_queue()),
        watch("nodes", build_node("n1")),
        watch("nodes", build_node("n2")),
        watch("podgroups", build_podgroup("default", "web", min_member=1)),
        watch(
            "pods", build_pod("default", "web-0", node="n1", group="web", owner_kind="ReplicaSet")
        ),
        watch("pods", build_pod("default", "new-0", phase="Pending", group="web")),
    ]:
        world.apply(event)
        sim.observe(event)
    return world


def test_eviction_round_trip() -> None:
    world = base_world()
    run(world, decide("evict", "web-0", "n1", "tdm-window-closed"))
    tasks = world.cluster.tasks
    assert "default/web-0" not in tasks
    recreated = [t for k, t in sorted(tasks.items()) if k.startswith("default/web-0-")]
    assert len(recreated) == 1
    assert recreated[0].status == TaskStatus.PENDING
    assert recreated[0].node_name == ""
    assert recreated[0].job == "default/web"  # the group annotation is kept
    assert "default/web-0" not in world.cluster.nodes["n1"].tasks


def test_bind_round_trip() -> None:
    world = base_world()
    run(world, decide("bind", "new-0", "n2", "allocate"))
    task = world.cluster.tasks["default/new-0"]
    assert task.status == TaskStatus.RUNNING
    assert task.node_name == "n2"
    assert task.start_time == AT + timedelta(seconds=5)


def test_failed_effect_reverts_the_overlay() -> None:
    world = base_world()
    events = run(world, decide("bind", "new-0", "n9", "allocate"))
    assert [e.type for e in events] == ["effect.failed"]
    assert world.cluster.tasks["default/new-0"].status == TaskStatus.PENDING


def test_taint_round_trip() -> None:
    world = base_world()
    data = {
        "kind": "taint",
        "node": "n1",
        "taint": {"key": "k", "value": "v", "effect": "NoSchedule"},
        "reason": "eviction-taint",
        "source": "pressure",
        "evidence": {},
    }
    decision = make_event("decision.taint", AT, data)
    run(world, decision)
    assert world.cluster.nodes["n1"].taints == [{"effect": "NoSchedule", "key": "k", "value": "v"}]
