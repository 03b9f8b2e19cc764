"""The SQLite adapter of the checkpoint port (``streams.backends.checkpoints``).

One table, ``checkpoints(name TEXT PRIMARY KEY, position INTEGER NOT NULL, state BLOB NOT
NULL)``, in WAL mode, safe to share a file with the SQLite log (it is the log's own file
unless a ``kafka://`` log names another). A save is one ``INSERT ... ON CONFLICT DO
UPDATE``: position and state change together or not at all. The table and the statements
are those the checkpoints have always been written with, so a file written by an earlier
tide loads as it did (``tests/streams/test_checkpoints.py``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import ClassVar

import aiosqlite

from streams.backends.checkpoints import Checkpoint, CheckpointStore
from streams.backends.sqlite_files import read_only_uri, tables

_TABLE = (
    "CREATE TABLE IF NOT EXISTS checkpoints ("
    "name TEXT PRIMARY KEY, position INTEGER NOT NULL, state BLOB NOT NULL)"
)


class SQLiteCheckpointStore(CheckpointStore):
    """Checkpoints in a SQLite table (WAL), safe to share a file with the SQLite log."""

    unreadable: ClassVar[tuple[type[Exception], ...]] = (aiosqlite.Error, sqlite3.Error)

    def __init__(self, db: aiosqlite.Connection, path: str) -> None:
        self._db = db
        self.path = path

    @classmethod
    async def open(cls, path: str | Path) -> SQLiteCheckpointStore:
        """Open (creating if needed) the checkpoint table in the database at ``path``."""
        db = await aiosqlite.connect(str(path))
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA busy_timeout=5000")
        await db.execute(_TABLE)
        await db.commit()
        return cls(db, str(path))

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
        if "checkpoints" not in tables(file):
            return None
        db = await aiosqlite.connect(read_only_uri(file), uri=True)
    except (aiosqlite.Error, sqlite3.Error):
        return None
    return SQLiteCheckpointStore(db, str(path))
