"""A simulation's log written out as it goes, in batches, instead of kept in memory.

:class:`~streams.backends.memory.MemoryLog` keeps every record of a run, ~5 KB each: a
day of a 1,000-node cluster does not fit. A :class:`Spool` is what the virtual loop
writes to instead when the caller wants the records on a log (``tide simulate --log``)
or not at all: it assigns offsets as a MemoryLog does (0, 1, 2, …, so the run folds the
same records with the same offsets), holds the records of one batch, and appends each
full batch to the log at ``url`` (its own event loop, kept open for the run).

Appends stay idempotent by id, as the log port requires: an id is a hash of the record's
content *including its time*, so a repeat can only come at the same ``at``; the loop
writes in time order, so the ids of the last ``keep`` of virtual time suffice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from types import TracebackType

from streams.backends import open_log
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
                if self._log is not None:
                    self._runner.run(self._log.close())
                self._runner.close()
            self._runner, self._log = None, None

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
        self.written += len(self._runner.run(self._writer.append(batch, payloads)))

    def _forget(self) -> None:
        assert self._latest is not None
        floor = self._latest - self._keep
        if next(iter(self._ids)) < floor:
            for at in [at for at in self._ids if at < floor]:
                del self._ids[at]
