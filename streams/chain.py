"""The log's hash chain: each record carries the hash of the record before it.

Why: ids and causes alone let a forger delete, insert, reorder or alter records and
still leave a log that looks whole. With the chain, every record's ``prev`` is the
hash (:func:`digest`) of its predecessor's canonical encoding (``streams.codec.encode``,
which includes that record's own ``prev``), so any such change breaks the link at the
first record after it. The first record's ``prev`` is ``run:<id>``: the run that started
the log. A writer that ends cleanly leaves a seal (the offset and hash of the last
record) where the backend can keep one (:class:`Sealable`), so a cut tail is detected
too, and a log whose seal matches its last record is *complete*.

The chain lives above the backends: :class:`ChainWriter` is the one append path of the
commands that write logs (``tide log import``, ``tide simulate --log``, the demo and the
recorder); a backend only stores ``prev`` as one more field and hands it back. Logs
written before the chain have no ``prev`` on any record; they stay unchained (appends
to them add none) and verify with a note saying so. A record that arrives with a
``prev`` already (an exported chained log being imported) keeps it, so export and
import stay byte-identical.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from streams.codec import encode
from streams.events import Event
from streams.log import EventLog, IdIndex, LogError

RUN_PREFIX = "run:"


class RunMismatchError(LogError):
    """Appending a different run to a log another run started (see :class:`ChainWriter`)."""


@runtime_checkable
class EncodedAppend(Protocol):
    """A log that can store payloads already serialised (the SQLite backend)."""

    async def append_encoded(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """``append(events)``; ``payloads[i]``, unless None, is ``events[i].data`` as JSON."""
        ...


@runtime_checkable
class Sealable(Protocol):
    """A log that keeps where its last writer ended cleanly."""

    async def seal(self, offset: int, head: str) -> None:
        """Record that the log ended cleanly at ``offset``, whose record hashes to ``head``."""

    async def sealed(self) -> tuple[int, str] | None:
        """The last seal (offset, hash), or None if no writer ever ended cleanly."""


@runtime_checkable
class WriterLock(Protocol):
    """A log that lets one writer at a time hold it (across processes)."""

    def writer_lock(self) -> AbstractAsyncContextManager[None]:
        """Hold the log's writer lock (waiting for another writer to release it)."""
        ...


def digest(event: Event) -> str:
    """The hash of a record's canonical encoding (its ``prev`` included)."""
    return hashlib.blake2b(encode(event), digest_size=16).hexdigest()


def run_id(*parts: bytes) -> str:
    """A deterministic run id from what defines a run (its inputs, its configuration)."""
    h = hashlib.blake2b(digest_size=8)
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


async def tail(log: EventLog) -> Event | None:
    """The last record of ``log`` (offsets need not be dense: look further back if needed)."""
    head = await log.head()
    span = 1
    while True:
        start = max(0, head - span)
        last = None
        async for event in log.read(start, head):
            last = event
        if last is not None or start == 0:
            return last
        span *= 4


async def first(log: EventLog) -> Event | None:
    """The first record of ``log``."""
    async for event in log.read(0):
        return event
    return None


