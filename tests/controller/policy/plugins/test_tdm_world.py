"""TDM over the real projections: raw Kubernetes JSON folded into a World, the evict timer
read from the History projection (a fold of ``decision.evict`` records), never a global."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.points import Victim
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf, TierConf
from controller.policy.plugins.tdm import build, parse_args
from projections.world import World
from streams.events import Event, format_time, make_event
from tests.builders import build_node, build_pod, build_podgroup, build_queue, watch

T0 = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
CLOSE = datetime(2026, 11, 21, 21, 0, tzinfo=UTC)  # 10:00-21:00 is closed from 21:00:00
ARGS = {"tdm.revocable-zone.rz1": "10:00-21:00", "tdm.revocable-zone.rz2": "10:00-21:00"}
OPT_IN = {"volcano.sh/revocable-zone": "*", "volcano.sh/preemptable": "true"}


def cluster_world() -> World:
    world = World(extra=[])
    events = [watch("queues", build_queue())]
    for zone in ("rz1", "rz2"):
        events.append(
            watch("nodes", build_node(f"{zone}-n", labels={"volcano.sh/revocable-zone": zone}))
        )
        events.append(watch("podgroups", build_podgroup("ns", f"job-{zone}", min_member=1)))
        for i in range(3):
            pod = build_pod(
                "ns",
                f"{zone}-{i}",
                node=f"{zone}-n",
                group=f"job-{zone}",
                annotations=OPT_IN,
                started=T0 + timedelta(minutes=i),
            )
            events.append(watch("pods", pod))
    for event in events:
        world.apply(event)
    return world


def victims(world: World, now: datetime, **extra: Any) -> list[Victim]:
    ctx = PluginContext(ZoneInfo("UTC"), "volcano")
    plugin = build(parse_args({**ARGS, **extra}), ctx)
    trigger = make_event(
        "trigger.fired", now, {"trigger": "t", "kind": "tick", "scheduled": format_time(now)}
    )
    ssn = Session(
        world, trigger, tiers=[TierConf((PluginConf.of("tdm", all_flags=True),))], ctx=ctx
    )
    ssn.open([plugin])
    return ssn.victim_tasks([])


def evict(victim: Victim, at: datetime) -> Event:
    """The decision the shuffle action would write for ``victim``."""
    task = victim.task
    return make_event(
        "decision.evict",
        at,
        {
            "kind": "evict",
            "namespace": task.namespace,
            "pod": task.name,
            "uid": task.uid,
            "node": task.node_name,
            "reason": victim.reason,
            "source": victim.source,
            "evidence": victim.evidence,
        },
    )


def test_window_close_rounds_per_zone_from_the_log() -> None:
    world = cluster_world()
    # 20:59:59.999999 still open (end exclusive)
    assert victims(world, CLOSE - timedelta(microseconds=1)) == []

    first = victims(world, CLOSE)
    assert [(v.task.name, v.evidence["zone"]) for v in first] == [
        ("rz1-2", "rz1"),
        ("rz2-2", "rz2"),
    ]
    # Nothing is evicted yet: the timer has not moved, the same round is proposed again.
    assert [v.task.name for v in victims(world, CLOSE + timedelta(seconds=5))] == [
        "rz1-2",
        "rz2-2",
    ]

    # Only rz1's victim is decided (logged); rz2 keeps its own timer.
    world.apply(evict(first[0], CLOSE))
    assert world.history.last_tdm_eviction("rz1") == CLOSE
    later = victims(world, CLOSE + timedelta(seconds=5))
    assert [v.task.name for v in later] == ["rz2-2"]  # rz1 waits; rz1-2 is Releasing anyway

    # A period after rz1's eviction, rz1 goes again with its next task.
    again = victims(world, CLOSE + timedelta(minutes=1))
    assert [v.task.name for v in again] == ["rz1-1", "rz2-2"]
    assert again[0].evidence["last_eviction"] == format_time(CLOSE)


def test_shared_timer_from_the_log() -> None:
    world = cluster_world()
    first = victims(world, CLOSE, **{"tdm.evict.shared-timer": True})
    world.apply(evict(first[0], CLOSE))
    assert victims(world, CLOSE + timedelta(seconds=59), **{"tdm.evict.shared-timer": True}) == []
    assert [
        v.evidence["zone"]
        for v in victims(world, CLOSE + timedelta(minutes=1), **{"tdm.evict.shared-timer": True})
    ] == ["rz1", "rz2"]


def test_budget_annotation_on_the_podgroup() -> None:
    world = cluster_world()
    pg = build_podgroup(
        "ns", "job-rz1", min_member=1, annotations={"volcano.sh/jdb-max-unavailable": "2"}
    )
    world.apply(watch("podgroups", pg, event="MODIFIED"))
    names = [v.task.name for v in victims(world, CLOSE) if v.evidence["zone"] == "rz1"]
    assert names == ["rz1-1", "rz1-2"]  # session order is by name; the two newest
