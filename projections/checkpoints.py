"""Checkpoints by position: when a writer keeps one, which it keeps, and where a reader starts.

Why: every question about a log (``tide state``, ``replay --from``, ``report``, a restart
of ``tide run``) would otherwise fold it from offset 0, a cost that grows with the log.
A writer keeps the fold of the log's first *P* records at positions *P* along the log
(the bytes: :mod:`projections.checkpoint_codec`; where they are kept: the log's
:class:`~streams.backends.checkpoints.CheckpointStore`), and a reader starts from the
nearest one at or before what it needs. The answer is always the one a fold from offset 0
gives: a checkpoint is exactly that fold, and one that cannot be trusted is skipped.

* :class:`CheckpointPolicy`: every ``every_records`` records and every ``every_minutes``
  of log time (whichever comes first), and at the end of each writer's run; the newest
  ``keep`` are kept, and of the older ones up to ``thinned``, spread evenly along the log. Read
  from the environment by :meth:`CheckpointPolicy.from_env` (``docs/checkpoints.md``).
* :class:`Keeper`: fed every record after a checkpoint (or from offset 0), it folds what
  a checkpoint holds besides the World (the ledger of decisions waiting for their outcome,
  the chain checker, the recorder's known objects, the log time) and saves one when due;
  the World is the caller's (a simulation's own, or a fold of the log:
  :func:`keep_checkpoints`).
* :func:`nearest`: the latest good checkpoint at or before a position (and, for a question
  asked at a log time, one whose records are all at or before it). A corrupt, truncated,
  foreign or version-mismatched one is skipped for an earlier one, with one warning.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from projections.base import CheckpointError, paused_gc
from projections.checkpoint_codec import (
    Pieces,
    Snapshot,
    decode_effects,
    decode_known,
    decode_snapshot,
    encode_snapshot,
    read_header,
    world_part,
)
from projections.effects import EffectsState
from projections.known import KnownObjects
from projections.rowcache import RowCache
from projections.world import World
from streams.backends.checkpoints import CheckpointStore, Stored
from streams.chain_check import ChainChecker
from streams.codec import stored_events
from streams.events import Event, format_time, parse_time
from streams.log import EventLog
from streams.paging import PAGE, RowPages

#: how a warning about a checkpoint skipped is told (one line)
Warn = Callable[[str], None]
_T = TypeVar("_T")

#: the narrowest span of records the older checkpoints are thinned to one per, when no
#: checkpoint is kept every so many records (:meth:`CheckpointPolicy.retained`)
GRID = 16_384
#: the environment variables :meth:`CheckpointPolicy.from_env` reads
ENV = {
    "every_records": "TIDE_CHECKPOINT_RECORDS",
    "every_minutes": "TIDE_CHECKPOINT_MINUTES",
    "keep": "TIDE_CHECKPOINT_KEEP",
    "thinned": "TIDE_CHECKPOINT_THINNED",
}


@dataclass(frozen=True)
class CheckpointPolicy:
    """When a writer keeps a checkpoint, and which it keeps (see the module docstring).

    ``every_records`` or ``every_minutes`` 0 turns that trigger off (both 0: a checkpoint
    only at the end of each writer's run).
    """

    every_records: int = 100_000
    every_minutes: float = 10.0
    keep: int = 8
    thinned: int = 16

    def __post_init__(self) -> None:
        if self.every_records < 0 or self.every_minutes < 0:
            raise ValueError("checkpoint intervals cannot be negative")
        if self.keep < 1 or self.thinned < 0:
            raise ValueError("a checkpoint retention keeps at least the newest one")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CheckpointPolicy:
        """The policy the environment sets (``TIDE_CHECKPOINT_RECORDS``, ``_MINUTES``,
        ``_KEEP``, ``_THINNED``), the defaults for those unset.

        Raises:
            ValueError: a value that is not a number of the right kind, naming its variable.
        """
        env = os.environ if environ is None else environ
        values: dict[str, float | int] = {}
        for field, name in ENV.items():
            text = env.get(name, "").strip()
            if not text:
                continue
            try:
                value = float(text) if field == "every_minutes" else int(text)
            except ValueError:
                raise ValueError(f"{name}={text!r}: not a number") from None
            least = 1 if field == "keep" else 0
            if value < least:
                raise ValueError(f"{name}={text!r}: must be at least {least}")
            values[field] = value
        return cls(**values)  # type: ignore[arg-type]

    def due(self, records: int, span: timedelta) -> bool:
        """Whether a checkpoint is due ``records`` records and ``span`` of log time after
        the last one."""
        if self.every_records and records >= self.every_records:
            return True
        return (
            bool(self.every_minutes)
            and records > 0
            and span >= timedelta(minutes=self.every_minutes)
        )

    def retained(self, positions: Sequence[int]) -> list[int]:
        """Which of ``positions`` (ascending) to keep: the newest :attr:`keep`, and of the
        older ones at most :attr:`thinned`, spread evenly along the log: the first of each
        span of :attr:`every_records` records (:data:`GRID` when that trigger is off) that
        holds one, the span doubled until the spans from the oldest to the newest of them
        are no more than :attr:`thinned` (so it is under twice their stretch of the log /
        ``thinned``). The span only widens as the log grows, and what a span keeps, the
        first of its first half holding one, its halves kept too: whatever was dropped is
        dropped for good (keeping the rest again and again keeps what the whole list
        would), and a reader of any moment, or a cut of ``replay --jobs`` anywhere along
        the log, finds one within two spans."""
        newest = list(positions[-self.keep :])
        older = positions[: -self.keep] if len(positions) > self.keep else []
        if not older or not self.thinned:
            return newest
        span = self.every_records or GRID
        while older[-1] // span - older[0] // span >= self.thinned:
            span *= 2
        return [
            p for i, p in enumerate(older) if not i or p // span != older[i - 1] // span
        ] + newest


class Keeper:
    """Folds what a checkpoint holds besides the World and saves checkpoints when due.

    Args:
        store: where they are kept.
        policy: when and which.
        world: the World the caller folds the same records into (it must be at the
            keeper's position whenever :meth:`save` is called).
        start: the checkpoint the fold resumed from (None: offset 0).
        effects: the ledger the caller folds the same records into (a live loop's own;
            then :meth:`feed` leaves it to the caller); by default the keeper's own.
    """

    def __init__(
        self,
        store: CheckpointStore,
        policy: CheckpointPolicy,
        *,
        world: World,
        start: Snapshot | None = None,
        effects: EffectsState | None = None,
    ) -> None:
        self.store, self.policy, self.world = store, policy, world
        self._folds_effects = effects is None
        if effects is None:
            effects = start.effects if start is not None else EffectsState()
        self.effects = effects
        chain = start.chain if start is not None else {}
        #: None when resumed from a checkpoint without a chain state (no check possible)
        self.chain: ChainChecker | None = (
            None if chain is None else ChainChecker.resumed(chain) if chain else ChainChecker()
        )
        #: the recorder's fold (None when resumed from a checkpoint without it: then the
        #: checkpoints this keeper saves hold none either, and a recorder folds from 0)
        self.known: KnownObjects | None = KnownObjects() if start is None else start.known_objects()
        self.position = start.position if start is not None else 0
        self.at: datetime | None = parse_time(start.at) if start is not None and start.at else None
        self.last: str | None = start.last if start is not None else None
        self._saved = self.position  # the position of the last checkpoint (kept or resumed)
        self._saved_at = self.at
        self.written = 0
        #: the rows of the last checkpoint's cluster (only the tasks and jobs moved since are
        #: encoded again)
        self.rows = RowCache()
        #: World parts encoded ahead of the records they fold (:meth:`hold`), oldest first
        self._held: list[tuple[int, Pieces]] = []
        #: the position the last checkpoint was held or saved at, and its log time
        self._planned, self._planned_at = self.position, self.at

    def feed(self, record: Event, payload: bytes | None = None, *, linked: bool = False) -> None:
        """Fold one more record of the log (in offset order), ``payload`` its stored
        payload bytes when known (:meth:`streams.chain_check.ChainChecker.feed`);
        ``linked``: its writer linked it to the record before just now (the chain state
        moves on without hashing it again: :meth:`~streams.chain_check.ChainChecker.linked`)."""
        if self._folds_effects:
            self.effects.apply(record)
        if self.known is not None:
            self.known.fold_one(record)
        if self._saved_at is None:
            self._saved_at = record.at
        if self.chain is not None:
            if linked:
                self.chain.linked(record)
            else:
                self.chain.feed(record, None, payload)
        if self.at is None or record.at > self.at:
            self.at = record.at
        self.position, self.last = record.offset + 1, record.id

    @property
    def due(self) -> bool:
        """Whether a checkpoint is due at the keeper's position."""
        at, since = self.at, self._saved_at
        span = at - since if at is not None and since is not None else timedelta(0)
        return self.policy.due(self.position - self._saved, span)

    def due_at(self, position: int, at: datetime | None) -> bool:
        """Whether a checkpoint is due at ``position`` (records up to log time ``at``),
        ahead of the records fed so far (a writer whose World folds records before they
        reach the keeper)."""
        since = self._planned_at if self._planned_at is not None else self._saved_at
        span = at - since if at is not None and since is not None else timedelta(0)
        return self.policy.due(position - max(self._planned, self._saved), span)

    def hold(self, position: int, world: World) -> None:
        """Encode ``world`` (the fold of the log's first ``position`` records) now, to be
        the World of the checkpoint at ``position`` once the keeper is fed that far
        (:attr:`ready`, then :meth:`save_held`)."""
        if world.position != position:
            raise ValueError(f"a World at {world.position} is not the fold of {position} records")
        self._held.append((position, world_part(world, cache=self.rows)))
        self._planned = position
        self._planned_at = max((r for r in (self.at, self._planned_at) if r), default=None)

    def plan_time(self, at: datetime | None) -> None:
        """The log time reached where the last :meth:`hold` was (its records' latest)."""
        self._planned_at = at

    @property
    def ready(self) -> bool:
        """Whether the oldest World held is at the keeper's position now."""
        return bool(self._held) and self._held[0][0] == self.position

    async def save_held(self) -> None:
        """Keep the checkpoint of the oldest World held (:attr:`ready` must be true)."""
        assert self.ready
        _, part = self._held.pop(0)
        await self.save(world=part)

    async def save(self, *, world: Pieces | None = None) -> None:
        """Keep a checkpoint at the keeper's position (the World must be there, or
        ``world`` its part encoded when it was)."""
        snapshot = Snapshot(
            position=self.position,
            at=format_time(self.at) if self.at is not None else "",
            last=self.last,
            world=self.world,
            effects=self.effects,
            chain=self.chain.state() if self.chain is not None else None,
            known=self.known.dump() if self.known is not None else None,
        )
        data = encode_snapshot(snapshot, world=world, cache=self.rows)
        await self.store.save_at(self.position, snapshot.at, data)
        self._saved, self._saved_at = self.position, self.at
        self.written += 1

    async def finish(self) -> None:
        """At the end of a writer's run: a checkpoint at the head (unless one is there),
        then the retention."""
        fresh = self.position > self._saved or not await self._kept(self.position)
        if fresh and self.position > 0:
            await self.save()
        positions = [s.position for s in await self.store.stored()]
        kept = set(self.policy.retained(positions))
        dropped = [p for p in positions if p not in kept]
        if dropped:
            await self.store.drop_at(dropped)

    async def _kept(self, position: int) -> bool:
        return any(s.position == position for s in await self.store.stored())


async def stored_records(log: EventLog, start: int) -> AsyncIterator[tuple[Event, bytes | None]]:
    """The log's records from ``start`` on, each with its payload's stored bytes when the
    backend keeps them (as :meth:`streams.paging.LogReader.stored`, for async callers)."""
    if not isinstance(log, RowPages):
        async for event in log.read(start):
            yield event, None
        return
    offset = max(start, 0)
    while True:
        rows = await log.read_page(offset, PAGE)
        for row, event in zip(rows, stored_events(rows), strict=True):
            data = row[6]
            yield event, data if event.v == row[5] and isinstance(data, bytes) else None
        if len(rows) < PAGE:
            return
        offset = rows[-1][0] + 1


async def keep_checkpoints(
    log: EventLog,
    store: CheckpointStore,
    *,
    policy: CheckpointPolicy | None = None,
    warn: Warn | None = None,
) -> Keeper:
    """Fold ``log`` from its latest good checkpoint to its head, keeping checkpoints on
    the way as ``policy`` says (default: :meth:`CheckpointPolicy.from_env`) and one at the
    head; returns the keeper (its ``world`` is the log's fold)."""
    policy = policy if policy is not None else CheckpointPolicy.from_env()
    head = await log.head()
    start = await nearest(store, log, upto=head, warn=warn)
    keeper = Keeper(store, policy, world=start.world if start else World(), start=start)
    apply = keeper.world.apply
    with paused_gc():
        async for record, payload in stored_records(log, keeper.position):
            apply(record)
            keeper.feed(record, payload)
            if keeper.due:
                await keeper.save()
    await keeper.finish()
    return keeper


async def nearest(
    store: CheckpointStore | None,
    log: EventLog,
    *,
    upto: int | None,
    at: datetime | None = None,
    warn: Warn | None = None,
) -> Snapshot | None:
    """The latest good checkpoint at or before position ``upto`` (None: the head) and, with
    ``at``, whose records are all at or before that time; None if there is none.

    Good means: its header, digest and version are this tide's, its state decodes into a
    default World, and its last record is the log's record at its position - 1 (not
    another log's). A bad one is skipped for an earlier one; ``warn`` hears one line for
    the first skipped (naming its position and why) and how many in all."""
    if store is None:
        return None
    try:
        kept = await store.stored()
    except store.unreadable:
        return None
    head = await log.head()
    limit = head if upto is None else min(upto, head)
    skipped: list[str] = []
    found: Snapshot | None = None
    for info in reversed(kept):
        if info.position > limit or info.position <= 0:
            continue
        if at is not None and (not info.at or parse_time(info.at) > at):
            continue
        why = await _trust(store, log, info.position)
        if isinstance(why, str):
            skipped.append(f"checkpoint at position {info.position}: {why}")
            continue
        found = why
        break
    if skipped and warn is not None:
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        where = f"position {found.position}" if found is not None else "offset 0"
        warn(f"warning: skipped {skipped[0]}{more}; folding from {where}")
    return found


async def _trust(store: CheckpointStore, log: EventLog, position: int) -> Snapshot | str:
    """The checkpoint at ``position`` if it can be trusted, else why not."""
    return await _checked(store, log, position, _snapshot_of)


def _snapshot_of(data: bytes) -> tuple[int, str | None, Snapshot]:
    snapshot = decode_snapshot(data)
    return snapshot.position, snapshot.last, snapshot


def _known_of(data: bytes) -> tuple[int, str | None, KnownObjects | None]:
    header = read_header(data)
    return header.position, header.last, decode_known(data)


async def _checked(
    store: CheckpointStore,
    log: EventLog,
    position: int,
    decode: Callable[[bytes], tuple[int, str | None, _T]],
) -> _T | str:
    """What ``decode`` reads of the checkpoint at ``position`` (its position, last record
    id and value) if the checkpoint can be trusted, else why not."""
    try:
        data = await store.load_at(position)
    except store.unreadable as exc:
        return f"unreadable ({exc})"
    if data is None:
        return "gone"
    try:
        at, last_id, value = decode(data)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        return str(exc)  # CheckpointError is a ValueError
    if at != position:
        return f"its state is at position {at}"
    last = [event async for event in log.read(position - 1, position)]
    if not last or last[0].id != last_id:
        return "its last record is not this log's (a checkpoint of another log)"
    return value


async def nearest_known(
    store: CheckpointStore | None, log: EventLog, *, warn: Warn | None = None
) -> tuple[int, KnownObjects] | None:
    """The recorder's fold (:class:`projections.known.KnownObjects`) of the latest good
    checkpoint that holds one, and its position; None if none does (then the recorder
    folds from offset 0). Good as for :func:`nearest`, checked without decoding the World;
    ``warn`` hears one line about the bad ones skipped."""
    if store is None:
        return None
    try:
        kept = await store.stored()
    except store.unreadable:
        return None
    head = await log.head()
    skipped: list[str] = []
    found: tuple[int, KnownObjects] | None = None
    for info in reversed(kept):
        if not 0 < info.position <= head:
            continue
        why = await _checked(store, log, info.position, _known_of)
        if isinstance(why, str):
            skipped.append(f"checkpoint at position {info.position}: {why}")
            continue
        if why is not None:
            found = info.position, why
            break
    if skipped and warn is not None:
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        where = f"position {found[0]}" if found is not None else "offset 0"
        warn(f"warning: skipped {skipped[0]}{more}; folding the known objects from {where}")
    return found


@dataclass(frozen=True)
class Listed:
    """One checkpoint as ``tide log checkpoints`` shows it: ``problem`` None when its
    header, version and digest are good and its last record is the log's."""

    position: int
    at: str
    size: int
    problem: str | None
    #: its layout's version (:data:`projections.checkpoint_codec.READS`; 0 when unread)
    version: int = 0


async def listing(store: CheckpointStore | None, log: EventLog) -> list[Listed]:
    """The checkpoints kept with ``log``, lowest position first, each checked without
    decoding its state (the header, the version, the digest of its bytes, its last
    record against the log's). Reads only."""
    if store is None:
        return []
    return [await checked(store, log, info) for info in await store.stored()]


async def checked(store: CheckpointStore, log: EventLog, info: Stored) -> Listed:
    """One checkpoint kept with ``log``, checked as :func:`listing` checks each."""
    problem: str | None = None
    version = 0
    data = await store.load_at(info.position)
    try:
        if data is None:
            raise CheckpointError("gone")
        header = read_header(data)
        version = header.version
        if hashlib.sha256(data[header.body :]).hexdigest() != header.digest:
            raise CheckpointError("its digest does not match (corrupt or truncated)")
        if header.position != info.position:
            raise CheckpointError(f"its state is at position {header.position}")
        last = [event async for event in log.read(info.position - 1, info.position)]
        if not last or last[0].id != header.last:
            raise CheckpointError("its last record is not this log's")
    except CheckpointError as exc:
        problem = str(exc)
    return Listed(info.position, info.at, info.size, problem, version)


@dataclass
class Restart:
    """Where a live loop restarts (:func:`restart`): the checkpoint to resume its World
    and ledger from, and what its other readers (the effector's guard rails, which look
    ``window`` back in log time) are fed first: the decisions that were waiting for their
    outcome at ``back``, then the records from ``back`` to the checkpoint."""

    snapshot: Snapshot
    back: int
    pending: list[Event]


async def restart(
    store: CheckpointStore | None,
    log: EventLog,
    *,
    window: timedelta = timedelta(minutes=5),
    warn: Warn | None = None,
) -> Restart | None:
    """The latest good checkpoint of ``log`` and how far back its other readers start: the
    latest good checkpoint whose records are all ``window`` or more before the first one's
    (none: offset 0). Every record before ``back`` is then older than ``window`` before the
    restart, and the decisions still open there are handed over (``pending``)."""
    snapshot = await nearest(store, log, upto=None, warn=warn)
    if snapshot is None or store is None:
        return None
    back, pending = 0, []
    if snapshot.at:
        limit = parse_time(snapshot.at) - window
        for info in reversed(await store.stored()):
            if info.position >= snapshot.position or not info.at or parse_time(info.at) > limit:
                continue
            data = await store.load_at(info.position)
            try:
                effects = decode_effects(data) if data is not None else None
            except (ValueError, KeyError, TypeError) as exc:
                if warn is not None:
                    warn(f"warning: skipped checkpoint at position {info.position}: {exc}")
                continue
            if effects is not None:
                back, pending = info.position, [p.decision for p in effects.oldest_pending()]
                break
    return Restart(snapshot, back, pending)
