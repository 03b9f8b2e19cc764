"""TDM, triggers and the simulated cluster together on a virtual clock.

A minimal loop (the real one is ``controller.simulate.runner``): trigger firings open a
session with TDM alone, every victim becomes a ``decision.evict`` (what the shuffle action
writes), the simulated cluster answers, and everything is folded into one World. It pins
the timeline of a window close: per-zone timers, the shared timer, pods terminating and
coming back Pending.
"""

from __future__ import annotations

import heapq
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from controller.drive.effector import SimulatedCluster
from controller.drive.triggers import TriggerConfig, TriggerSet, trigger_event
from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf, TierConf
from controller.policy.plugins.tdm import build, parse_args, schedules
from projections.model import TaskStatus
from projections.world import World
from streams.events import Event, make_event
from tests.builders import build_node, build_pod, build_podgroup, build_queue, watch

START = datetime(2026, 11, 21, 20, 58, tzinfo=UTC)
OPT_IN = {"volcano.sh/revocable-zone": "*", "volcano.sh/preemptable": "true"}


def cluster(zones: dict[str, str]) -> list[Event]:
    events = [watch("queues", build_queue(), START)]
    for zone in sorted(zones):
        labels = {"volcano.sh/revocable-zone": zone}
        events.append(watch("nodes", build_node(f"{zone}-n", labels=labels), START))
        events.append(watch("podgroups", build_podgroup("ns", zone), START))
        for i in range(3):
            pod = build_pod(
                "ns",
                f"{zone}-{i}",
                node=f"{zone}-n",
                group=zone,
                annotations=OPT_IN,
                owner_kind="ReplicaSet",
                created=START,
                started=START + timedelta(seconds=i),
            )
            events.append(watch("pods", pod, START))
    return events


def run(zones: dict[str, str], minutes: int, **extra: Any) -> tuple[World, list[Event]]:
    arguments = {**{f"tdm.revocable-zone.{z}": w for z, w in zones.items()}, **extra}
    args = parse_args(arguments)
    ctx = PluginContext(ZoneInfo("UTC"), "volcano")
    plugin = build(args, ctx)
    tiers = [TierConf((PluginConf.of("tdm", all_flags=True),))]
    world = World()
    sim = SimulatedCluster()

    def feed(record: Event) -> None:
        world.apply(record)
        sim.observe(record)

    plan = TriggerConfig(schedules=schedules(args, ctx))
    triggers = TriggerSet.from_config(plan, start=START)
    queue: list[tuple[datetime, int, Event]] = []
    seq = 0
    for event in cluster(zones):
        seq += 1
        heapq.heappush(queue, (event.at, seq, event))
    decisions: list[Event] = []
    stop = START + timedelta(minutes=minutes)
    while True:
        next_trigger = triggers.peek()
        next_event = queue[0][0] if queue else None
        now = min(t for t in (next_trigger, next_event) if t is not None)
        if now > stop:
            break
        if next_event == now:
            feed(heapq.heappop(queue)[2])
            continue
        for firing in triggers.due(now):
            trigger = trigger_event(*firing)
            ssn = Session(world, trigger, tiers=tiers, ctx=ctx)
            ssn.open([plugin])
            for victim in ssn.victim_tasks([]):
                t = victim.task
                decision = make_event(
                    "decision.evict",
                    trigger.at,
                    {
                        "kind": "evict",
                        "namespace": t.namespace,
                        "pod": t.name,
                        "uid": t.uid,
                        "node": t.node_name,
                        "reason": victim.reason,
                        "source": victim.source,
                        "evidence": victim.evidence,
                    },
                    cause=trigger.id,
                )
                decisions.append(decision)
                feed(decision)
                effects = sim.apply(decision)
                answers, later = effects.now, effects.later
                for answer in answers:
                    feed(answer)
                for answer in later:
                    seq += 1
                    heapq.heappush(queue, (answer.at, seq, answer))
    return world, decisions


def timeline(decisions: list[Event]) -> list[tuple[str, str]]:
    return [(d.at.strftime("%H:%M:%S"), d.data["pod"]) for d in decisions]


def test_one_eviction_per_period_from_the_close() -> None:
    # The acceptance test: the window is half-open, so 10:00-21:00 closes at
    # 21:00:00 and the evictions (budget 1, period 1m) fall at 21:00, 21:01 and 21:02.
    world, decisions = run({"rz1": "10:00-21:00"}, minutes=6)
    assert timeline(decisions) == [
        ("21:00:00", "rz1-2"),
        ("21:01:00", "rz1-1"),
        ("21:02:00", "rz1-0"),
    ]
    assert {d.data["reason"] for d in decisions} == {"tdm-window-closed"}
    # the originals are gone; their replacements are Pending, off the revocable node
    tasks = world.cluster.tasks
    assert not {"ns/rz1-0", "ns/rz1-1", "ns/rz1-2"} & set(tasks)
    replacements = [t for t in tasks.values() if t.job == "ns/rz1"]
    assert len(replacements) == 3
    assert {t.status for t in replacements} == {TaskStatus.PENDING}


def test_zones_keep_their_own_timers() -> None:
    zones = {"rz1": "10:00-21:00", "rz2": "10:00-21:01"}
    _, decisions = run(zones, minutes=9, **{"tdm.evict.period": "5m"})
    assert timeline(decisions) == [
        ("21:00:00", "rz1-2"),
        ("21:01:00", "rz2-2"),  # rz1's eviction does not hold rz2 back
        ("21:05:00", "rz1-1"),
        ("21:06:00", "rz2-1"),
    ]


def test_shared_timer_holds_every_zone_back() -> None:
    zones = {"rz1": "10:00-21:00", "rz2": "10:00-21:01"}
    extra = {"tdm.evict.period": "5m", "tdm.evict.shared-timer": True}
    _, decisions = run(zones, minutes=8, **extra)
    assert timeline(decisions) == [
        ("21:00:00", "rz1-2"),
        ("21:05:00", "rz1-1"),  # rz2 waited for the shared timer
        ("21:05:00", "rz2-2"),
    ]


def test_nothing_happens_while_the_window_is_open() -> None:
    world, decisions = run({"rz1": "10:00-22:00"}, minutes=30)
    assert decisions == []
    assert len([t for t in world.cluster.tasks.values() if t.status == TaskStatus.RUNNING]) == 3
