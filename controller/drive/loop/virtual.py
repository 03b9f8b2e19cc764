"""The loop on a virtual clock: a time-ordered heap around :class:`~controller.policy.step.Step`.

Inputs (a recording), the effector's later effects, the triggers and the pressure
follow-ups are merged into one stream in time order. At equal times the order is: inputs,
effects due, triggers, follow-ups — then by a sequence number, so a run is a pure function
of its inputs and configuration. Each record goes through the step; what the step says to
write is appended to the log (one batch per trigger with its decisions) and folded back;
every written decision goes to the effector once, whose immediate outcome is written at
once and whose later effects join the heap (an effector that checks them again when due,
:class:`DueChecker`, may drop or rebuild each then). The clock only moves forward, to each
item's time.

An input is written first, then folded and decided
(:meth:`~controller.policy.step.Step.on_input`), its decisions written next: the run's
log is private (a :class:`~controller.simulate.spool.Spool` cuts batches of its own
anyway), so nothing needs a sample and its decisions in one append as the live loop does
(:meth:`~controller.policy.step.Step.on_input_ahead`). The order is kept because the
fold then carries the offset the log gave (the World a simulation leaves is the
checkpoint of its log: its position must be the log's) and a repeated input the log drops
by id is neither folded nor decided. The decisions are the same either way.

Inputs may also be *fed* lazily (:meth:`VirtualLoop.feed`) from an iterator in time
order: the loop reads ahead only until the inputs it holds reach ``slack`` past the
current time, so a day's recording is never all in memory. Every input due is in the heap
before its time comes, so the order is the one a stable sort of all inputs would give;
an input more than ``slack`` out of time order cannot be placed and stops the run
(:class:`OutOfOrderError`). A fed watch event waits in the heap with its payload encoded
(:class:`_Packed`): a recording's snapshot is tens of thousands of objects at one time,
all read ahead at once, and as decoded dicts (~20 KB a pod) they were most of a 1,000-node
simulation's peak memory.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Generic, NamedTuple, Protocol, TypeVar, runtime_checkable

import orjson

from controller.drive.clock import VirtualClock
from controller.drive.effector.port import Effector, NoEffector
from controller.drive.triggers.cursor import TriggerSet, firing_event
from controller.policy.step import Step
from streams.events import DECISION_TYPES, Event, build_event, format_time

_INPUT, _EFFECT = 0, 1


class SyncLog(Protocol):
    """Where the loop writes: a synchronous append that assigns offsets
    (:class:`streams.backends.memory.MemoryLog`, :class:`controller.simulate.spool.Spool`)."""

    def append_now(self, events: Sequence[Event]) -> list[Event]:
        """Append a batch; return the records added, with offsets."""


@runtime_checkable
class EncodedSyncLog(SyncLog, Protocol):
    """A :class:`SyncLog` that can also store payloads already serialised (the spool)."""

    def append_encoded_now(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """:meth:`append_now`; ``payloads[i]``, unless None, is ``events[i]``'s canonical
        payload bytes (:func:`streams.codec.encode_payload`)."""


@runtime_checkable
class EncodedObserver(Protocol):
    """An effector that can take a written record's payload bytes along (the simulated
    cluster keeps watched objects as JSON bytes: it cuts them out instead of encoding)."""

    def observe_encoded(self, record: Event, payload: bytes) -> None:
        """``observe(record)``; ``payload`` is its payload's canonical bytes, also the
        payload's own key order (a :class:`Fed` input's)."""


@runtime_checkable
class DueChecker(Protocol):
    """An effector whose later effects are checked again when due (the simulated cluster:
    a bound pod deleted before it starts does not start)."""

    def due(self, record: Event) -> Event | None:
        """The later effect ``record`` when its time comes: the record to write, or None."""


L = TypeVar("L", bound=SyncLog)


class Fed(NamedTuple):
    """A fed input with its payload's canonical bytes, which are also the decoded payload's
    own key order (its recording line was canonical: :func:`streams.recording.is_canonical`).
    The loop packs it and the log stores it from those bytes instead of serialising the
    payload again."""

    event: Event
    payload: bytes


class _Packed(NamedTuple):
    """A fed input waiting in the heap, its payload kept as JSON bytes (in the dict's own
    key order: decoding gives an equal dict, keys in the same order); ``canonical``: the
    bytes are the payload's canonical ones too (it came as a :class:`Fed`)."""

    type: str
    at: datetime
    id: str
    payload: bytes
    cause: str | None
    v: int
    canonical: bool

    @classmethod
    def of(cls, event: Event, payload: bytes | None) -> _Packed:
        canonical = payload is not None
        raw = payload if payload is not None else orjson.dumps(event.data)
        return cls(event.type, event.at, event.id, raw, event.cause, event.v, canonical)

    def unpack(self) -> tuple[Event, bytes | None]:
        """The input, and its payload's canonical bytes when known."""
        data = orjson.loads(self.payload)
        event = build_event(self.type, self.at, self.id, data, self.cause, -1, self.v)
        return event, self.payload if self.canonical else None


