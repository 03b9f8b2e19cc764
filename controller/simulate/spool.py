"""A simulation's log written out as it goes, in batches, instead of kept in memory.

:class:`~streams.backends.memory.MemoryLog` keeps every record of a run, ~5 KB each: a
day of a 1,000-node cluster does not fit. A :class:`Spool` is what the virtual loop
writes to instead when the caller wants the records on a log (``tide simulate --log``)
or not at all: it assigns offsets as a MemoryLog does (0, 1, 2, …, so the run folds the
same records with the same offsets), holds the records of one batch, and appends each
full batch to the log at ``url`` (its own event loop, kept open for the run).

Checkpoints: when the log was empty at the start, the run's own World is the fold of the
log's records, so the spool keeps the log's checkpoints itself (:meth:`Spool.at_rest`
holds the World's part when one is due, the records written feed the rest of it,
:class:`projections.checkpoints.Keeper`) instead of the log being folded again after the
run; a log that took fewer records than written (another run's records were there) gets
none here (``controller.compose.simulated.save_checkpoint`` folds it after the run).

Appends stay idempotent by id, as the log port requires: an id is a hash of the record's
content *including its time*, so a repeat can only come at the same ``at``; the loop
writes in time order, so the ids of the last ``keep`` of virtual time suffice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from types import TracebackType

from projections.checkpoints import CheckpointPolicy, Keeper, stored_records
from projections.world import World
from streams.backends import open_log
from streams.backends.checkpoints import CheckpointStore, open_log_store
from streams.chain import ChainWriter
from streams.codec import check_appendable
from streams.events import Event
from streams.log import EventLog

#: records held before an append: held with their payloads decoded (a pod ~20 KB), so a
#: batch of a recording's snapshot is tens of MB until written
BATCH = 1_000
KEEP = timedelta(minutes=10)


class Spool:
    """Offsets assigned here, records appended to ``url`` (None: counted, then dropped)
    ``batch`` at a time. A context manager: the last batch is written on a clean exit."""

    def __init__(
        self,
        url: str | None,
        *,
        batch: int = BATCH,
        keep: timedelta = KEEP,
        run: str | None = None,
        another_run: bool = False,
    ) -> None:
        self.url = url
        self.run = run
        self.another_run = another_run
        self._writer: ChainWriter | None = None
        self.count = 0  # records appended so far (the next offset)
        self.written = 0  # records the log at ``url`` took as new
        self._batch = batch
        self._keep = keep
        self._pending: list[Event] = []
        self._payloads: list[bytes | None] = []  # the canonical payload bytes of each, if known
        self._ids: dict[datetime, set[str]] = {}
        self._latest: datetime | None = None
        self._runner: asyncio.Runner | None = None
        self._log: EventLog | None = None
        #: the log's head when the run began (None: no log)
        self.began_at: int | None = None
        #: the log's checkpoints, kept as the run goes (see the module docstring)
        self.keeper: Keeper | None = None
        self._store: CheckpointStore | None = None
        #: whether the checkpoints were kept here to the end (the head's included)
        self.checkpointed = False

    def __enter__(self) -> Spool:
        if self.url is not None:
            self._runner = asyncio.Runner()
            try:
                self._log = self._runner.run(open_log(self.url))
                self.began_at = self._runner.run(self._log.head())
                # the log's hash chain and writer lock, held for the run (a clean end seals)
                writer = ChainWriter(self._log, run=self.run, another_run=self.another_run)
                self._writer = self._runner.run(writer.__aenter__())
            except BaseException:
                if self._log is not None:
                    self._runner.run(self._log.close())
                self._runner.close()
                self._log = None
                raise
        return self

    def keep_checkpoints(self, world: World, policy: CheckpointPolicy) -> None:
        """Keep the log's checkpoints as the run goes, ``world`` being the run's own
        (folded from an empty log); nothing when the log was not empty or keeps none."""
        if self._runner is None or self.began_at != 0 or self._log is None:
            return
        self._store = self._runner.run(open_log_store(self._log.url or str(self.url), create=True))
        if self._store is not None:
            self.keeper = Keeper(self._store, policy, world=world)

    def at_rest(self, world: World) -> None:
        """Told by the loop between two steps (every record written is folded): hold the
        World's part of a checkpoint if one is due here."""
        keeper = self.keeper
        if (
            keeper is not None
            and world.position == self.count
            and keeper.due_at(self.count, self._latest)
        ):
            keeper.hold(self.count, world)
            keeper.plan_time(self._latest)
            if keeper.ready and self._runner is not None:  # every record is flushed already
                self._runner.run(keeper.save_held())

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if kind is None:
                self.flush()
        finally:
            if self._runner is not None:
                if self._writer is not None:
                    writer, self._writer = self._writer, None
                    self._runner.run(writer.__aexit__(kind, exc, tb))
                if kind is None and self.keeper is not None:
                    self._runner.run(self._checkpoint_head())
                if self._store is not None:
                    store, self._store = self._store, None
                    self._runner.run(store.close())
                if self._log is not None:
                    self._runner.run(self._log.close())
                self._runner.close()
            self._runner, self._log = None, None

    async def _checkpoint_head(self) -> None:
        """The head's checkpoint, once the log is sealed: the run's World with the records
        written after the run's own (the seal) folded in."""
        keeper, log = self.keeper, self._log
        if keeper is None or log is None:
            return
        world = keeper.world
        if not world.position == keeper.position == self.count:
            return
        async for record, payload in stored_records(log, keeper.position):
            world.apply(record)
            keeper.feed(record, payload)
        await keeper.finish()
        self.checkpointed = True

    @property
    def whole(self) -> bool:
        """Whether the log at ``url`` holds exactly the records given here, at the offsets
        given here, first (it was empty and took every record as new): a World the run
        folded is then the fold of the log's first :attr:`count` records."""
        return self.began_at == 0 and self.written == self.count

    def append_now(self, events: Sequence[Event]) -> list[Event]:
        """Append a batch (ids already appended are skipped); the records with offsets."""
        return self.append_encoded_now(events, ())

    def append_encoded_now(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """:meth:`append_now`; ``payloads[i]``, unless None, is ``events[i]``'s canonical
        payload bytes, stored as they are instead of serialising the payload again (a
        recording's line already held them)."""
        check_appendable(events)
        added: list[Event] = []
        kept: list[bytes | None] = []
        for i, event in enumerate(events):
            seen = self._ids.setdefault(event.at, set())
            if event.id in seen:
                continue
            seen.add(event.id)
            stored = event.with_offset(self.count)
            self.count += 1
            added.append(stored)
            kept.append(payloads[i] if i < len(payloads) else None)
            if self._latest is None or event.at > self._latest:
                self._latest = event.at
                self._forget()
        if self._log is not None:
            self._pending.extend(added)
            self._payloads.extend(kept)
            if len(self._pending) >= self._batch:
                self.flush()
        return added

    def flush(self) -> None:
        """Append the records held to the log at ``url``."""
        if self._runner is None or self._writer is None or not self._pending:
            return
        batch, self._pending = self._pending, []
        payloads, self._payloads = self._payloads, []
        added = self._runner.run(self._writer.append(batch, payloads))
        self.written += len(added)
        keeper = self.keeper
        if keeper is None:
            return
        if len(added) != len(batch):  # the log had some: the run's World is not its fold
            self.keeper = None
            return
        for given, record, payload in zip(batch, added, payloads, strict=True):
            # a record the writer linked just now: its hash is the next record's link
            keeper.feed(record, payload, linked=given.prev is None)
            if keeper.ready:
                self._runner.run(keeper.save_held())

    def _forget(self) -> None:
        assert self._latest is not None
        floor = self._latest - self._keep
        if next(iter(self._ids)) < floor:
            for at in [at for at in self._ids if at < floor]:
                del self._ids[at]
