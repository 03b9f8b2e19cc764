"""The controller loop on a virtual clock.

Inputs (a recording, sorted by ``at``), the simulated cluster's delayed answers, the
APScheduler triggers and the pressure follow-ups are merged into one time-ordered stream.
Each record is appended to the log and folded into the world; a record that can cause
decisions is handed to :func:`controller.decide.decide`, and the decisions go on the log
right after it, followed by the simulated cluster's answers.

At equal times the order is: recording inputs, cluster answers, triggers, follow-ups —
then by a sequence number, so a run is a pure function of its inputs and configuration.
Quiet ticks (the cluster unchanged since the last tick's session, no window boundary
since, and less than :data:`QUIET_TICK_LIMIT` ago) are not run; firings that decide
nothing are not written (window boundaries are always written).
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from controller.decide import decide
from controller.effector import SimulatedCluster
from controller.framework.config import TideConfig
from controller.pressure import due_followups
from controller.pressure.config import EvictionConfig
from controller.triggers import TriggerSet, trigger_event
from projections.world import World
from streams.backends import open_log
from streams.backends.memory import MemoryLog
from streams.events import Event, format_time, make_event

_INPUT, _ANSWER, _TRIGGER, _FOLLOWUP = 0, 1, 2, 3
_ALWAYS_WRITTEN = frozenset({"window-start", "window-end"})
#: A tick whose world is unchanged still runs a session this often, for what changes with
#: time alone (an LS reservation expiring, say).
QUIET_TICK_LIMIT = timedelta(seconds=60)


@dataclass
class RunResult:
    """What a run produced: the whole log (in memory) and its decisions in order."""

    log: MemoryLog
    world: World
    decisions: list[Event] = field(default_factory=list)
    sessions: int = 0


class Simulation:
    """One virtual-time run. Build it, then call :meth:`run` once."""

    def __init__(
        self,
        config: TideConfig,
        *,
        eviction: EvictionConfig | None = None,
        cluster: SimulatedCluster | None = None,
        config_source: str = "config",
    ) -> None:
        self.config = config
        self.eviction = eviction
        self.cluster = cluster or SimulatedCluster()
        self.config_source = config_source
        self.log = MemoryLog()
        self.world = World()
        self.result = RunResult(self.log, self.world)
        self._queue: list[tuple[datetime, int, int, Event]] = []
        self._pods: dict[str, dict[str, Any]] = {}
        self._nodes: dict[str, dict[str, Any]] = {}
        self._seq = 0
        self._last_tick_version = -1
        self._last_tick_at = datetime.min.replace(tzinfo=UTC)

    def _push(self, at: datetime, rank: int, event: Event) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (at, rank, self._seq, event))

    def _record(self, events: Iterable[Event]) -> list[Event]:
        added = self.log.append_now(list(events))
        for event in added:
            self.world.apply(event)
            if event.type == "k8s.watch":
                self._keep_raw(event.data)
        return added

    def _keep_raw(self, data: dict[str, object]) -> None:
        """The simulated cluster plays the API server: it keeps the raw objects."""
        obj = data.get("object")
        if not isinstance(obj, dict):
            return
        meta = obj.get("metadata") or {}
        resource = data.get("resource")
        if resource == "pods":
            key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
            store = self._pods
        elif resource == "nodes":
            key, store = str(meta.get("name")), self._nodes
        else:
            return
        if data.get("event") == "DELETED":
            store.pop(key, None)
        else:
            store[key] = obj

    def _decide_and_answer(self, event: Event) -> None:
        self._emit(decide(self.world, event, self.config, self.eviction))

    def _emit(self, decisions: list[Event]) -> None:
        for decision in self._record(decisions):
            self.result.decisions.append(decision)
            now, later = self.cluster.handle(decision, self._pods, self._nodes)
            self._record(now)
            for answer in later:
                self._push(answer.at, _ANSWER, answer)

    def _fire(self, at: datetime, name: str, kind: str, zone: str | None) -> None:
        trigger = trigger_event(at, name, kind, zone)
        is_tick = kind == "tick"
        if kind in _ALWAYS_WRITTEN:
            self._last_tick_version = -1  # the zone changed: the next tick must run
        if (
            is_tick
            and self.world.cluster.version == self._last_tick_version
            and at - self._last_tick_at < QUIET_TICK_LIMIT
        ):
            return  # a quiet tick: nothing changed since the last tick's session
        self.result.sessions += 1
        # The trigger.fired record changes no state, so deciding before it is folded is
        # the same as deciding after; it is only written when it decides something (or
        # marks a window boundary).
        decisions = decide(self.world, trigger, self.config, self.eviction)
        if is_tick:
            self._last_tick_version = self.world.cluster.version
            self._last_tick_at = at
        if not decisions and kind not in _ALWAYS_WRITTEN:
            return
        self._record([trigger])
        self._emit(decisions)

    def _followups(self) -> list[tuple[datetime, str, dict[str, object]]]:
        """Pressure follow-ups (later graceful batches, untaints) due from the projection."""
        if self.eviction is None:
            return []
        return due_followups(self.world, self.eviction)

    def run(self, inputs: Iterable[Event], *, until: datetime | None = None) -> RunResult:
        """Run over ``inputs`` (any order; sorted stably by ``at``) until ``until``."""
        ordered = sorted(inputs, key=lambda e: e.at)
        if not ordered:
            return self.result
        start = ordered[0].at
        stop = until or ordered[-1].at
        self._record(
            [
                make_event(
                    "config.applied",
                    start,
                    {"config": dict(self.config.raw), "source": self.config_source},
                )
            ]
        )
        for event in ordered:
            self._push(event.at, _INPUT, event)
        triggers = TriggerSet.from_config(self.config, start=start)
        fired_followups: set[tuple[datetime, str]] = set()
        while True:
            next_trigger = triggers.peek()
            next_item = self._queue[0][0] if self._queue else None
            followups = sorted(
                (f for f in self._followups() if (f[0], f[1]) not in fired_followups),
                key=lambda f: (f[0], f[1]),
            )
            candidates = [t for t in (next_trigger, next_item) if t is not None]
            if followups:
                candidates.append(followups[0][0])
            if not candidates:
                break
            now = min(candidates)
            if now > stop:
                break
            if next_item is not None and next_item == now:
                _, _, _, event = heapq.heappop(self._queue)
                for added in self._record([event]):
                    if added.type == "metrics.node":
                        self._decide_and_answer(added)
                continue
            if next_trigger is not None and next_trigger == now:
                for at, name, kind, zone in triggers.pop_due(now):
                    self._fire(at, name, kind, zone)
                continue
            due, kind, data = followups[0]
            fired_followups.add((due, kind))
            trigger = make_event(
                "trigger.fired",
                due,
                {"trigger": kind, "kind": kind, "scheduled": format_time(due), **data},
            )
            decisions = decide(self.world, trigger, self.config, self.eviction)
            if decisions:
                self._record([trigger])
                self._emit(decisions)
        return self.result


def save_log(url: str, events: list[Event], *, batch: int = 5000) -> int:
    """Append a run's records to the log at ``url``; returns how many were new."""

    async def write() -> int:
        added = 0
        async with await open_log(url) as log:
            for i in range(0, len(events), batch):
                added += len(await log.append(events[i : i + batch]))
        return added

    return asyncio.run(write())
