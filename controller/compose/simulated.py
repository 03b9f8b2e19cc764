"""The wiring of a simulated run (``tide simulate``; ``tide demo`` finishes its log here).

:func:`read_inputs` (a scenario, or a recording read lazily), :func:`end_of` (``--until``),
:func:`plan_simulation` (the run's identity, its relief and size) and
:func:`open_simulation` (the :class:`~controller.simulate.spool.Spool` the log is written
through, and the :class:`~controller.simulate.runner.Simulation`: step, virtual loop,
triggers, simulated cluster); :func:`save_checkpoint` and :func:`set_aside_in` finish the
log a command wrote. Nothing here prints or exits (see :mod:`controller.compose`).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import orjson

from controller.drive.loop.virtual import Fed
from controller.policy.framework.durations import parse_duration
from controller.policy.loader import Policy
from controller.simulate.inputs import main_window, outlier
from controller.simulate.runner import RunResult, Simulation
from controller.simulate.scenario import frees_usage, is_scenario, load_scenario, read_scenario
from controller.simulate.spool import Spool
from projections.checkpoints import CheckpointPolicy, Keeper, stored_records
from projections.store import checkpoint_world
from projections.world import World
from streams.backends import open_log
from streams.backends.checkpoints import open_log_store
from streams.chain import run_id
from streams.events import Event, format_time, parse_time
from streams.gcpause import paused_gc
from streams.log import Quarantine, Quarantined
from streams.recording import read_batches
from streams.validation import Extra

#: lines decoded at once from a recording: a batch is held decoded until the loop took it
#: (a recording's snapshot of ~6 KB pods is ~20 KB each decoded)
READ_BATCH = 256

#: what is told of each line set aside, as it is reached (the CLI prints it on stderr)
Report = Callable[[Quarantined], None]


@dataclass
class Inputs:
    """A simulation's inputs: ``events`` (a list for a scenario, else read lazily as the run
    takes them), the lines set aside so far (``bad``, grown as a lazy read goes on), the
    first input's time and the last one's (a recording's main window's end)."""

    events: Iterable[Event] | Iterator[Event | Fed]
    bad: list[Quarantined]
    first: datetime | None
    last: datetime | None
    scenario: bool


def read_inputs(path: Path, *, extra: Extra, report: Report) -> Inputs:
    """The inputs of ``tide simulate``: a scenario YAML expanded, or the recording at
    ``path`` (it exists) read lazily (its first batch now, to know the first input's time).

    Raises:
        ScenarioError: the scenario does not load (a ValueError naming the file).
    """
    if is_scenario(path):
        events, _, _ = load_scenario(path)
        return Inputs(events, [], _earliest(events), _latest(events), scenario=True)
    window = main_window(path)
    bad: list[Quarantined] = []
    lazy = _lazy_inputs(path, window, bad=bad, extra=extra, report=report)
    head = next(lazy, None)
    read: Iterator[Event | Fed] = itertools.chain([head], lazy) if head is not None else iter(())
    first = None if head is None else head.event.at if isinstance(head, Fed) else head.at
    last = window[1] if window is not None else None
    return Inputs(read, bad, first, last, scenario=False)


def _earliest(events: Sequence[Event]) -> datetime | None:
    return min((e.at for e in events), default=None)


def _latest(events: Sequence[Event]) -> datetime | None:
    return max((e.at for e in events), default=None)


def _lazy_inputs(
    path: Path,
    window: tuple[datetime, datetime] | None,
    *,
    bad: list[Quarantined],
    extra: Extra,
    report: Report,
) -> Iterator[Event | Fed]:
    """The recording's events as they are read (with their payload bytes when the line is
    canonical); each line set aside (invalid, or outside the recording's main run
    ``window``) is reported when reached and kept in ``bad`` for the log's quarantine."""
    for batch in read_batches(path, size=READ_BATCH, extra=extra, canonical=True):
        for item in batch.bad:
            bad.append(item)
            report(item)
        for line, event, payload in zip(batch.lines, batch.events, batch.payloads, strict=True):
            if window is not None and not window[0] <= event.at <= window[1]:
                item = outlier(event, line, window, source=str(path))
                bad.append(item)
                report(item)
                continue
            yield event if payload is None else Fed(event, payload)


def end_of(until: str | None, inputs: Inputs, *, path: Path) -> datetime | None:
    """When the run stops: ``until`` (RFC 3339, or ``+DURATION`` after the first input),
    else a scenario's own ``until``, else None (the last input's time).

    Raises:
        ValueError: ``until`` is neither (the message says why).
    """
    stop = None
    if until:
        if until.startswith("+"):
            first = inputs.first
            stop = first + parse_duration(until[1:]) if first is not None else None
        else:
            stop = parse_time(until)
    if inputs.scenario and stop is None:
        _, _, stop = load_scenario(path)
    return stop