#: fed inputs of these types wait packed (the large ones)
_PACKED_TYPES = frozenset({"k8s.watch"})


class OutOfOrderError(ValueError):
    """A fed input came more than the loop's slack after a later one."""


class VirtualLoop(Generic[L]):
    """Runs a step over inputs on a virtual clock, writing to an in-memory log.

    Args:
        step: the step (its World is folded as records are written).
        log: where records are written (offsets assigned here).
        effector: who carries out decisions (default: nobody).
        triggers: the configuration's triggers, registered at the start (default: none).
        prepare: called on each input when it is due, before it is written; returns the
            record to write instead, or None to drop it (a simulator's inputs that depend
            on what the run did, e.g. usage freed by evictions). Default: inputs as given.
    """

    def __init__(
        self,
        step: Step,
        *,
        log: L,
        effector: Effector | None = None,
        triggers: TriggerSet | None = None,
        prepare: Callable[[Event], Event | None] | None = None,
    ) -> None:
        self.step = step
        self.prepare = prepare
        self.log = log
        self.effector = effector if effector is not None else NoEffector()
        self.triggers = triggers
        self.clock: VirtualClock | None = None
        #: every decision written, in order (unless ``on_decision`` takes them)
        self.decisions: list[Event] = []
        #: given: each decision written goes here instead of into :attr:`decisions` (a
        #: long run's decisions, with their evidence, are not all kept in memory)
        self.on_decision: Callable[[Event], None] | None = None
        #: called between two steps, when every record written is folded (a simulation
        #: keeps its log's checkpoints there: ``controller.simulate.spool.Spool.at_rest``)
        self.at_rest: Callable[[], None] | None = None
        #: how many decisions were written
        self.decided = 0
        self._queue: list[tuple[datetime, int, int, Event | _Packed]] = []
        self._seq = 0
        self._feed: Iterator[Event | Fed] | None = None
        self._append_encoded = log.append_encoded_now if isinstance(log, EncodedSyncLog) else None
        self._slack = timedelta(0)
        self._horizon: datetime | None = None  # the latest ``at`` fed so far
        self._fed = 0

    @property
    def effector(self) -> Effector:
        """Who carries out decisions and observes every record written."""
        return self._effector

    @effector.setter
    def effector(self, effector: Effector) -> None:
        self._effector = effector
        # looked up once: a runtime protocol check per record costs microseconds
        self._observe_encoded = (
            effector.observe_encoded if isinstance(effector, EncodedObserver) else None
        )
        self._due = effector.due if isinstance(effector, DueChecker) else None

    def feed(self, inputs: Iterator[Event | Fed], *, slack: timedelta) -> datetime | None:
        """Take inputs lazily from ``inputs`` (in time order, at most ``slack`` out of
        it); returns the earliest input's time (None if there is none). Reads ahead to
        ``slack`` past the first input's time."""
        self._feed, self._slack = inputs, slack
        self._pull(None)
        return self._queue[0][0] if self._queue else None

    def _pull(self, now: datetime | None) -> None:
        """Read fed inputs until one lies more than ``slack`` past ``now`` (default: the
        earliest input held), or none is left."""
        while self._feed is not None:
            if now is None and self._queue:
                now = self._queue[0][0]
            horizon = self._horizon
            if now is not None and horizon is not None and horizon > now + self._slack:
                return
            given = next(self._feed, None)
            if given is None:
                self._feed = None
                return
            record, payload = given if isinstance(given, Fed) else (given, None)
            self._fed += 1
            if self.clock is not None and record.at <= self.clock.now():
                raise OutOfOrderError(
                    f"input {self._fed} ({record.type} at {format_time(record.at)}) comes after "
                    f"inputs up to {format_time(horizon or record.at)}: more than "
                    f"{self._slack} out of time order (sort the recording)"
                )
            if horizon is None or record.at > horizon:
                self._horizon = record.at
            self._seq += 1
            # only a packed input keeps its payload's bytes (small ones are stored re-encoded)
            item: Event | _Packed = record
            if record.type in _PACKED_TYPES and record.offset < 0:
                item = _Packed.of(record, payload)
            heapq.heappush(self._queue, (record.at, _INPUT, self._seq, item))

    def push(self, records: Iterable[Event], *, rank: int = _INPUT) -> None:
        """Queue records for their ``at`` (inputs by default)."""
        for record in records:
            self._seq += 1
            heapq.heappush(self._queue, (record.at, rank, self._seq, record))

    def write(
        self, records: list[Event], payloads: list[bytes | None] | None = None
    ) -> list[Event]:
        """Append ``records`` as one batch; fold and show the effector what was added.
        ``payloads``: their canonical payload bytes where known (for a log that stores them)."""
        if payloads is not None and self._append_encoded is not None:
            added = self._append_encoded(records, payloads)
        else:
            added = self.log.append_now(records)
        observe = self._effector.observe
        encoded = self._observe_encoded
        if payloads is None or encoded is None or len(added) != len(records):
            for record in added:
                observe(record)
            return added
        for record, payload in zip(added, payloads, strict=True):
            if payload is None:
                observe(record)
            else:
                encoded(record, payload)
        return added

    def run(self, *, until: datetime | None) -> list[Event]:
        """Process everything due up to ``until`` (None: until nothing is left, only
        without triggers; or, with fed inputs, the last input's time). Returns the
        decisions written."""
        step = self.step
        triggers = self.triggers
        fed = self._horizon is not None
        if until is None and triggers is not None and not fed:
            raise ValueError("a loop with triggers needs an end: they fire forever")
        at_rest = self.at_rest
        while True:
            if at_rest is not None:
                at_rest()
            if self._feed is not None:
                self._pull(None)
            if until is None and fed and self._feed is None:
                until = self._horizon  # fed to the end: stop at the last input
            next_trigger = triggers.peek() if triggers is not None else None
            next_item = self._queue[0][0] if self._queue else None
            followup = step.next_followup()
            times = [t for t in (next_item, next_trigger) if t is not None]
            if followup is not None:
                times.append(followup.at)
            if not times:
                break
            now = min(times)
            if until is not None and now > until:
                break
            self._tick(now)
            if next_item == now:
                _, rank, _, item = heapq.heappop(self._queue)
                record, payload = item.unpack() if isinstance(item, _Packed) else (item, None)
                if rank == _EFFECT and self._due is not None:
                    checked = self._due(record)
                    if checked is None:
                        continue
                    record = checked
                if rank == _INPUT and self.prepare is not None:
                    prepared = self.prepare(record)
                    if prepared is None:
                        continue
                    if prepared is not record:
                        payload = None
                    record = prepared
                for added in self.write([record], None if payload is None else [payload]):
                    self._emit(step.on_input(added))
            elif next_trigger == now:
                assert triggers is not None
                for firing in triggers.due(now):
                    trigger = firing_event(firing)
                    self._commit(step.on_trigger(trigger))
            else:
                assert followup is not None
                self._commit(step.on_followup(followup))
        return self.decisions

    def _tick(self, now: datetime) -> None:
        if self.clock is None:
            self.clock = VirtualClock(now)
        else:
            self.clock.advance(now)

    def _commit(self, records: list[Event]) -> None:
        """Write a trigger with its decisions (one batch), then carry the decisions out."""
        if not records:
            return
        added = self.write(records)
        self.step.fold(added)
        self._effect([e for e in added if e.type in DECISION_TYPES])

    def _emit(self, decisions: list[Event]) -> None:
        """Write decisions caused by an input, then carry them out."""
        if not decisions:
            return
        added = self.write(decisions)
        self.step.fold(added)
        self._effect(added)

    def _effect(self, decisions: list[Event]) -> None:
        for decision in decisions:
            self.decided += 1
            if self.on_decision is not None:
                self.on_decision(decision)
            else:
                self.decisions.append(decision)
            effects = self.effector.apply(decision)
            if effects.now:
                self.step.fold(self.write(effects.now))
            self.push(effects.later, rank=_EFFECT)
