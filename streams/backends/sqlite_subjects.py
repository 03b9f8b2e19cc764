"""The SQLite log's subject index: which records are about which pod, node, zone or
namespace (the keys of :func:`streams.subjects.subjects_of`), so that ``tide audit
timeline`` and ``tide audit decisions --node/--namespace`` read those records and no
others.

One table beside ``events``, ``subjects (subject, "offset")``, its primary key the index
(``WITHOUT ROWID``: the table *is* the index). The writer fills it in the transaction that
appends the records (:func:`rows_of`, inserted by ``streams.backends.sqlite._store``). A
log written before the index gets it from the first writer that opens it
(:func:`ensure`: the table created and every stored record indexed, in one transaction);
a reader never creates it: on a log without it, :data:`FIND` is not asked and the reader
scans the log as before, with the same answer.

The table records the version of :func:`streams.subjects.subjects_of` it was built with
(``subjects_version``): another version's index is dropped and rebuilt by the next writer,
and not read meanwhile.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from streams.codec import from_stored
from streams.events import Event
from streams.subjects import READS, VERSION, subjects_of

TABLE = "subjects"
VERSION_TABLE = "subjects_version"
_CREATE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    subject TEXT NOT NULL,
    "offset" INTEGER NOT NULL,
    PRIMARY KEY (subject, "offset")
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (
    one INTEGER PRIMARY KEY CHECK (one = 0),
    version INTEGER NOT NULL
);
"""
_VERSION = f"SELECT version FROM {VERSION_TABLE} WHERE one = 0"
_SET_VERSION = f"INSERT OR REPLACE INTO {VERSION_TABLE} (one, version) VALUES (0, ?)"
INSERT = f'INSERT OR IGNORE INTO {TABLE} (subject, "offset") VALUES (?, ?)'
_ALL = (
    'SELECT "offset", id, at, type, cause, v, data, NULL FROM events '
    'WHERE "offset" >= ? ORDER BY "offset" LIMIT ?'
)
#: the stored rows under any of some subjects (a JSON list), from an offset on, a page
FIND = (
    'SELECT "offset", id, at, type, cause, v, data, prev FROM events WHERE "offset" IN '
    f'(SELECT DISTINCT "offset" FROM {TABLE} WHERE subject IN (SELECT value FROM json_each(?)) '
    'AND "offset" >= ?) ORDER BY "offset" LIMIT ?'
)
_EVICTIONS = (
    'SELECT "offset", id, at, type, cause, v, data, NULL FROM events '
    'WHERE type = ? AND "offset" >= ? ORDER BY "offset" LIMIT ?'
)
_BACKFILL_PAGE = 5_000


def rows_of(events: Iterable[tuple[int, Event]]) -> list[tuple[str, int]]:
    """The index rows of ``(offset, event)`` pairs."""
    return [(subject, offset) for offset, event in events for subject in subjects_of(event)]


def version_of(con: sqlite3.Connection) -> int | None:
    """The version of the file's index (None: it has none; read only: creates nothing)."""
    try:
        row = con.execute(_VERSION).fetchone()
    except sqlite3.OperationalError:  # no such table: a log from before the index
        return None
    return row[0] if row is not None and isinstance(row[0], int) else None


def usable(con: sqlite3.Connection) -> bool:
    """Whether the file holds an index a reader can ask (of a version in
    :data:`streams.subjects.READS`: every key but the mentions of a later version)."""
    return version_of(con) in READS


