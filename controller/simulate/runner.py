"""A simulation: the controller loop on a virtual clock against the simulated cluster.

Wiring only: a :class:`~controller.policy.step.Step` (every rule about what is decided and
written), a :class:`~controller.drive.loop.virtual.VirtualLoop` (the time-ordered heap), the
configuration's triggers registered at the first input's time, and the
:class:`~controller.drive.effector.SimulatedCluster` as the effector. The log starts with the
``config.applied`` record; everything after it is the loop's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from controller.drive.effector import SimulatedCluster
from controller.drive.effector.port import Effector, Effects
from controller.drive.loop.virtual import Fed, SyncLog, VirtualLoop
from controller.drive.triggers import TriggerSet
from controller.policy.framework.config import TideConfig, run_behaviour
from controller.policy.pressure.config import EvictionConfig
from controller.policy.step import QUIET_TICK_LIMIT, Step
from controller.simulate.relief import UsageRelief
from controller.simulate.spool import Spool
from projections.world import World
from streams.backends import open_log
from streams.backends.memory import MemoryLog
from streams.chain import ChainWriter
from streams.events import Event, make_event
from streams.gcpause import paced
from streams.payloads import ConfigPayload, as_json

__all__ = ["QUIET_TICK_LIMIT", "SLACK", "RunResult", "Simulation", "save_log"]

#: how far out of time order a lazily read input may be (see :meth:`Simulation.run`)
SLACK = timedelta(minutes=2)


@dataclass
class RunResult:
    """What a run produced: the whole log (in memory; empty when the run wrote to a
    :class:`~controller.simulate.spool.Spool`), its decisions in order, how many
    records it wrote."""

    log: MemoryLog
    world: World
    decisions: list[Event] = field(default_factory=list)
    sessions: int = 0
    records: int = 0
    #: how many decisions were written (also those given to ``on_decision``, not kept)
    decided: int = 0


class Simulation:
    """One virtual-time run. Build it, then call :meth:`run` once."""

    def __init__(
        self,
        config: TideConfig,
        *,
        eviction: EvictionConfig | None = None,
        cluster: SimulatedCluster | None = None,
        config_source: str = "config",
        relief: bool = False,
        spool: Spool | None = None,
        behaviour: int | None = None,
        on_decision: Callable[[Event], None] | None = None,
    ) -> None:
        """``relief``: node samples show the usage freed by pressure evictions
        (:mod:`controller.simulate.relief`). ``spool``: write the records there as the
        run goes instead of keeping them in :attr:`log`. ``behaviour``: the level stamped on
        ``config.applied`` (default: the configuration's own, else the current one); an
        earlier level reruns an old run exactly, its configuration recorded unchanged.
        ``on_decision``: each decision goes there as it is written instead of into
        :attr:`RunResult.decisions`."""
        self.behaviour = behaviour if behaviour is not None else run_behaviour(config)
        self.config = config
        self.relief = UsageRelief() if relief else None
        self.eviction = eviction
        self.cluster = cluster or SimulatedCluster()
        self.config_source = config_source
        self.log = MemoryLog()
        self.spool = spool
        self.on_decision = on_decision
        self.step = Step(config=config, eviction=eviction)
        self.world = self.step.world
        self.result = RunResult(self.log, self.world)

    def run(
        self,
        inputs: Iterable[Event] | Iterator[Event | Fed],
        *,
        until: datetime | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> RunResult:
        """Run over ``inputs`` until ``until`` (default: the last input's time).

        A sequence is sorted stably by ``at`` first. Any other iterable is read lazily
        (a day's recording is never all in memory; a :class:`Fed` input brings its
        payload's bytes along): it must be in time order, at most
        :data:`SLACK` out of it (:class:`~controller.drive.loop.virtual.OutOfOrderError`), and
        the run is the one its stable sort would give; the cyclic collector is then
        paced (:func:`streams.gcpause.paced`). ``progress``, when given, is called with
        the virtual seconds since the first input as records are written."""
        target: SyncLog = self.spool if self.spool is not None else self.log
        ordered: list[Event] = []
        feed: Generator[Event | Fed, None, None] | None = None
        if isinstance(inputs, Sequence):
            ordered = sorted(inputs, key=lambda e: e.at)
        else:
            feed = paced(iter(inputs))
        loop = VirtualLoop(self.step, log=target)
        loop.on_decision = self.on_decision
        spool, world = self.spool, self.world
        if spool is not None and spool.keeper is not None:
            loop.at_rest = lambda: spool.at_rest(world)
        try:
            return self._run(loop, feed, ordered, until, progress)
        finally:
            if feed is not None:
                feed.close()  # ends the pacing even when ``until`` came first

    def _run(
        self,
        loop: VirtualLoop[SyncLog],
        feed: Iterator[Event | Fed] | None,
        ordered: list[Event],
        until: datetime | None,
        progress: Callable[[float], None] | None,
    ) -> RunResult:
        first = loop.feed(feed, slack=SLACK) if feed is not None else None
        if feed is None and ordered:
            first = ordered[0].at
        if first is None:
            return self.result
        start = first
        effector: Effector = self.cluster
        if progress is not None or self.relief is not None:
            effector = _Watched(self.cluster, start, progress, self.relief)
        loop.effector = effector
        loop.triggers = TriggerSet.from_config(self.config, start=start)
        loop.prepare = self.relief.prepare if self.relief is not None else None
        payload: ConfigPayload = {
            "config": dict(self.config.raw),
            "source": self.config_source,
            "behaviour": self.behaviour,
        }
        applied = make_event("config.applied", start, as_json(payload))
        self.step.fold(loop.write([applied]))
        loop.push(ordered)
        self.result.decisions = loop.run(until=until or (ordered[-1].at if ordered else None))
        self.result.decided = loop.decided
        self.result.sessions = self.step.sessions
        self.result.records = len(self.log.events) if self.spool is None else self.spool.count
        return self.result


class _Watched:
    """The cluster, plus the run's other observers of written records: a progress call
    (virtual seconds so far) and the usage relief."""

    def __init__(
        self,
        cluster: SimulatedCluster,
        start: datetime,
        progress: Callable[[float], None] | None,
        relief: UsageRelief | None,
    ) -> None:
        self.cluster, self.start, self.progress, self.relief = cluster, start, progress, relief

    def observe(self, record: Event) -> None:
        self.cluster.observe(record)
        self._others(record)

    def _others(self, record: Event) -> None:
        if self.relief is not None:
            self.relief.observe(record)
        if self.progress is not None:
            self.progress((record.at - self.start).total_seconds())

    def observe_encoded(self, record: Event, payload: bytes) -> None:
        self.cluster.observe_encoded(record, payload)
        self._others(record)

    def apply(self, decision: Event) -> Effects:
        return self.cluster.apply(decision)

    def due(self, record: Event) -> Event | None:
        return self.cluster.due(record)


def save_log(
    url: str,
    events: list[Event],
    *,
    batch: int = 5000,
    run: str | None = None,
    another_run: bool = False,
) -> int:
    """Append a run's records to the log at ``url``, linked into its hash chain; returns
    how many were new. ``run`` and ``another_run``: see :class:`streams.chain.ChainWriter`."""

    async def write() -> int:
        added = 0
        async with (
            await open_log(url) as log,
            ChainWriter(log, run=run, another_run=another_run) as writer,
        ):
            for i in range(0, len(events), batch):
                added += len(await writer.append(events[i : i + batch]))
        return added

    return asyncio.run(write())
