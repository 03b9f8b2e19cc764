"""The loop on the real clock: ``tide run``'s asyncio driver around the one step.

Why a driver and not a second controller: what is decided and what is written is
:class:`~controller.policy.step.Step`'s alone (the same quiet-tick and write rules as the
virtual loop), so a log written here replays with ``tide replay --verify`` exactly like a
simulated one. The driver only moves records between the sources, the clock, the step, the
log and the effector, and one lock makes every *append + fold* atomic, so the step's World
is always exactly the log prefix it has written:

* **inputs** — the recorder's sources (watch events, metric samples) hand their batches
  to :meth:`LiveLoop.feed`; a batch is appended in chunks that end at each
  ``metrics.node`` sample. What is written of a chunk and when it is folded is the
  step's rule: a standby writes no decision point (:meth:`Step.writes
  <controller.policy.step.Step.writes>`), the other inputs are written, then folded
  (:meth:`~controller.policy.step.Step.on_input`), and the leader's decision point is
  folded ahead and written with its pressure decisions as one batch
  (:meth:`~controller.policy.step.Step.on_input_ahead`: a kill between two appends would
  otherwise leave a sample whose decisions replay re-derives and no restart can write
  in place);
* **triggers** — :class:`~controller.drive.triggers.live.LiveTriggers` fires the configuration's
  triggers on the real clock with their *scheduled* time; the step decides on the World
  folded so far (at least up to the trigger's place on the log) and the trigger with its
  decisions is appended as one batch;
* **follow-ups** — pressure eviction's later batches and untaints, polled from the step;
* **effects** — each written decision goes to the
:class:`~controller.drive.effector.applier.Applier`
  (exactly once; its outcome comes back through :meth:`LiveLoop.write`).

Only the leader decides and acts (:class:`~controller.drive.loop.leadership.Leadership`): a
standby appends and folds its inputs as the step says (not the metric samples pressure
eviction decides on) and fires no decisions; gaining the lead folds the log afresh when
another replica appended to it (:meth:`~controller.policy.step.Step.refold`) and
reconciles every decision without an outcome; losing it halts the effector before
anything else.
The observer (:class:`~controller.drive.observe.hooks.LiveObserver`) is told of each decision,
outcome, session, append lag, watch restart, readiness and leadership change.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

from controller.drive.clock import Clock, SystemClock
from controller.drive.effector.applier import Applier
from controller.drive.loop.keeping import RunCheckpoints, open_run_checkpoints, snapshot_of
from controller.drive.loop.leadership import AlwaysLeader, Leadership
from controller.drive.observe.hooks import LiveObserver, NoObserver
from controller.drive.observe.logs import decision_fields
from controller.drive.sources.recorder import Recorder
from controller.drive.triggers.live import LiveTriggers
from controller.policy.framework.config import TideConfig
from controller.policy.step import Step
from projections.checkpoints import CheckpointPolicy, Restart, restart
from projections.effects import EffectsState
from streams.backends.checkpoints import CheckpointStore
from streams.chain import append_with_payloads
from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from streams.gcpause import FoldedHeap, freeze_folded, paused_gc
from streams.log import EventLog
from streams.payloads import as_decision, as_effect, as_trigger

__all__ = ["LiveLoop"]

logger = logging.getLogger(__name__)

#: seconds between two looks for a due pressure follow-up
FOLLOWUP_POLL = 0.2
#: seconds between two looks at whether a checkpoint is due (issue 26)
CHECKPOINT_POLL = 1.0
#: seconds a firing waits for the others due at the same instant (then all go in rank order)
SETTLE = 0.05


def _warn(line: str) -> None:
    logger.warning("%s", line)


class LiveLoop:
    """Runs the step on the real clock (see the module docstring).

    Args:
        step: the step (its World is folded as records are written).
        log: the log appended to.
        clock: the controller's clock (the wall clock, maybe shifted).
        config: the scheduler configuration whose triggers fire (None: no triggers).
        offset: how far ``clock`` is ahead of the wall clock (the triggers' shift).
        leadership: who may decide and act (default: this replica, always).
        observer: told what happens (default: nobody).
    """

    def __init__(
        self,
        step: Step,
        log: EventLog,
        *,
        clock: Clock | None = None,
        config: TideConfig | None = None,
        offset: timedelta = timedelta(0),
        leadership: Leadership | None = None,
        observer: LiveObserver | None = None,
    ) -> None:
        self.step = step
        self.log = log
        #: how records reach the log, with the payload bytes the sources computed (see
        #: :meth:`feed`): ``tide run`` swaps in the recorder's chain writer (hash chain
        #: links, writer lock) once it exists
        self.append: Callable[[list[Event], Sequence[bytes | None]], Awaitable[list[Event]]] = (
            self._log_append
        )
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.config = config
        self.offset = offset
        self.leadership: Leadership = leadership if leadership is not None else AlwaysLeader()
        self.observer: LiveObserver = observer if observer is not None else NoObserver()
        self.effects = EffectsState()
        self.applier: Applier | None = None
        #: folds fed every record read back from the log on start and on a takeover
        #: (the effector's guard rails)
        self.readers: list[Callable[[Event], None]] = []
        self.triggers: LiveTriggers | None = None
        #: how many decisions this process wrote (each went to the observer and the log;
        #: keeping them would grow with the log)
        self.decided = 0
        #: the checkpoints kept with the log, read on start (None: fold from offset 0)
        self.checkpoints: CheckpointStore | None = None
        #: when to keep checkpoints while running (None: only the one on the way out)
        self.checkpoint_policy: CheckpointPolicy | None = None
        #: the checkpoints kept while running (opened by :meth:`prepare`)
        self.keeping: RunCheckpoints | None = None
        #: the folded state out of the collector's sight while running (``run``)
        self._heap: FoldedHeap | None = None
        self._lock = asyncio.Lock()
        self._leading = False
        self._stopping = False
        self._fired: list[Event] = []
        self._end = 0  # the log's offset after the last record this replica read
        self._appended = 0  # records appended here since then

    # ---- start ------------------------------------------------------------------------

    async def prepare(self) -> int:
        """Fold the log into the step and the effects projection; records folded.

        From the latest good checkpoint kept with the log when :attr:`checkpoints` has
        one (:func:`projections.checkpoints.restart`: the World and the ledger of
        decisions waiting for their outcome are the checkpoint's, the readers are fed from
        a few minutes of log time before it), else from offset 0: the same state either
        way. The cyclic collector is paused meanwhile: every full collection would walk
        the whole folded cluster again (``streams.gcpause``)."""
        count = start = 0
        resumed = await restart(self.checkpoints, self.log, warn=_warn)
        if self.keeping is None and self.checkpoint_policy is not None:
            self.keeping = await open_run_checkpoints(self.log, self.checkpoint_policy)
        keeping = self.keeping
        with paused_gc():
            if resumed is not None:
                start = self._resume(resumed)
                for decision in resumed.pending:
                    for reader in self.readers:
                        reader(decision)
                async for record in self.log.read(resumed.back, start):
                    for reader in self.readers:
                        reader(record)
            if keeping is not None:
                keeping.start(self.step.world, self.effects, snapshot_of(resumed))
            async for record in self.log.read(start):
                self.step.on_logged(record)
                self.effects.apply(record)
                for reader in self.readers:
                    reader(record)
                if keeping is not None:
                    keeping.seen(record)
                self._end = record.offset + 1
                count += 1
        return count

    def _resume(self, resumed: Restart) -> int:
        """Take the World and the ledger of a checkpoint; its position."""
        snapshot = resumed.snapshot
        self.step.world = snapshot.world
        self.effects = snapshot.effects
        if self.applier is not None:
            self.applier.effects = snapshot.effects
        self._end = snapshot.position
        logger.info("resumed from the checkpoint at position %d", snapshot.position)
        return snapshot.position

    async def _catch_up(self) -> None:
        """On a gained lead (the lock is held): when another replica appended since this
        one last read the log, fold the whole log afresh (from its latest checkpoint, as
        :meth:`prepare`), so the World decided on and the open decisions are the log's, not
        this replica's share of it."""
        read = 0
        async for record in self.log.read(self._end):
            self._end = record.offset + 1
            read += 1
        foreign, self._appended = read != self._appended, 0
        if not foreign:
            return
        refold, effects, start = self.step.refold(), EffectsState(), 0
        resumed = await restart(self.checkpoints, self.log, warn=_warn)
        with paused_gc():
            if resumed is not None:  # the log's fold up to a checkpoint, and on from there
                refold.resume(resumed.snapshot.world)
                effects, start = resumed.snapshot.effects, resumed.snapshot.position
                for decision in resumed.pending:
                    for reader in self.readers:
                        reader(decision)
                async for record in self.log.read(resumed.back, start):
                    for reader in self.readers:
                        reader(record)
            keeping = self.keeping
            if keeping is not None:
                keeping.start(refold.world, effects, snapshot_of(resumed))
            async for record in self.log.read(start):
                refold.fold(record)
                effects.apply(record)
                for reader in self.readers:
                    reader(record)
                if keeping is not None:
                    keeping.seen(record)
        refold.adopt()
        self.effects = effects
        if self._heap is not None:  # the new fold out of the collector's sight too
            self._heap = freeze_folded()
        if self.applier is not None:
            self.applier.effects = effects
        logger.info("took over: folded the log afresh up to offset %d", self._end - 1)

    @property
    def leading(self) -> bool:
        """Whether this replica decides and acts now."""
        return self._leading and not self._stopping and self.leadership.is_leader

    async def run(self, stop: asyncio.Event, recorder: Recorder | None = None) -> None:
        """Run until ``stop`` is set (or a source fails for good), then stop cleanly:
        triggers first, then the sources (what they queued is written), then the effects
        (calls in flight finish, waiting ones are handed back), then the recorder's seal
        (after every outcome written: none may follow it), then the lead.

        While it runs, what was folded is frozen out of the cyclic collector's sight
        (:func:`streams.gcpause.freeze_folded`), and so is what survives every
        ``streams.gcpause.EVERY`` records folded since: a collection then walks what is new,
        not the whole cluster; everything is given back to the collector on the way out."""
        self._heap = freeze_folded()
        if self.config is not None:
            self.triggers = LiveTriggers(
                self.config, self.on_trigger, clock=self.clock, offset=self.offset
            )
            self.triggers.run()
        campaign = asyncio.create_task(self._campaign(), name="leadership")
        helpers = [asyncio.create_task(self._followups(), name="followups")]
        if self.keeping is not None:
            helpers.append(asyncio.create_task(self._checkpointing(), name="checkpoints"))
        if recorder is not None:
            helpers.append(asyncio.create_task(self._readiness(recorder), name="readiness"))
        try:
            if recorder is not None:  # its seal waits for the outcomes drained below
                await recorder.run(stop, release=False)
            else:
                await stop.wait()
        finally:
            self._stopping = True  # nothing more is decided from here on
            if self.triggers is not None:
                self.triggers.shutdown()
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            async with self._lock:  # a decision being written is handed to the applier
                pass
            try:
                if self.applier is not None:  # before the campaign ends: a loss halts effects
                    await self.applier.stop()
                    await self.applier.drain()
            finally:
                if recorder is not None:  # after the last outcome: a seal ends the log
                    await recorder.release()
            await self.leadership.release()  # a standby takes over without waiting
            campaign.cancel()
            await asyncio.gather(campaign, return_exceptions=True)
            self.observer.ready(False)
            heap, self._heap = self._heap, None
            if heap is not None:
                heap.thaw()
            if self.keeping is not None:
                await self.keeping.close()

    # ---- leadership -------------------------------------------------------------------

    async def _campaign(self) -> None:
        await self.leadership.run(self._gained, self._lost)

    async def _gained(self) -> None:
        async with self._lock:
            await self._catch_up()
            self._leading = True
            self.observer.leader(True)
            if self.applier is not None:
                self.applier.recover()

    async def _lost(self) -> None:
        self._leading = False  # first: no decision and no effect from here on
        if self.applier is not None:
            self.applier.halt()
        self.observer.leader(False)

    async def _readiness(self, recorder: Recorder) -> None:
        restarts: dict[str, int] = {}
        ready = False
        while True:
            if recorder.ready != ready:
                ready = recorder.ready
                self.observer.ready(ready)
            for source in recorder.sources:
                state = source.state  # every watch or list after the first is a restart
                count = max(0, state.watches - 1) + max(0, state.lists - 1)
                if count > restarts.get(source.name, 0):
                    restarts[source.name] = count
                    self.observer.watch_restarted(source.name)
            await asyncio.sleep(0.1)

    # ---- writes -----------------------------------------------------------------------

    async def write(self, records: Sequence[Event]) -> list[Event]:
        """Append records that decide nothing (effect outcomes) and fold them."""
        async with self._lock:
            return await self._append(list(records))

    async def _append(self, records: list[Event]) -> list[Event]:
        """Append as one batch and fold (the lock is held)."""
        added = await self.append(records, ())
        self.step.fold(added)
        self._noted(added)
        return added

    def _noted(self, added: Sequence[Event]) -> None:
        if self._heap is not None:
            self._heap.grew(len(added))
        keeping = self.keeping
        for record in added:
            self._appended += 1
            self.effects.apply(record)
            if keeping is not None:
                keeping.seen(record, linked=True)
            if record.type in DECISION_TYPES:
                self.decided += 1
                self.observer.decided(record)
                logger.info(
                    "decided %s", _about(record), extra=decision_fields(record.id, at=record.at)
                )
            elif record.type in EFFECT_TYPES:
                self.observer.effect(record)
                data = as_effect(record)
                logger.log(
                    logging.WARNING if record.type == "effect.failed" else logging.INFO,
                    "%s %s%s",
                    record.type,
                    _about(record),
                    f": {data['error']}" if data.get("error") else "",
                    extra=decision_fields(str(data.get("decision"))),
                )
            self.observer.record(record)

    def _act(self, added: Sequence[Event]) -> None:
        if self.applier is None or not self.leading:
            return
        for record in added:
            if record.type in DECISION_TYPES:
                self.applier.submit(record)

    async def feed(self, events: list[Event], payloads: Sequence[bytes | None] = ()) -> None:
        """Append inputs from the sources: chunks end at each ``metrics.node`` sample,
        whose pressure decisions are appended right after it. ``payloads[i]``, when
        given, is ``events[i].data`` as canonical bytes (the sources hashed them for the
        id), which the log stores instead of serialising the payload again."""
        start = 0
        held = list(payloads) + [None] * (len(events) - len(payloads))
        for index, event in enumerate(events):
            if event.type == "metrics.node" or index == len(events) - 1:
                await self._input_chunk(events[start : index + 1], held[start : index + 1])
                start = index + 1

    async def _input_chunk(self, chunk: list[Event], payloads: list[bytes | None]) -> None:
        async with self._lock:
            step, leading = self.step, self.leading
            if not leading or step.repeats(chunk[-1]):  # a repeated sample: not written
                kept = [k for k, e in enumerate(chunk) if step.writes(e, leading=False)]
                chunk, payloads = [chunk[k] for k in kept], [payloads[k] for k in kept]
                if not chunk:
                    return
            sample = chunk[-1] if leading and step.decides_on(chunk[-1]) else None
            inputs = chunk[:-1] if sample is not None else chunk
            if inputs:
                # no decision point among them (a chunk ends at one): nothing is decided
                for record in await self.append(inputs, payloads[: len(inputs)]):
                    self._input_written(record)
                    step.on_input(record, leading=leading)
            if sample is not None:
                await self._decide_sample(sample, payloads[-1])

    async def _log_append(
        self, records: list[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """The log's own append (until ``tide run`` swaps in its chain writer)."""
        return await append_with_payloads(self.log, records, payloads)

    async def _decide_sample(self, sample: Event, payload: bytes | None = None) -> None:
        """A sample and the decisions it causes, written as one batch (the lock is held).

        The step folds the sample *before* it is written (deciding needs it folded:
        :meth:`~controller.policy.step.Step.on_input_ahead`), so that a kill can never
        leave a sample on the log without the decisions it caused: replay would re-derive
        them, and no restart could write them at their place."""
        batch = self.step.on_input_ahead(sample)
        added = await self.append(batch, [payload])
        self.step.fold(added)  # the decisions (the sample is folded already)
        written: list[Event] = []
        for record in added:
            if record.id == sample.id:
                self._input_written(record)
            else:
                written.append(record)
        if written:
            self._noted(written)
            self._act(written)

    def _input_written(self, record: Event) -> None:
        self._appended += 1
        if self._heap is not None:
            self._heap.grew()
        self.observer.append_lag(max(0.0, (self.clock.now() - record.at).total_seconds()))
        self.observer.record(record)
        self.effects.apply(record)
        if self.keeping is not None:
            self.keeping.seen(record, linked=True)

    async def on_trigger(self, trigger: Event) -> None:
        """A trigger fired (stamped with its scheduled time): decide and write as one batch.

        Firings due at the same instant are taken in the order the virtual clock takes
        them (time, declared rank, name): each waits :data:`SETTLE` for the others."""
        self._fired.append(trigger)
        await asyncio.sleep(SETTLE)
        async with self._lock:
            fired, self._fired = self._fired, []
            for record in sorted(fired, key=self._trigger_order):
                await self._decide(record)

    def _trigger_order(self, trigger: Event) -> tuple[object, ...]:
        name = str(as_trigger(trigger).get("trigger"))
        ranks = {s.name: s.rank for s in self.triggers.triggers.specs} if self.triggers else {}
        return (trigger.at, ranks.get(name, 0), name)

    async def _decide(self, trigger: Event) -> None:
        """One trigger through the step (the lock is held)."""
        if not self.leading:
            return
        began = time.perf_counter()
        records = self.step.on_trigger(trigger)
        self.observer.session(time.perf_counter() - began)
        if not records:
            return
        added = await self._append(records)
        lag = (self.clock.now() - trigger.at).total_seconds()
        self.observer.append_lag(max(0.0, lag))
        self._act(added)

    async def _checkpointing(self) -> None:
        """Keep a checkpoint whenever one is due, between two writes (the lock held)."""
        keeping = self.keeping
        assert keeping is not None
        while True:
            await asyncio.sleep(CHECKPOINT_POLL)
            if keeping.due:
                async with self._lock:
                    await keeping.save_if_due(self.step.world)

    async def _followups(self) -> None:
        while True:
            async with self._lock:
                while self.leading:
                    followup = self.step.next_followup()
                    if followup is None or followup.at > self.clock.now():
                        break
                    records = self.step.on_followup(followup)
                    if records:
                        self._act(await self._append(records))
            await asyncio.sleep(FOLLOWUP_POLL)


def _about(record: Event) -> str:
    """``evict batch/train-0`` / ``taint hot``: what a decision or outcome is about."""
    if record.type in EFFECT_TYPES:  # an outcome names its target (validation requires it)
        effect = as_effect(record)
        return f"{effect.get('kind') or record.type} {effect['target']}"
    data = as_decision(record)
    kind = str(data.get("kind") or record.type.removeprefix("decision."))
    if "pod" in data:
        return f"{kind} {data.get('namespace')}/{data.get('pod')}"
    return f"{kind} {data.get('node', '')}".rstrip()