def ensure(con: sqlite3.Connection) -> None:
    """Create the index of a log that lacks it (or holds another version's) and index
    every stored record, in one ``BEGIN IMMEDIATE`` transaction: the writer's migration.
    A log already indexed costs one query."""
    if version_of(con) == VERSION:
        return
    con.execute("BEGIN IMMEDIATE")
    try:
        held = version_of(con)  # asked again under the lock: another writer may have built it
        if held in READS and held != VERSION:  # a version 1 index lacks the evictions' keys
            _add_mentions(con)
            con.execute(_SET_VERSION, (VERSION,))
        elif held != VERSION:
            con.execute(f"DROP TABLE IF EXISTS {TABLE}")
            for statement in _CREATE.split(";"):
                if statement.strip():
                    con.execute(statement)
            offset = 0
            while rows := con.execute(_ALL, (offset, _BACKFILL_PAGE)).fetchall():
                events = ((row[0], from_stored(*row)) for row in rows)
                con.executemany(INSERT, rows_of(events))
                offset = rows[-1][0] + 1
            con.execute(_SET_VERSION, (VERSION,))
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _add_mentions(con: sqlite3.Connection) -> None:
    """File every eviction under the keys version 2 added (:func:`mention_keys`)."""
    offset = 0
    while rows := con.execute(_EVICTIONS, ("decision.evict", offset, _BACKFILL_PAGE)).fetchall():
        events = ((row[0], from_stored(*row)) for row in rows)
        con.executemany(INSERT, rows_of(events))
        offset = rows[-1][0] + 1


def insert(con: sqlite3.Connection, rows: Sequence[tuple[str, int]]) -> None:
    """Add index rows inside the caller's transaction."""
    if rows:
        con.executemany(INSERT, rows)


_ROW = 'SELECT "offset", id, at, type, cause, v, data, prev FROM events '
#: the records of some types (a JSON list) whose stored payload holds a string: a superset
#: of those naming it (the caller decodes and filters them), read without decoding the rest
MENTIONING = (
    _ROW + 'WHERE type IN (SELECT value FROM json_each(?)) AND instr(data, ?) > 0 ORDER BY "offset"'
)
#: the records of some types caused by any of some records (ids, a JSON list)
CAUSED = (
    _ROW + "WHERE type IN (SELECT value FROM json_each(?)) "
    'AND cause IN (SELECT value FROM json_each(?)) ORDER BY "offset"'
)
#: the records of one type under any of some subjects whose payload holds a string
FILED_MENTIONING = (
    _ROW + f'WHERE "offset" IN (SELECT "offset" FROM {TABLE} WHERE subject IN '
    "(SELECT value FROM json_each(?))) AND type = ? AND instr(data, ?) > 0 "
    'ORDER BY "offset"'
)


async def indexed(log: Any) -> int | None:
    """The version of the subject index of the SQLite log ``log`` (as :func:`query`)."""
    rows = await _select(log, _VERSION, ())
    return rows[0][0] if rows and isinstance(rows[0][0], int) else None


def events_of(rows: Iterable[Sequence[object]]) -> list[Event]:
    """The events of rows as the queries above select them."""
    return [from_stored(*row) for row in rows]  # type: ignore[arg-type]


#: the SQLite log's classes, by module: the writer (aiosqlite) and the read-only reader
_SQLITE = {
    ("streams.backends.sqlite", "SQLiteLog"),
    ("streams.backends.sqlite_reader", "SQLiteReader"),
}


def is_sqlite(log: object) -> bool:
    """Whether ``log`` is a SQLite log (:class:`streams.backends.sqlite.SQLiteLog`, or the
    read-only :class:`streams.backends.sqlite_reader.SQLiteReader`), told without importing
    the driver (its callers may not: the storage-driver contract)."""
    kind = type(log)
    return (kind.__module__, kind.__name__) in _SQLITE


async def query(log: Any, sql: str, *params: object) -> list[Event]:
    """The events one of the queries above selects from the SQLite log ``log`` (one of
    :func:`is_sqlite`'s; not named in the signature, so that readers of this module need
    not import the driver)."""
    return events_of(await _select(log, sql, params))


async def _select(log: Any, sql: str, params: Sequence[object]) -> list[Any]:
    """The rows ``sql`` selects from the SQLite log ``log`` (as :func:`query`)."""
    if type(log).__name__ == "SQLiteReader":  # synchronous, on the caller's thread
        return list(log.select(sql, params))
    async with log._lock:
        return list(await log._fetch(sql, params))