@dataclass(frozen=True)
class SimulationPlan:
    """What a simulation is, before it runs: its configuration, inputs and end, the log it
    writes (``log``; ``keep_all``: kept in memory instead), and what follows from those."""

    policy: Policy
    inputs: Inputs
    until: datetime | None
    config_source: str
    log: str | None
    keep_all: bool
    another_run: bool
    relief: bool
    #: a run is its configuration, its input file and its end: the same run may be written
    #: again (idempotent by id), another one only with ``another_run``
    run: str
    #: virtual seconds from the first input to the end, and the progress line's size
    span: float
    size: int


def plan_simulation(
    policy: Policy,
    inputs: Inputs,
    *,
    path: Path,
    until: datetime | None,
    config_source: str,
    log: str | None,
    keep_all: bool,
    another_run: bool,
) -> SimulationPlan:
    """The plan of a simulation over ``inputs`` read from ``path``.

    Raises:
        ScenarioError: the scenario's ``evictionFreesUsage`` is not a boolean.
    """
    last = until or inputs.last
    first = inputs.first
    span = (last - first).total_seconds() if first and last else 0.0
    relief = frees_usage(read_scenario(path)) if inputs.scenario else False
    events = inputs.events
    size = len(events) if isinstance(events, list) else path.stat().st_size // 4096
    run = run_id(
        orjson.dumps(dict(policy.raw), option=orjson.OPT_SORT_KEYS, default=str),
        _digest(path),
        (format_time(until) if until else "").encode(),
    )
    return SimulationPlan(
        policy=policy,
        inputs=inputs,
        until=until,
        config_source=config_source,
        log=log,
        keep_all=keep_all,
        another_run=another_run,
        relief=relief,
        run=run,
        span=span,
        size=size,
    )


def _digest(path: Path) -> bytes:
    """A digest of the file at ``path`` (what the run read), in one streaming pass."""
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.digest()


@dataclass
class WiredSimulation:
    """A simulation wired to its log: :meth:`run` it once, then :meth:`folded`."""

    plan: SimulationPlan
    spool: Spool

    def run(
        self,
        *,
        on_decision: Callable[[Event], None] | None,
        progress: Callable[[float], None] | None,
    ) -> RunResult:
        """Run the step on the virtual loop over the plan's inputs to its end; onto an
        empty log, the spool keeps its checkpoints as the run goes
        (:meth:`controller.simulate.spool.Spool.keep_checkpoints`)."""
        plan = self.plan
        simulation = Simulation(
            plan.policy.config,
            eviction=plan.policy.eviction,
            config_source=plan.config_source,
            relief=plan.relief,
            spool=None if plan.keep_all else self.spool,
            on_decision=on_decision,
        )
        if not plan.keep_all:
            self.spool.keep_checkpoints(simulation.world, CheckpointPolicy.from_env())
        self.result = simulation.run(plan.inputs.events, until=plan.until, progress=progress)
        return self.result

    def folded(self) -> World | None:
        """The run's World when it is the fold of the whole log it wrote (a run onto an
        empty log), to be the log's checkpoint without folding it again; else None."""
        return self.result.world if not self.plan.keep_all and self.spool.whole else None


@contextmanager
def open_simulation(plan: SimulationPlan) -> Iterator[WiredSimulation]:
    """The simulation of ``plan`` with its log open (the spool writes the records to
    ``plan.log`` as the run goes, or drops them), sealed and closed on a clean exit."""
    log = None if plan.keep_all else plan.log
    with Spool(log, run=plan.run, another_run=plan.another_run) as spool:
        yield WiredSimulation(plan, spool)


def save_checkpoint(url: str, world: World | None = None) -> None:
    """Keep checkpoints by position along the log at ``url`` and one at its head, in its
    store (the log's own SQLite file, a ``kafka://`` log's ``checkpoints=`` file); logs
    without a store (``memory://``) get none. Only the commands that write a log call
    this: the reading ones never create a checkpoint. When and which:
    :meth:`projections.checkpoints.CheckpointPolicy.from_env`.

    ``world``: a default World already folded from the log's first ``world.position``
    records (a simulation's own, when it wrote a log that was empty): only the records
    after those are folded into it, instead of the whole log into a new World a second
    time (the CPU of a whole fold, and a second World in memory); the checkpoint's ledger
    and chain state are folded from the log's records meanwhile (no World: cheap), and
    the one checkpoint kept is the head's.
    """

    async def run() -> None:
        async with await open_log(url) as log:
            store = await open_log_store(log.url or url, create=True)
            if store is None:
                return
            async with store:
                if world is None:
                    await checkpoint_world(log, store)
                    return
                keeper = Keeper(store, CheckpointPolicy.from_env(), world=world)
                with paused_gc():
                    async for event, payload in stored_records(log, 0):
                        if event.offset >= world.position:
                            world.apply(event)
                        keeper.feed(event, payload)
                await keeper.finish()

    asyncio.run(run())


def set_aside_in(url: str, items: Sequence[Quarantined]) -> None:
    """Add ``items`` to the quarantine of the log at ``url`` (a log without one: no-op)."""

    async def run() -> None:
        async with await open_log(url) as log:
            if isinstance(log, Quarantine):
                await log.set_aside(items)

    asyncio.run(run())
