"""A small pressure-eviction loop for tests, and scenario builders.

:class:`Loop` does what the simulation runner does for pressure, without the scheduler:
inputs in time order are appended (offsets assigned) and folded into a World holding the
usage, OOM and pressure projections; every ``metrics.node`` record goes to
``check_node``; the follow-ups of ``due_followups`` are fired as ``trigger.fired`` records
(written only when they decide something, as the runner does) and passed to
``on_trigger``; decisions are folded right away and, with ``sim=True``, answered by the
simulated cluster (notice, termination, recreation, taints).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from controller.effector import SimulatedCluster
from controller.policy import load_config
from controller.pressure import check_node, due_followups, on_trigger
from controller.pressure.config import EvictionConfig, parse_eviction_config
from projections.oom import OOMState
from projections.pressure import PressureState
from projections.usage import UsageState
from projections.world import World
from replay.verify import replay
from streams.events import DECISION_TYPES, Event, format_time, make_event
from tests.builders import T0, build_node, build_pod, node_metrics, pod_metrics, watch

JSON = dict[str, Any]
GI = 2**30
#: every Loop a test builds; tests/controller/pressure/conftest.py verifies their logs
LOOPS: list[Loop] = []


def new_world() -> World:
    return World(extra=[UsageState(), OOMState(), PressureState()], keep_pods=True)


def config(**overrides: Any) -> EvictionConfig:
    """A configuration from seed keys; ``overrides`` are merged one level deep."""
    raw: dict[str, Any] = {}
    for key, value in overrides.items():
        raw[key] = value
    return parse_eviction_config(raw)


@dataclass
class Loop:
    cfg: EvictionConfig
    sim: bool = False
    world: World = field(default_factory=new_world)
    log: list[Event] = field(default_factory=list)
    decisions: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        LOOPS.append(self)
        self._queue: list[tuple[datetime, int, int, Event]] = []
        self._seq = 0
        self._fired: set[tuple[datetime, str]] = set()
        self.cluster = SimulatedCluster()

    def _push(self, event: Event, rank: int) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (event.at, rank, self._seq, event))

    def record(self, event: Event) -> Event:
        placed = event.with_offset(len(self.log))
        self.log.append(placed)
        self.world.apply(placed)
        return placed

    def emit(self, decisions: list[Event]) -> None:
        for decision in decisions:
            self.record(decision)
            self.decisions.append(decision)
            if self.sim:
                now, later = self.cluster.handle(
                    decision, self.world.cluster.pods, self.world.cluster.raw_nodes
                )
                for event in now:
                    self.record(event)
                for event in later:
                    self._push(event, 1)

    def run(self, inputs: list[Event], until: datetime | None = None) -> list[Event]:
        for event in sorted(inputs, key=lambda e: e.at):
            self._push(event, 0)
        while True:
            pending = [
                (when, kind, data)
                for when, kind, data in due_followups(self.world, self.cfg)
                if (when, kind) not in self._fired
            ]
            next_input = self._queue[0][0] if self._queue else None
            next_followup = pending[0][0] if pending else None
            times = [t for t in (next_input, next_followup) if t is not None]
            if not times:
                break
            now = min(times)
            if until is not None and now > until:
                break
            if next_input is not None and next_input == now:
                _, _, _, event = heapq.heappop(self._queue)
                placed = self.record(event)
                if placed.type == "metrics.node":
                    self.emit(check_node(self.world, placed, self.cfg))
                continue
            when, kind, data = pending[0]
            self._fired.add((when, kind))
            trigger = make_event(
                "trigger.fired",
                when,
                {"trigger": kind, "kind": kind, "scheduled": format_time(when), **data},
            )
            decisions = on_trigger(self.world, trigger, self.cfg)
            if decisions:
                self.record(trigger)
                self.emit(decisions)
        return self.decisions

    def verify(self) -> None:
        """``tide replay --verify`` on this loop's log: every decision re-derives."""
        report = replay(self.log, configs=(load_config({}), self.cfg))
        assert report.ok, [d.describe() for d in report.differences]

    def evictions(self) -> list[Event]:
        return [d for d in self.decisions if d.type == "decision.evict"]


def decisions_of(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type in DECISION_TYPES]


# ---- scenario builders ------------------------------------------------------------------


def node_event(name: str = "n1", *, cpu: int = 100, memory_gi: int = 100, **kw: Any) -> Event:
    return watch("nodes", build_node(name, cpu=str(cpu), memory=f"{memory_gi}Gi", **kw))


def pod_event(
    name: str,
    *,
    node: str = "n1",
    qos: str | None = "BE",
    priority: int | None = None,
    started: datetime = T0,
    namespace: str = "default",
    owner: str | None = "ReplicaSet",
    requests: tuple[str, str] | None = ("1", "1Gi"),
    statuses: list[JSON] | None = None,
) -> Event:
    labels = {"koordinator.sh/qosClass": qos} if qos else {}
    cpu, memory = requests if requests else (None, None)
    pod = build_pod(
        namespace,
        name,
        node=node,
        priority=priority,
        labels=labels,
        cpu=cpu,
        memory=memory,
        created=started,
        started=started,
        owner_kind=owner,
        container_statuses=statuses,
    )
    return watch("pods", pod, T0 - timedelta(minutes=1))


def node_sample(name: str, when: datetime, *, cpu_cores: float, memory_gi: float = 10.0) -> Event:
    return node_metrics(
        name,
        cpu=f"{round(cpu_cores * 1000)}m",
        memory=f"{round(memory_gi * 1024)}Mi",
        when=when,
    )


def pod_sample(
    name: str,
    when: datetime,
    *,
    cpu_cores: float,
    memory_gi: float = 1.0,
    namespace: str = "default",
) -> Event:
    return pod_metrics(
        namespace,
        name,
        cpu=f"{round(cpu_cores * 1000)}m",
        memory=f"{round(memory_gi * 1024)}Mi",
        when=when,
    )


def seconds(n: float) -> datetime:
    return T0 + timedelta(seconds=n)


def evicted(decisions: list[Event]) -> list[str]:
    return [d.data["pod"] for d in decisions if d.type == "decision.evict"]
