"""The log's hash chain: each record carries the hash of the record before it.

Why: ids and causes alone let a forger delete, insert, reorder or alter records and
still leave a log that looks whole. With the chain, every record's ``prev`` is the
hash (:func:`digest`) of its predecessor's canonical encoding (``streams.codec.encode``,
which includes that record's own ``prev``), so any such change breaks the link at the
first record after it. The first record's ``prev`` is ``run:<id>``: the run that started
the log. A writer that ends cleanly leaves a seal (the offset and hash of the last
record) where the backend can keep one (:class:`Sealable`), so a cut tail is detected
too, and a log whose seal matches its last record is *complete*. The seal that travels
with the records (exports, Kafka) is a ``log.sealed`` record (``streams/seal.py``): chains
started since begin with a link saying they end in one.

The chain lives above the backends: :class:`ChainWriter` is the one append path of the
commands that write logs (``tide log import``, ``tide simulate --log``, the demo and the
recorder); a backend only stores ``prev`` as one more field and hands it back. Logs
written before the chain have no ``prev`` on any record; they stay unchained (appends
to them add none) and verify with a note saying so. A record that arrives with a
``prev`` already (an exported chained log being imported) keeps it, so export and
import stay byte-identical.

Each record's payload is serialised once on this path: its canonical bytes
(:func:`streams.codec.encode_payload`) are hashed between the other parts of the link's
line (:func:`streams.codec.envelope`, the line :func:`~streams.codec.encode` gives) and
are what the backend stores (:class:`EncodedAppend`), so SQLite and Kafka do not serialise
the payload a second time; a SQLite row then holds the bytes an import of the log's
export would store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

from streams.chain_check import ChainChecker, ChainReport, check_chain
from streams.codec import encode_payload
from streams.events import Event
from streams.log import EventLog, IdIndex, LogError
from streams.seal import (
    RUN_PREFIX,
    digest,
    genesis,
    group_anchor,
    is_seal,
    parse_genesis,
    seal_record,
    writer_link,
)

__all__ = [
    "RUN_PREFIX",
    "BulkAppend",
    "ChainChecker",
    "ChainReport",
    "ChainWriter",
    "EncodedAppend",
    "RunMismatchError",
    "Sealable",
    "WriterLock",
    "append_with_payloads",
    "check_chain",
    "check_log",
    "digest",
    "first",
    "run_id",
    "tail",
]


class RunMismatchError(LogError):
    """Appending a different run to a log another run started (see :class:`ChainWriter`)."""


@runtime_checkable
class EncodedAppend(Protocol):
    """A log that can store payloads already serialised (SQLite, Kafka)."""

    async def append_encoded(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """``append(events)`` (one atomic batch); ``payloads[i]``, unless None, is
        ``events[i].data`` as canonical JSON (sorted keys)."""
        ...


@runtime_checkable
class BulkAppend(Protocol):
    """A log whose atomic batches are bounded in size (Kafka): an import may go past it."""

    async def append_bulk(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """:meth:`EncodedAppend.append_encoded`, except that a batch above what one atomic
        write holds is written as several, in order (an import, which a re-run resumes:
        it skips what an interrupted one wrote)."""
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

    ``writer`` (replicas sharing a log with no writer lock, a Kafka topic): this writer
    chains only its own records (``streams/seal.py``: ``@<writer>/<link>``) and seals its
    own chain when it leaves; the id must be unique to this writer's lifetime.
    """

    def __init__(
        self,
        log: EventLog,
        *,
        run: str | None = None,
        another_run: bool = False,
        adopt: bool = False,
        shared: bool = False,
        writer: str | None = None,
    ):
        self.log = log
        self.writer = writer
        #: a writer of its own chain: the link its next batch carries (None: not begun)
        self._anchor: str | None = None
        self.shared = shared
        self.run = run
        self.another_run = another_run
        self.adopt = adopt
        self._lock: AbstractAsyncContextManager[None] | None = None
        self._last: Event | None = None
        #: None until known: an empty log written by an adopting writer (an import) is
        #: chained only when its first record arrives with a link (a chained export)
        self._chained: bool | None = None if adopt else True
        #: whether this writer ends the chain with a seal record: a chain it started, or
        #: one started so; an import (``adopt``) never adds one (a cut export stays cut)
        self._sealing = not adopt

    async def __aenter__(self) -> ChainWriter:
        if self.writer is not None:  # its own chain: nothing on the log to start from
            self._chained = self._sealing = True
            return self
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
            if exc[0] is None and self._chained is True and self._sealing:
                # the log's own tail (another writer without a lock may have appended since)
                last = self._last if self.writer is not None else await tail(self.log)
                self._last = last
                if last is not None and not is_seal(last) and self.writer is not None:
                    await self._store([self._own_seal(last)], [])
                elif last is not None and not is_seal(last):
                    await self._append([seal_record(last.at, digest(last))])
            if (
                exc[0] is None
                and self._chained
                and self.writer is None
                and isinstance(self.log, Sealable)
            ):
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
        theirs, sealing = parse_genesis(start.prev if start is not None else None)
        self._sealing = self._sealing and sealing
        if not self._chained or self.run is None or self.another_run:
            return
        if theirs != self.run:
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
        if self.writer is not None:
            return await self._append_own(events, payloads)
        present: set[str] = set()
        if isinstance(self.log, IdIndex):
            present = await self.log.contains([e.id for e in events])
        batch: list[Event] = []
        kept: list[bytes | None] = []
        seen: set[str] = set()
        last = self._last
        last_payload: bytes | None = None  # ``last.data``'s canonical bytes, when known
        for i, event in enumerate(events):
            if event.id in present or event.id in seen:
                continue
            seen.add(event.id)
            # each payload serialised once (canonically): for the link the next record
            # carries (its line built around them) and for the backend to store
            payload = payloads[i] if i < len(payloads) else None
            if payload is None:
                payload = encode_payload(event.data)
            if event.prev is None:
                link = digest(last, last_payload) if last is not None else genesis(self.run)
                if self.writer is not None:
                    link = writer_link(self.writer, link)
                event = event.with_prev(link)
            batch.append(event)
            kept.append(payload)
            last, last_payload = event, payload
        added = await self._store(batch, kept)
        if added:
            self._last = added[-1]
        return added

    async def _append_own(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """Append as writer ``self.writer``: every record carries the batch's anchor; the
        next anchor covers the records the log actually stored (``streams/seal.py``)."""
        assert self.writer is not None
        anchor = self._anchor or genesis(self.run)
        link = writer_link(self.writer, anchor)
        given: list[bytes | None] = list(payloads[: len(events)])
        given += [None] * (len(events) - len(given))
        # each payload serialised once: stored, and hashed into the next anchor
        kept: list[bytes | None] = [
            encode_payload(e.data) if p is None else p for e, p in zip(events, given, strict=True)
        ]
        added = await self._store([e.with_prev(link) for e in events], kept)
        if added:
            by_id = {e.id: p for e, p in zip(events, kept, strict=True)}
            self._anchor = group_anchor(anchor, [digest(e, by_id.get(e.id)) for e in added])
            self._last = added[-1]
        return added

    def _own_seal(self, last: Event) -> Event:
        """The seal of this writer's own chain after its last stored record ``last``."""
        assert self.writer is not None and self._anchor is not None
        return seal_record(last.at, self._anchor).with_prev(writer_link(self.writer, self._anchor))

    async def _store(self, events: list[Event], payloads: list[bytes | None]) -> list[Event]:
        if not events:
            return []
        if self.adopt and isinstance(self.log, BulkAppend):  # an import
            return await self.log.append_bulk(events, payloads)
        return await append_with_payloads(self.log, events, payloads)


async def append_with_payloads(
    log: EventLog, events: list[Event], payloads: Sequence[bytes | None]
) -> list[Event]:
    """One atomic ``append`` of ``events``, handing the log ``payloads`` (as for
    :class:`EncodedAppend`) when it can store them as they are."""
    if payloads and isinstance(log, EncodedAppend):
        return await log.append_encoded(events, payloads)
    return await log.append(events)


async def check_log(log: EventLog) -> ChainReport:
    """:func:`check_chain` over a whole log, with its seal when it keeps one."""
    seal = await log.sealed() if isinstance(log, Sealable) else None
    checker = ChainChecker()
    async for event in log.read(0):
        if not checker.feed(event, seal):
            break
    return checker.finish(seal)