class ChainWriter:
    """Appends batches to ``log`` with the chain links set, holding the writer lock.

    Use as ``async with ChainWriter(log, run=...) as writer: await writer.append(...)``.
    ``run`` (a :func:`run_id`) is checked against the run that started the log: a
    different one is a :class:`RunMismatchError` unless ``another_run``; None (an
    import, which merges by id) checks nothing. ``adopt`` (an import) starts a chain on
    an empty log only if the first record comes with a link, so a recording written
    before the chain imports and exports byte for byte as it was. Leaving the block
    without an error seals the log (on a :class:`Sealable` backend).

    ``shared`` (the live controller, whose replicas append to one log): the writer lock is
    taken for each append, not for the whole block, and the link is computed against the
    log's tail read under it, so several processes may write one chain in turns; the last
    to leave seals it (records a replica appends after another one sealed are noted by
    the check, not an error).
    """

    def __init__(
        self,
        log: EventLog,
        *,
        run: str | None = None,
        another_run: bool = False,
        adopt: bool = False,
        shared: bool = False,
    ):
        self.log = log
        self.shared = shared
        self.run = run
        self.another_run = another_run
        self.adopt = adopt
        self._lock: AbstractAsyncContextManager[None] | None = None
        self._last: Event | None = None
        #: None until known: an empty log written by an adopting writer (an import) is
        #: chained only when its first record arrives with a link (a chained export)
        self._chained: bool | None = None if adopt else True

    async def __aenter__(self) -> ChainWriter:
        if isinstance(self.log, WriterLock) and not self.shared:
            self._lock = self.log.writer_lock()
            await self._lock.__aenter__()
        try:
            await self._start()
        except BaseException:
            await self._release(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.shared and isinstance(self.log, WriterLock):
            async with self.log.writer_lock():
                self._last = None  # another writer may have appended since: seal the tail
                await self._seal(*exc)
            return
        await self._seal(*exc)

    async def _seal(self, *exc: object) -> None:
        try:
            if exc[0] is None and self._chained is True and isinstance(self.log, Sealable):
                last = self._last if self._last is not None else await tail(self.log)
                if last is not None and last.offset >= 0:
                    await self.log.seal(last.offset, digest(last))
        finally:
            await self._release(*exc)

    async def _release(self, *exc: object) -> None:
        if self._lock is not None:
            lock, self._lock = self._lock, None
            await lock.__aexit__(None, None, None)

    async def _start(self) -> None:
        self._last = await tail(self.log)
        if self._last is None:
            return
        start = await first(self.log)
        self._chained = start is not None and start.prev is not None
        if not self._chained or self.run is None or self.another_run:
            return
        assert start is not None
        wanted = RUN_PREFIX + self.run
        if start.prev != wanted:
            theirs = (start.prev or "").removeprefix(RUN_PREFIX)
            raise RunMismatchError(
                f"{self.log.url or 'the log'} holds run {theirs}, this is run {self.run}: "
                "write to another log, or pass --another-run to append it anyway"
            )

    async def append(
        self, events: Sequence[Event], payloads: Sequence[bytes | None] = ()
    ) -> list[Event]:
        """Append ``events`` (``payloads`` as for :class:`EncodedAppend`), linked."""
        if self.shared and isinstance(self.log, WriterLock):
            async with self.log.writer_lock():
                self._last = await tail(self.log)
                return await self._append(events, payloads)
        return await self._append(events, payloads)

    async def _append(
        self, events: Sequence[Event], payloads: Sequence[bytes | None] = ()
    ) -> list[Event]:
        if self._chained is None and events:
            self._chained = events[0].prev is not None
        if not self._chained:
            return await self._store(list(events), list(payloads))
        present: set[str] = set()
        if isinstance(self.log, IdIndex):
            present = await self.log.contains([e.id for e in events])
        batch: list[Event] = []
        kept: list[bytes | None] = []
        seen: set[str] = set()
        last = self._last
        for i, event in enumerate(events):
            if event.id in present or event.id in seen:
                continue
            seen.add(event.id)
            if event.prev is None:
                link = digest(last) if last is not None else RUN_PREFIX + (self.run or "unnamed")
                event = event.with_prev(link)
            batch.append(event)
            kept.append(payloads[i] if i < len(payloads) else None)
            last = event
        added = await self._store(batch, kept)
        if added:
            self._last = added[-1]
        return added

    async def _store(self, events: list[Event], payloads: list[bytes | None]) -> list[Event]:
        if not events:
            return []
        if payloads and isinstance(self.log, EncodedAppend):
            return await self.log.append_encoded(events, payloads)
        return await self.log.append(events)


@dataclass
class ChainReport:
    """What :func:`check_chain` found."""

    records: int = 0
    chained: bool = False
    run: str | None = None
    complete: bool = False
    #: the first bad offset and why, or None
    broken: tuple[int, str] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.broken is None

    def describe(self, *, sealable: bool = True) -> str:
        """One line: the first break, or what the chain says about the log (``sealable``:
        whether it could say it is complete; an exported recording keeps no seal)."""
        if self.broken is not None:
            offset, why = self.broken
            return f"chain broken at offset {offset}: {why}"
        if not self.chained:
            return f"{self.records} records; written before the hash chain: no chain to check"
        state = (
            ("complete" if self.complete else "not marked complete")
            if sealable
            else "completeness unknown (an exported recording keeps no seal)"
        )
        return f"{self.records} records, chain intact (run {self.run}), {state}"


class ChainChecker:
    """Walks a chain one record at a time (in offset order) and stops at the first break."""

    def __init__(self) -> None:
        self.report = ChainReport()
        self._previous: Event | None = None
        self._seal: tuple[int, str] | None = None
        self._sealed_at: Event | None = None

    def feed(self, event: Event, seal: tuple[int, str] | None = None) -> bool:
        """Check the next record; False once the chain is broken (stop feeding then)."""
        report, previous = self.report, self._previous
        if report.broken is not None:
            return False
        report.records += 1
        if previous is None:
            report.chained = event.prev is not None
            if report.chained and not (event.prev or "").startswith(RUN_PREFIX):
                report.broken = (event.offset, "the first record does not start a chain")
            report.run = (event.prev or "").removeprefix(RUN_PREFIX) or None
        elif not report.chained:
            if event.prev is not None:
                report.broken = (event.offset, "a chain link on a log written without a chain")
        elif event.prev != digest(previous):
            report.broken = (
                event.offset,
                f"its link does not match the record at offset {previous.offset} (a record "
                "was deleted, inserted, moved or altered here)",
            )
        if seal is not None and event.offset == seal[0]:
            self._sealed_at = event
        self._previous = event
        return report.broken is None

    def finish(self, seal: tuple[int, str] | None = None) -> ChainReport:
        """The report, with the tail checked against ``seal`` (from :meth:`Sealable.sealed`):
        a seal past the last record means the tail was cut; a seal whose hash differs from
        its record's means that record was altered."""
        report, previous, sealed_at = self.report, self._previous, self._sealed_at
        if report.broken is not None or seal is None or not report.chained:
            return report
        if sealed_at is None:
            after = previous.offset + 1 if previous is not None else 0
            report.broken = (after, f"the log ended cleanly at offset {seal[0]}: its tail was cut")
        elif digest(sealed_at) != seal[1]:
            report.broken = (seal[0], "the record where the log ended cleanly was altered")
        elif previous is not None and previous.offset != seal[0]:
            report.notes.append(f"records after offset {seal[0]} were appended since it ended")
        else:
            report.complete = True
        return report


def check_chain(events: Iterable[Event], seal: tuple[int, str] | None = None) -> ChainReport:
    """Walk the chain of ``events`` (in offset order); see :class:`ChainChecker`."""
    checker = ChainChecker()
    for event in events:
        if not checker.feed(event, seal):
            break
    return checker.finish(seal)


async def check_log(log: EventLog) -> ChainReport:
    """:func:`check_chain` over a whole log, with its seal when it keeps one."""
    seal = await log.sealed() if isinstance(log, Sealable) else None
    checker = ChainChecker()
    async for event in log.read(0):
        if not checker.feed(event, seal):
            break
    return checker.finish(seal)
