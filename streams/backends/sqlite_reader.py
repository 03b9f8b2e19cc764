"""The SQLite log opened for reading: the standard ``sqlite3`` module on the caller's own
thread, no aiosqlite, no worker thread, no event loop.

A reading command (``tide audit``, ``state``, ``replay``, ``report``, ``log export``)
only ever asks the file for pages of rows, one query at a time, and waits for each: the
writer's worker thread (``streams.backends.sqlite``: every call a trip to it, ~57 µs) and
the event loop it needs bought nothing here, and importing them (``asyncio``, ``ssl``,
``socket``, ``logging``, ``aiosqlite``) was a third of ``tide audit decisions``'s start-up
on a small log (issue 26, item 4). :class:`SQLiteReader` is the same log through the same
port: its coroutines run their query and return without ever suspending, so they can be
awaited on any event loop, or driven without one (:class:`streams.paging.LogReader`
``synchronous=True``). ``tests/streams/test_sqlite_reader.py`` holds its answers to the
writer's, on the same files.

Opened as :func:`streams.backends.sqlite_files.read_only_uri` says (``mode=ro``; immutable
when no writer has the file open): nothing created, not a byte written beside the log. A
log older than the hash chain reads ``prev`` as NULL; one older than the quarantine, the
seal or the subject index answers as a log without them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from streams.backends import sqlite_subjects
from streams.backends.sqlite_files import not_a_log, read_only_uri, tables
from streams.codec import StoredRow, from_stored
from streams.events import Event
from streams.log import BackendUnavailableError, EventLog, LogError, NotALogError, Quarantined

PAGE = 1_000
#: the read statements (the writer, streams.backends.sqlite, asks the same through aiosqlite)
PAGE_SQL = (
    'SELECT "offset", id, at, type, cause, v, data, prev FROM events '
    'WHERE "offset" >= ? ORDER BY "offset" LIMIT ?'
)
TYPE_PAGE_SQL = (
    'SELECT "offset", id, at, type, cause, v, data, prev FROM events '
    'WHERE type = ? AND "offset" >= ? ORDER BY "offset" LIMIT ?'
)
LAST_SQL = 'SELECT IFNULL(MAX("offset"), -1) FROM events'
CONTAINS_SQL = "SELECT id FROM events WHERE id IN (SELECT value FROM json_each(?))"
BY_IDS_SQL = (
    'SELECT "offset", id, at, type, cause, v, data FROM events '
    "WHERE id IN (SELECT value FROM json_each(?))"
)
QUARANTINE_SQL = "SELECT source, line, reason, raw FROM quarantine ORDER BY seq"
SEALED_SQL = 'SELECT "offset", head FROM seal WHERE one = 0'
#: a log written before the hash chain has no ``prev`` column
_NO_PREV = (", prev FROM", ", NULL AS prev FROM")


class SQLiteReader(EventLog):
    """A tide log in one SQLite file, opened read-only (see the module docstring)."""

    def __init__(self, connection: sqlite3.Connection, path: Path, found: dict[str, set[str]]):
        self._db = connection
        self.path = str(path)
        self.url = f"sqlite:///{path}"
        self._tables = frozenset(found)
        old = "prev" not in found.get("events", set())
        self._page = PAGE_SQL.replace(*_NO_PREV) if old else PAGE_SQL
        self._type_page = TYPE_PAGE_SQL.replace(*_NO_PREV) if old else TYPE_PAGE_SQL
        self._find = sqlite_subjects.FIND.replace(*_NO_PREV) if old else sqlite_subjects.FIND
        #: whether the subject index can be read (None: not asked yet)
        self._indexed: bool | None = None

    @classmethod
    def open(cls, path: str | Path) -> SQLiteReader:
        """The log at ``path``, read-only.

        Raises:
            NotALogError: ``path`` is not a tide log (missing, a directory, an empty file,
                another program's SQLite file).
            LogError: SQLite cannot open it.
        """
        file = Path(path)
        why = not_a_log(file)
        if why is not None:
            raise NotALogError(f"{file} {why}")
        try:
            found = tables(file)
            connection = sqlite3.connect(read_only_uri(file), uri=True)
        except sqlite3.Error as exc:
            raise _wrap(exc, f"cannot open SQLite log {file}") from exc
        return cls(connection, file, found)

    async def close(self) -> None:
        self._db.close()

    async def append(self, events: Sequence[Event]) -> list[Event]:
        raise LogError(f"{self.path} is open for reading only: nothing can be appended")

    async def read(self, start: int = 0, stop: int | None = None) -> AsyncIterator[Event]:
        offset = max(start, 0)
        while stop is None or offset < stop:
            limit = PAGE if stop is None else min(PAGE, stop - offset)
            rows = self._fetch(self._page, (offset, limit))
            for row in rows:  # decoded one at a time (SQLiteLog._rows says why)
                yield from_stored(*row)
            if len(rows) < limit:
                return
            offset = rows[-1][0] + 1

    async def subscribe(self, start: int = 0) -> AsyncIterator[Event]:
        """The records from ``start`` on, then those other processes append (polled)."""
        import asyncio  # only a subscriber waits

        offset = max(start, 0)
        while True:
            rows = self._fetch(self._page, (offset, PAGE))
            for row in rows:
                yield from_stored(*row)
            if rows:
                offset = rows[-1][0] + 1
                continue
            await asyncio.sleep(0.2)

    async def head(self) -> int:
        last: int = self._fetch(LAST_SQL, ())[0][0]
        return last + 1

    async def contains(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        return {row[0] for row in self._fetch(CONTAINS_SQL, (_json(ids),))}

    async def records(self, ids: Sequence[str]) -> dict[str, Event]:
        """The stored records with these ids (:class:`streams.conflicts.RecordLookup`)."""
        if not ids:
            return {}
        return {row[1]: from_stored(*row) for row in self._fetch(BY_IDS_SQL, (_json(ids),))}

    async def set_aside(self, items: Sequence[Quarantined]) -> None:
        if items:
            raise LogError(f"{self.path} is open for reading only: nothing can be set aside")

    async def quarantine(self) -> list[Quarantined]:
        if "quarantine" not in self._tables:
            return []
        rows = self._fetch(QUARANTINE_SQL, ())
        return [Quarantined(source=s, line=n, reason=r, raw=raw) for s, n, r, raw in rows]

    async def read_page(
        self, offset: int, limit: int, *, type_: str | None = None
    ) -> list[StoredRow]:
        """Up to ``limit`` stored rows from ``offset`` on (of one ``type_`` if given), still
        encoded (:class:`streams.paging.RowPages`)."""
        if type_ is None:
            return self._fetch(self._page, (max(offset, 0), limit))
        return self._fetch(self._type_page, (type_, max(offset, 0), limit))

    async def read_about(
        self, subjects: Sequence[str], offset: int, limit: int
    ) -> list[StoredRow] | None:
        """Up to ``limit`` stored rows from ``offset`` on filed under any of ``subjects``;
        None when the log has no subject index of this version
        (:class:`streams.paging.SubjectPages`)."""
        if self._indexed is None:
            self._indexed = sqlite_subjects.usable(self._db)
        if not self._indexed:
            return None
        return self._fetch(self._find, (_json(subjects), max(offset, 0), limit))

    async def seal(self, offset: int, head: str) -> None:
        raise LogError(f"{self.path} is open for reading only: it cannot be sealed")

    async def sealed(self) -> tuple[int, str] | None:
        if "seal" not in self._tables:
            return None
        rows = self._fetch(SEALED_SQL, ())
        return (rows[0][0], rows[0][1]) if rows else None

    def select(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """The rows of one of :mod:`streams.backends.sqlite_subjects`' record queries
        (``prev`` read as NULL on a log written before the hash chain)."""
        if self._find is not sqlite_subjects.FIND:
            sql = sql.replace(*_NO_PREV)
        return self._fetch(sql, params)

    def _fetch(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise _wrap(exc, "query failed") from exc


def _json(items: Sequence[str]) -> str:
    return orjson.dumps(list(items)).decode()


async def open_url(url: str, *, read_only: bool = True) -> SQLiteReader:
    """Open ``sqlite:///relative.db`` or ``sqlite:////absolute.db`` for reading (the
    ``read_only`` keyword is the other backends' :func:`streams.backends.open_reader`
    signature; this one only reads)."""
    path = url.split("://", 1)[1].removeprefix("/")
    if not path or path == ":memory:":
        raise NotALogError(f"{url} is a private in-memory log: there is nothing to read")
    return SQLiteReader.open(path)


def _wrap(exc: sqlite3.Error, what: str) -> LogError:
    message = f"{what}: {exc}"
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)):
        return BackendUnavailableError(message)
    return LogError(message)
