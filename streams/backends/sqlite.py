"""The embedded log: one SQLite file (WAL, ``synchronous=NORMAL``) through aiosqlite.

Why it looks the way it does (numbers measured with ``sqlite3`` and ``omnilib/aiosqlite``
against ~1 KB JSON rows: aiosqlite runs every call on one worker thread):

* every awaited aiosqlite call costs ~57 µs, so an append is one trip to the
  connection's thread (``_store``: the whole transaction, one ``executemany``); the
  payload is stored as orjson bytes;
* offsets are explicit, 0-based, and assigned per batch from the head read under
  ``BEGIN IMMEDIATE``, so two processes appending to one file still get one gap-free
  order; a batch holding an id already stored is redone with ``INSERT OR IGNORE`` and
  ``MAX(offset) + 1`` per row (idempotent appends), the rows actually inserted read back
  to return their offsets;
* all statements share one connection, and an asyncio lock keeps a reader from seeing
  another coroutine's half-done transaction;
* reads are paged ``fetchall`` (the fastest aiosqlite read) of the stored rows, each
  row decoded only as its event is handed out (see ``SQLiteLog._rows``); subscribers are
  woken at once by appends in this process and poll for appends by other processes.

This and ``projections/store.py`` are the only modules that import aiosqlite.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite
import orjson

from streams.backends import sqlite_subjects
from streams.backends.sqlite_files import TIDE_TABLES, foreign
from streams.backends.sqlite_reader import BY_IDS_SQL as _BY_IDS
from streams.backends.sqlite_reader import CONTAINS_SQL as _CONTAINS
from streams.backends.sqlite_reader import LAST_SQL as _LAST
from streams.backends.sqlite_reader import PAGE_SQL as _PAGE
from streams.backends.sqlite_reader import QUARANTINE_SQL as _QUARANTINE
from streams.backends.sqlite_reader import SEALED_SQL as _SEALED
from streams.backends.sqlite_reader import TYPE_PAGE_SQL as _TYPE_PAGE
from streams.codec import check_appendable, from_stored
from streams.events import Event, format_time
from streams.log import (
    BackendUnavailableError,
    EventLog,
    LogError,
    NotALogError,
    Quarantined,
)
from streams.subjects import subjects_of

PAGE = 1_000
T = TypeVar("T")
#: the page size of new log files: a ~5 KB pod row fits on one 16 KB page instead of
#: spilling onto overflow pages of 4 KB ones (appends ~15% cheaper on the CPU clock)
PAGE_SIZE = 16_384
#: WAL bytes between automatic checkpoints, whatever the file's page size
CHECKPOINT_BYTES = 40_960_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    "offset" INTEGER PRIMARY KEY,
    id TEXT UNIQUE NOT NULL,
    at TEXT NOT NULL,
    type TEXT NOT NULL,
    cause TEXT,
    v INTEGER NOT NULL DEFAULT 1,
    data BLOB NOT NULL,
    prev TEXT
);
CREATE INDEX IF NOT EXISTS events_type ON events (type);
-- what each cause led to (the decisions a bind view replays: sqlite_subjects.CAUSED);
-- only the records with a cause, about one in five (built once for an older log)
CREATE INDEX IF NOT EXISTS events_cause ON events (cause) WHERE cause IS NOT NULL;
CREATE TABLE IF NOT EXISTS quarantine (
    seq INTEGER PRIMARY KEY,
    source TEXT NOT NULL,
    line INTEGER NOT NULL,
    reason TEXT NOT NULL,
    raw TEXT NOT NULL,
    UNIQUE (source, line, reason, raw)
);
CREATE TABLE IF NOT EXISTS seal (
    one INTEGER PRIMARY KEY CHECK (one = 0),
    "offset" INTEGER NOT NULL,
    head TEXT NOT NULL
);
"""
_SEAL = 'INSERT OR REPLACE INTO seal (one, "offset", head) VALUES (0, ?, ?)'
_INSERT = (
    'INSERT OR IGNORE INTO events ("offset", id, at, type, cause, v, data, prev) '
    'VALUES ((SELECT IFNULL(MAX("offset") + 1, 0) FROM events), ?, ?, ?, ?, ?, ?, ?)'
)
_INSERT_AT = (
    'INSERT INTO events ("offset", id, at, type, cause, v, data, prev) '
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
#: logs written before the hash chain lack the ``prev`` column: it is added on open
_COLUMNS = "SELECT name FROM pragma_table_info('events')"
_ADD_PREV = "ALTER TABLE events ADD COLUMN prev TEXT"
_ADDED = 'SELECT "offset", id FROM events WHERE "offset" >= ?'
_SET_ASIDE = "INSERT OR IGNORE INTO quarantine (source, line, reason, raw) VALUES (?, ?, ?, ?)"

Row = tuple[str, str, str, str | None, int, bytes, str | None]
#: a row as :data:`_PAGE` selects it: ``offset`` first, then :data:`Row`'s columns
StoredRow = tuple[int, str, str, str, str | None, int, bytes, str | None]


class SQLiteLog(EventLog):
    """An :class:`~streams.log.EventLog` in one SQLite file (see the module docstring)."""

    def __init__(self, db: aiosqlite.Connection, path: str, *, poll_interval: float) -> None:
        self._db = db
        self._lock = asyncio.Lock()
        self._grew = asyncio.Event()
        self._poll = poll_interval
        self.path = path
        self.url = "sqlite://" if path == ":memory:" else f"sqlite:///{path}"
        #: the tables the log holds (a writer creates them all)
        self._tables = TIDE_TABLES
        self._page, self._type_page = _PAGE, _TYPE_PAGE
        #: whether the subject index can be read (None: not asked yet; a writer built it)
        self._indexed: bool | None = None

    @classmethod
    async def open(
        cls,
        path: str | Path,
        *,
        poll_interval: float = 0.2,
        busy_timeout: float = 10.0,
    ) -> SQLiteLog:
        """Open (creating if needed) the log in ``path``; ``":memory:"`` for a private one.

        ``poll_interval``: how often subscribers look for rows other processes added.
        ``busy_timeout``: how long a write waits for another process's write lock before
        failing with :class:`~streams.log.BackendUnavailableError`.
        A log opened for reading only is a
        :class:`streams.backends.sqlite_reader.SQLiteReader` (no worker thread).

        Raises:
            NotALogError: ``path`` is a file that is not a tide log (a user's own SQLite
                file, say).
            LogError: SQLite cannot open it.
        """
        if str(path) != ":memory:":
            why = foreign(path)
            if why is not None:
                raise NotALogError(f"{path} {why}")
            _create_private(Path(path))
        connection = aiosqlite.connect(str(path), isolation_level="IMMEDIATE")
        _daemonise(connection)
        try:
            db = await connection
        except aiosqlite.Error as exc:
            await _reap(connection)
            raise _wrap(exc, f"cannot open SQLite log {path}") from exc
        try:
            # a new file only (before its first table and WAL); an old one keeps its own
            await db.execute(f"PRAGMA page_size={PAGE_SIZE}")
            await db.execute("PRAGMA journal_mode=WAL")
            await db.execute("PRAGMA synchronous=NORMAL")
            # checkpoint every ~40 MB of WAL instead of 4 MB: the id and type indexes
            # rewrite the same pages between checkpoints, and bulk imports run ~30% faster
            ((page_size,),) = await db.execute_fetchall("PRAGMA page_size", ())
            await db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_BYTES // page_size}")
            await db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            await db.executescript(_SCHEMA)
            if ("prev",) not in list(await db.execute_fetchall(_COLUMNS, ())):
                await db.execute(_ADD_PREV)
                await db.commit()
            # the subject index (sqlite_subjects.py): built here for a log from before it
            await _on_thread(db, sqlite_subjects.ensure)
        except aiosqlite.Error as exc:
            await db.close()
            raise _wrap(exc, f"cannot open SQLite log {path}") from exc
        return cls(db, str(path), poll_interval=poll_interval)

    async def close(self) -> None:
        await self._db.close()

    async def append(self, events: Sequence[Event]) -> list[Event]:
        return await self.append_encoded(events, ())

    async def append_encoded(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """:meth:`append`, reusing ``payloads[i]`` (``events[i].data`` already serialised
        as JSON, or None) instead of serialising it again; ``tide log import`` has them
        from computing content ids."""
        check_appendable(events)
        unique: dict[str, Event] = {}
        rows: list[Row] = []
        keys: list[list[str]] = []  # each row's subjects (sqlite_subjects.py)
        for i, event in enumerate(events):  # encoded here, before taking the lock
            if event.id in unique:
                continue
            unique[event.id] = event
            payload = payloads[i] if i < len(payloads) else None
            rows.append(_row(event, payload))
            keys.append(subjects_of(event))
        if not unique:
            return []
        async with self._lock:
            try:
                # one hop to the connection's thread for the whole transaction
                run: Callable[..., Awaitable[dict[str, int]]] = self._db._execute
                offsets = await run(_store, self._db, rows, list(unique), keys)
            except BaseException as exc:
                await _rollback(self._db)
                if isinstance(exc, aiosqlite.Error):
                    raise _wrap(exc, "append failed") from exc
                raise
        if not offsets:
            return []
        self._wake()
        return [event.with_offset(offsets[i]) for i, event in unique.items() if i in offsets]

    async def read(self, start: int = 0, stop: int | None = None) -> AsyncIterator[Event]:
        offset = max(start, 0)
        while stop is None or offset < stop:
            limit = PAGE if stop is None else min(PAGE, stop - offset)
            rows = await self._rows(offset, limit)
            for row in rows:  # decoded one at a time: see _rows
                yield from_stored(*row)
            if len(rows) < limit:
                return
            offset = rows[-1][0] + 1

    async def subscribe(self, start: int = 0) -> AsyncIterator[Event]:
        offset = max(start, 0)
        while True:
            grew = self._grew  # taken before reading, so no append can slip by unnoticed
            rows = await self._rows(offset, PAGE)
            for row in rows:
                yield from_stored(*row)
            if rows:
                offset = rows[-1][0] + 1
                continue
            try:
                async with asyncio.timeout(self._poll):
                    await grew.wait()
            except TimeoutError:
                pass  # other processes: look again

    async def head(self) -> int:
        async with self._lock:
            last: int = (await self._fetch(_LAST, ()))[0][0]
        return last + 1

    async def contains(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        async with self._lock:
            rows = await self._fetch(_CONTAINS, (orjson.dumps(list(ids)).decode(),))
        return {row[0] for row in rows}

    async def records(self, ids: Sequence[str]) -> dict[str, Event]:
        """The stored records with these ids (:class:`streams.conflicts.RecordLookup`)."""
        if not ids:
            return {}
        async with self._lock:
            rows = await self._fetch(_BY_IDS, (orjson.dumps(list(ids)).decode(),))
        return {row[1]: from_stored(*row) for row in rows}

    async def set_aside(self, items: Sequence[Quarantined]) -> None:
        if not items:
            return
        rows = [(q.source, q.line, q.reason, q.raw) for q in items]
        async with self._lock:
            try:
                await self._db.executemany(_SET_ASIDE, rows)
                await self._db.commit()
            except BaseException as exc:
                await _rollback(self._db)
                if isinstance(exc, aiosqlite.Error):
                    raise _wrap(exc, "set_aside failed") from exc
                raise

    async def quarantine(self) -> list[Quarantined]:
        if "quarantine" not in self._tables:
            return []
        async with self._lock:
            rows = await self._fetch(_QUARANTINE, ())
        return [Quarantined(source=s, line=n, reason=r, raw=raw) for s, n, r, raw in rows]

    async def read_page(
        self, offset: int, limit: int, *, type_: str | None = None
    ) -> list[StoredRow]:
        """Up to ``limit`` stored rows from ``offset`` on (of one ``type_`` if given), still
        encoded: :func:`streams.codec.from_stored` decodes one. For readers that page
        through the log themselves (:mod:`streams.paging`); ``type_`` walks the type
        index, so a narrow query (the decisions of a day) never reads the samples."""
        if type_ is None:
            return await self._rows(max(offset, 0), limit)
        async with self._lock:
            return await self._fetch(self._type_page, (type_, max(offset, 0), limit))

    async def read_about(
        self, subjects: Sequence[str], offset: int, limit: int
    ) -> list[StoredRow] | None:
        """Up to ``limit`` stored rows from ``offset`` on filed under any of ``subjects``
        (:mod:`streams.subjects`), still encoded; None when the log has no subject index
        of this version (a log no writer opened since the index came: scan it instead)."""
        async with self._lock:
            if self._indexed is None:
                self._indexed = await _on_thread(self._db, sqlite_subjects.usable)
            if not self._indexed:
                return None
            keys = orjson.dumps(list(subjects)).decode()
            return await self._fetch(sqlite_subjects.FIND, (keys, max(offset, 0), limit))

    async def seal(self, offset: int, head: str) -> None:
        """Record where the log ended cleanly (see ``streams/chain.py``)."""
        async with self._lock:
            try:
                await self._db.execute(_SEAL, (offset, head))
                await self._db.commit()
            except BaseException as exc:
                await _rollback(self._db)
                if isinstance(exc, aiosqlite.Error):
                    raise _wrap(exc, "seal failed") from exc
                raise

    async def sealed(self) -> tuple[int, str] | None:
        if "seal" not in self._tables:
            return None
        async with self._lock:
            rows = await self._fetch(_SEALED, ())
        return (rows[0][0], rows[0][1]) if rows else None

    @contextlib.asynccontextmanager
    async def writer_lock(self) -> AsyncIterator[None]:
        """Hold ``<path>.lock`` (``flock``) while writing: one writer at a time, so its
        chain links are computed against the records actually before them.

        The file is removed when the writer is done, so a finished command leaves only its
        log behind. Removing a lock file is safe with this protocol: the holder unlinks it
        before it lets go, and a waiter that wakes holding a file no longer at the path (its
        inode gone or replaced) lets go and opens the path afresh."""
        if self.path == ":memory:":
            yield
            return
        fd = await asyncio.to_thread(_lock_file, f"{self.path}.lock")
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{self.path}.lock")
            os.close(fd)  # closing releases the lock

    async def _rows(self, offset: int, limit: int) -> list[StoredRow]:
        """Up to ``limit`` stored rows from ``offset`` on, still encoded.

        Callers decode each row only as they hand its event out. Decoding the whole page
        up front made reads 5-7x slower than ``SELECT`` + ``orjson.loads``: a page of
        1,000 decoded events (~30 MB at the benchmark's pod sizes) never fits in the CPU
        caches, the allocator keeps getting fresh memory for it, and the cyclic GC walks
        it again and again while it is being built (pausing the GC only won back a
        third). Decoded one at a time, an event the consumer drops is freed before the
        next is built and its memory reused while still hot. Prefetching the next page
        while this one is handed out, and pages of 5,000-10,000 rows, gained nothing
        measurable (the fetch is ~20% of a read and mostly holds the GIL).
        """
        async with self._lock:
            return await self._fetch(self._page, (offset, limit))

    async def _fetch(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        try:
            return list(await self._db.execute_fetchall(sql, params))
        except aiosqlite.Error as exc:
            raise _wrap(exc, "query failed") from exc

    def _wake(self) -> None:
        self._grew.set()
        self._grew = asyncio.Event()


def _lock_file(path: str) -> int:
    """An open descriptor of ``path`` holding its exclusive ``flock`` (blocks until free);
    retried while the file locked is not the one at ``path`` (a holder removed it)."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


async def open_url(url: str, *, read_only: bool = False) -> EventLog:
    """Open ``sqlite:///relative.db``, ``sqlite:////absolute.db`` or ``sqlite://`` (private);
    ``read_only``: an existing log for reading, not a byte written
    (:func:`streams.backends.sqlite_reader.open_url`)."""
    if read_only:
        from streams.backends.sqlite_reader import open_url as open_reader

        return await open_reader(url)
    return await SQLiteLog.open(url.split("://", 1)[1].removeprefix("/") or ":memory:")


@lru_cache(maxsize=1024)
def _format_at(at: datetime) -> str:
    return format_time(at)


def _row(event: Event, payload: bytes | None = None) -> Row:
    # the payload is stored as orjson bytes; key order does not matter here (export
    # re-encodes canonically), so unsorted dumps is fine when no bytes were handed over
    data = orjson.dumps(event.data) if payload is None else payload
    return (event.id, _format_at(event.at), event.type, event.cause, event.v, data, event.prev)


def _store(
    db: aiosqlite.Connection, rows: list[Row], ids: list[str], keys: list[list[str]]
) -> dict[str, int]:
    """Insert ``rows`` (ids ``ids``, all distinct; subjects ``keys``) in one transaction on
    the connection's own thread; the offsets given to the ids actually inserted.

    Offsets are assigned per batch (the head read once under ``BEGIN IMMEDIATE``, then
    consecutive); a batch holding an id already on the log fails on the unique index
    and is redone row by row with ``INSERT OR IGNORE`` and ``MAX(offset) + 1``, so the
    order stays gap-free and the append idempotent.
    """
    con: sqlite3.Connection = db._conn
    con.execute("BEGIN IMMEDIATE")
    try:
        first = con.execute(_LAST).fetchone()[0] + 1
        try:
            con.executemany(_INSERT_AT, [(first + i, *row) for i, row in enumerate(rows)])
            offsets = dict(zip(ids, range(first, first + len(rows)), strict=True))
        except sqlite3.IntegrityError:  # some ids are on the log already
            con.rollback()
            con.execute("BEGIN IMMEDIATE")
            first = con.execute(_LAST).fetchone()[0] + 1
            count = con.executemany(_INSERT, rows).rowcount
            offsets = (
                {} if count <= 0 else {i: o for o, i in con.execute(_ADDED, (first,)).fetchall()}
            )
        placed = ((offsets[i], k) for i, k in zip(ids, keys, strict=True) if i in offsets)
        sqlite_subjects.insert(con, [(s, offset) for offset, k in placed for s in k])
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return offsets


async def _on_thread(db: aiosqlite.Connection, call: Callable[[sqlite3.Connection], T]) -> T:
    """``call(connection)`` on the connection's own thread (one trip, as ``_store``)."""
    run: Callable[..., Awaitable[T]] = db._execute
    return await run(lambda: call(db._conn))


def _create_private(path: Path) -> None:
    """Create a new log file readable by its owner only (0600): logs hold cluster objects.
    SQLite gives its -wal and -shm files the database file's mode."""
    with contextlib.suppress(FileExistsError, OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _daemonise(connection: aiosqlite.Connection) -> None:
    """Make the connection's worker thread a daemon (before it starts).

    aiosqlite's thread is not a daemon, so a log someone forgot to close (a test failing
    half-way, a crashed command) keeps the interpreter from ever exiting. A daemon
    thread cut off at exit can at worst lose an uncommitted transaction, which WAL
    makes the same as a crash: harmless.
    """
    thread = getattr(connection, "_thread", None)
    if isinstance(thread, threading.Thread) and not thread.is_alive():
        thread.daemon = True


async def _reap(connection: aiosqlite.Connection) -> None:
    """Wait for the worker thread of a connection that failed to open.

    aiosqlite (0.22) stops it without awaiting the stop, so the thread later posts to
    the event loop, which may be closed by then ("Event loop is closed" in a thread).
    """
    thread = getattr(connection, "_thread", None)
    if isinstance(thread, threading.Thread) and thread.is_alive():
        await asyncio.to_thread(thread.join, 5.0)


async def _rollback(db: aiosqlite.Connection) -> None:
    with contextlib.suppress(aiosqlite.Error):  # if the connection is gone, so is the txn
        await db.rollback()


def _wrap(exc: aiosqlite.Error, what: str) -> LogError:
    message = f"{what}: {exc}"
    if isinstance(exc, aiosqlite.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
        return BackendUnavailableError(message)
    return LogError(message)
