"""The SQLite adapter of the checkpoint port (``streams.backends.checkpoints``).

Two tables, in WAL mode, safe to share a file with the SQLite log (it is the log's own file
unless a ``kafka://`` log names another):

* ``checkpoints(name TEXT PRIMARY KEY, position INTEGER NOT NULL, state BLOB NOT NULL)``,
  the checkpoints by name. A save is one ``INSERT ... ON CONFLICT DO UPDATE``: position
  and state change together or not at all. The table and the statements are those the
  checkpoints have always been written with, so a file written by an earlier tide loads as
  it did (``tests/streams/test_checkpoints.py``);
* ``checkpoints_at(position INTEGER PRIMARY KEY, at TEXT NOT NULL, size INTEGER NOT NULL,
  state BLOB NOT NULL)``, a log's checkpoints by position (one ``INSERT OR REPLACE``
  each), created with the first of them. A file without it reads as having no checkpoint
  by position; a store opened read-only never creates it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

import aiosqlite

from streams.backends.checkpoints import Checkpoint, CheckpointStore, Stored
from streams.backends.sqlite_files import read_only_uri, tables

_TABLE = (
    "CREATE TABLE IF NOT EXISTS checkpoints ("
    "name TEXT PRIMARY KEY, position INTEGER NOT NULL, state BLOB NOT NULL)"
)


_BY_POSITION = (
    "CREATE TABLE IF NOT EXISTS checkpoints_at (position INTEGER PRIMARY KEY, "
    "at TEXT NOT NULL, size INTEGER NOT NULL, state BLOB NOT NULL)"
)


class SQLiteCheckpointStore(CheckpointStore):
    """Checkpoints in a SQLite table (WAL), safe to share a file with the SQLite log."""

    unreadable: ClassVar[tuple[type[Exception], ...]] = (aiosqlite.Error, sqlite3.Error)

    def __init__(self, db: aiosqlite.Connection, path: str, *, by_position: bool = True) -> None:
        self._db = db
        self.path = path
        #: whether the file has the table of checkpoints by position
        self._by_position = by_position

    @classmethod
    async def open(cls, path: str | Path) -> SQLiteCheckpointStore:
        """Open (creating if needed) the checkpoint table in the database at ``path``."""
        db = await aiosqlite.connect(str(path))
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA busy_timeout=5000")
        await db.execute(_TABLE)
        await db.commit()
        async with db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints_at'"
        ) as cursor:
            by_position = await cursor.fetchone() is not None
        return cls(db, str(path), by_position=by_position)

    async def save(self, name: str, position: int, state: bytes) -> None:
        await self._db.execute(
            "INSERT INTO checkpoints(name, position, state) VALUES (?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET position=excluded.position, state=excluded.state",
            (name, position, state),
        )
        await self._db.commit()

    async def load(self, name: str) -> Checkpoint | None:
        async with self._db.execute(
            "SELECT position, state FROM checkpoints WHERE name = ?", (name,)
        ) as cursor:
            row = await cursor.fetchone()
        if row is None:
            return None
        return Checkpoint(name, int(row[0]), bytes(row[1]))

    async def delete(self, name: str) -> None:
        await self._db.execute("DELETE FROM checkpoints WHERE name = ?", (name,))
        await self._db.commit()

    async def save_at(self, position: int, at: str, state: bytes) -> None:
        if not self._by_position:  # created with the first (a file by name only is as it was)
            await self._db.execute(_BY_POSITION)
            self._by_position = True
        await self._db.execute(
            "INSERT OR REPLACE INTO checkpoints_at(position, at, size, state) VALUES (?, ?, ?, ?)",
            (position, at, len(state), state),
        )
        await self._db.commit()

    async def stored(self) -> list[Stored]:
        if not self._by_position:
            return []
        async with self._db.execute(
            "SELECT position, at, size FROM checkpoints_at ORDER BY position"
        ) as cursor:
            rows = await cursor.fetchall()
        return [Stored(int(p), str(at), int(size)) for p, at, size in rows]

    async def load_at(self, position: int) -> bytes | None:
        if not self._by_position:
            return None
        async with self._db.execute(
            "SELECT state FROM checkpoints_at WHERE position = ?", (position,)
        ) as cursor:
            row = await cursor.fetchone()
        return None if row is None else bytes(row[0])

    async def drop_at(self, positions: Iterable[int]) -> None:
        if not self._by_position:
            return
        await self._db.executemany(
            "DELETE FROM checkpoints_at WHERE position = ?", [(p,) for p in positions]
        )
        await self._db.commit()

    async def close(self) -> None:
        await self._db.close()


async def open_file(path: str | Path) -> SQLiteCheckpointStore:
    """:meth:`SQLiteCheckpointStore.open`: the table at ``path``, created if needed."""
    return await SQLiteCheckpointStore.open(path)


async def open_existing(path: str | Path) -> SQLiteCheckpointStore | None:
    """The checkpoint table already in the SQLite file at ``path``, opened read-only, or
    None (the file is not SQLite, cannot be opened, or holds no such table); writes
    nothing, not a byte beside the file either
    (:func:`streams.backends.sqlite_files.read_only_uri`)."""
    file = Path(path)
    if not file.is_file() or file.stat().st_size == 0:
        return None
    try:
        found = tables(file)
        if "checkpoints" not in found and "checkpoints_at" not in found:
            return None
        db = await aiosqlite.connect(read_only_uri(file), uri=True)
    except (aiosqlite.Error, sqlite3.Error):
        return None
    return SQLiteCheckpointStore(db, str(path), by_position="checkpoints_at" in found)
