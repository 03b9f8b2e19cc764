"""Graceful eviction: batches, batch interval, verification, follow-up firings."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from controller.policy.pressure import due_followups, on_trigger
from controller.policy.pressure.config import EvictionConfig
from streams.events import Event, make_event
from tests.builders import T0, build_pod, watch
from tests.controller.policy.pressure.harness import (
    Loop,
    config,
    node_event,
    node_sample,
    pod_event,
    pod_sample,
    seconds,
)

BIG_ROUNDS: dict[str, Any] = {
    "predictiveEvict": {"enabled": False},
    "cpuEvict": {"maxEvictionPerBatch": 5},
    "adaptiveCooldown": False,
}


def cfg(**overrides: Any) -> EvictionConfig:
    merged = {**BIG_ROUNDS, **overrides}
    if "cpuEvict" in overrides:
        merged["cpuEvict"] = {**BIG_ROUNDS["cpuEvict"], **overrides["cpuEvict"]}
    return config(**merged)


def cluster(pods: int = 10, node: str = "n1") -> list[Event]:
    events = [node_event(node, cpu=100)]
    for i in range(pods):
        name = f"{node}-p{i}"
        events.append(pod_event(name, node=node, started=T0 - timedelta(minutes=i)))
        events.append(pod_sample(name, T0, cpu_cores=1))
    return events


def checks(values: list[tuple[float, float]], node: str = "n1") -> list[Event]:
    return [node_sample(node, seconds(t), cpu_cores=v) for t, v in values]


def batches(loop: Loop) -> list[tuple[int, int]]:
    """(second, evictions) per distinct decision time."""
    out: dict[int, int] = {}
    for d in loop.evictions():
        t = int((d.at - T0).total_seconds())
        out[t] = out.get(t, 0) + 1
    return sorted(out.items())


def test_round_goes_out_in_batches_of_batch_size() -> None:
    loop = Loop(cfg())
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99), (12, 99)]))
    assert batches(loop) == [(3, 3), (13, 2)]
    later = [d for d in loop.evictions() if d.at == seconds(13)]
    trigger = next(e for e in loop.log if e.type == "trigger.fired")
    assert trigger.at == seconds(13)
    assert trigger.data["kind"] == "eviction-batch" and trigger.data["nodes"] == ["n1"]
    assert {d.cause for d in later} == {trigger.id}
    assert {d.data["evidence"]["round"]["batch"] for d in later} == {1}
    first = loop.evictions()[0].data["evidence"]["round"]
    assert first["batches"] == 2 and len(first["plan"]) == 5


def test_batch_interval_is_configurable() -> None:
    loop = Loop(cfg(gracefulEviction={"batchInterval": "30s", "batchSize": 2}))
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99), (20, 99), (40, 99), (60, 99)]))
    assert batches(loop) == [(3, 2), (33, 2), (63, 1)]


def test_verification_drops_the_rest_once_pressure_is_back() -> None:
    loop = Loop(cfg())
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99), (12, 80)]))
    assert batches(loop) == [(3, 3)]
    fired = [e for e in loop.log if e.type == "trigger.fired"]
    assert [e.data["kind"] for e in fired] == ["untaint"]  # the batch decided nothing
    assert due_followups(loop.world, loop.cfg) == []  # the round lapsed


def test_verification_counts_terminating_victims_as_freed() -> None:
    # need = 88 - 85 = 3 cores; batch 0 frees 3 x 1 core while terminating → batch 1 dropped
    c = cfg(cpuEvict={"maxEvictionPerBatch": 5})
    loop = Loop(c)
    events = cluster() + checks([(1, 95), (2, 95), (3, 95), (12, 88)])
    loop.run(events)
    assert batches(loop) == [(3, 3)]


def test_without_verification_the_plan_is_executed() -> None:
    loop = Loop(cfg(gracefulEviction={"verifyAfterEviction": False}))
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99), (12, 50)]))
    assert batches(loop) == [(3, 3), (13, 2)]


def test_graceful_off_sends_the_whole_round_at_once() -> None:
    loop = Loop(cfg(gracefulEviction={"enabled": False}))
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99)]))
    assert batches(loop) == [(3, 5)]
    assert due_followups(loop.world, loop.cfg) == []


def test_planned_victim_gone_before_its_batch_is_replaced_by_the_next_planned() -> None:
    loop = Loop(cfg())
    events = cluster() + checks([(1, 99), (2, 99), (3, 99), (12, 99)])
    # n1-p0 is newest: batch 0 = p0, p1, p2; plan continues with p3, p4. p3 is deleted.
    gone = build_pod("default", "n1-p3", node="n1", labels={"koordinator.sh/qosClass": "BE"})
    events.append(watch("pods", gone, seconds(8), event="DELETED"))
    loop.run(events)
    assert [d.data["pod"] for d in loop.evictions() if d.at == seconds(13)] == ["n1-p4"]


def test_two_nodes_due_at_once_are_handled_by_one_firing() -> None:
    loop = Loop(cfg())
    events = cluster(node="n1") + cluster(node="n2")
    events += checks([(1, 99), (2, 99), (3, 99)], "n1") + checks([(1, 99), (2, 99), (3, 99)], "n2")
    loop.run(events, until=seconds(5))
    due = due_followups(loop.world, loop.cfg)
    assert due[0] == (seconds(13), "eviction-batch", {"nodes": ["n1", "n2"]})
    trigger = make_event(
        "trigger.fired",
        seconds(13),
        {"trigger": "eviction-batch", "kind": "eviction-batch", "nodes": ["n1"]},
    )
    decisions = on_trigger(loop.world, trigger, loop.cfg)
    assert sorted({d.data["node"] for d in decisions if d.type == "decision.evict"}) == ["n1", "n2"]


def test_planned_victims_are_not_taken_by_another_round() -> None:
    c = cfg(memoryEvict={"maxEvictionPerBatch": 5})
    events = [node_event("n1", cpu=100, memory_gi=100)]
    for i in range(6):
        events.append(pod_event(f"p{i}", started=T0 - timedelta(minutes=i)))
        events.append(pod_sample(f"p{i}", T0, cpu_cores=1, memory_gi=1))
    events += [node_sample("n1", seconds(t), cpu_cores=99, memory_gi=50) for t in (1, 2, 3)]
    events += [node_sample("n1", seconds(t), cpu_cores=99, memory_gi=95) for t in (4, 5, 6)]
    loop = Loop(c)
    loop.run(events, until=seconds(7))
    # CPU round at 3 s: p0-p2 now, p3, p4 planned for 13 s; memory at 6 s may only take p5
    memory = [d.data["pod"] for d in loop.evictions() if d.data["evidence"]["resource"] == "memory"]
    assert memory == ["p5"]


def test_untaint_follow_up_and_an_overdue_one_is_offered_now() -> None:
    loop = Loop(cfg())
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99)]), until=seconds(5))
    untaints = [f for f in due_followups(loop.world, loop.cfg) if f[1] == "untaint"]
    assert untaints == [(seconds(13 + 300), "untaint", {"nodes": ["n1"]})]
    # the log moves past the untaint time without its firing (a lagging live loop)
    late = node_sample("n1", seconds(400), cpu_cores=10).with_offset(len(loop.log))
    loop.world.apply(late)
    assert [f for f in due_followups(loop.world, loop.cfg) if f[1] == "untaint"] == [
        (seconds(400), "untaint", {"nodes": ["n1"]})
    ]
    trigger = make_event("trigger.fired", seconds(400), {"trigger": "untaint", "kind": "untaint"})
    [untaint] = on_trigger(loop.world, trigger, loop.cfg)
    assert untaint.type == "decision.untaint" and untaint.cause == trigger.id
    assert untaint.data["node"] == "n1" and untaint.at == seconds(400)


def test_other_trigger_kinds_decide_nothing() -> None:
    loop = Loop(cfg())
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99)]), until=seconds(5))
    tick = make_event("trigger.fired", seconds(13), {"trigger": "tick", "kind": "tick"})
    assert on_trigger(loop.world, tick, loop.cfg) == []


def test_evicted_owners_prefer_other_nodes() -> None:
    from controller.policy.pressure import evicted_owners

    loop = Loop(cfg())
    loop.run(cluster() + checks([(1, 99), (2, 99), (3, 99)]), until=seconds(5))
    owners = evicted_owners(loop.world, "n1", seconds(4))
    assert owners == {"ReplicaSet/n1-p0-owner", "ReplicaSet/n1-p1-owner", "ReplicaSet/n1-p2-owner"}
    assert evicted_owners(loop.world, "n1", seconds(3 + 600)) == frozenset()
