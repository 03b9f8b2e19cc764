"""Checkpoints: a projection's state and position written together, and the runner.

A checkpoint is one row ``(name, position, state)`` written in one statement, so a
projection can never resume with a state from one point and a position from another.
:func:`run_projection` loads the checkpoint (if any), folds the log from the stored
position to its head (or ``stop``) and checkpoints every ``checkpoint_every`` records and at
the end. A resumed projection equals a full refold (``tests/projections/test_store.py``).

Backends: :class:`MemoryCheckpointStore` and :class:`SQLiteCheckpointStore` (aiosqlite,
table ``checkpoints(name PRIMARY KEY, position, state BLOB)``, in the log's ``.db`` file or
a separate one). This module is the only one under ``projections`` that does I/O.

The World checkpoint (name :data:`WORLD_CHECKPOINT`) is what the commands that write a log
leave behind (:func:`checkpoint_world`) and what the reading commands resume from
(:func:`resume_world`) instead of refolding from offset 0. A position is "the last folded
offset + 1", never a record count, so a resumed fold reads on with ``log.read(position)``
whatever the log's offsets look like.
"""

from __future__ import annotations

import abc
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from projections.base import CheckpointError, Projection, paused_gc
from projections.world import World
from streams.backends import normalise_url
from streams.backends.kafka_url import checkpoint_path
from streams.log import EventLog

#: the checkpoint of a default :class:`~projections.world.World` in a log's store
WORLD_CHECKPOINT = "world"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A stored projection state: ``state`` was taken with ``position`` records folded."""

    name: str
    position: int
    state: bytes


class CheckpointStore(abc.ABC):
    """Where projections keep their checkpoints."""

    @abc.abstractmethod
    async def save(self, name: str, position: int, state: bytes) -> None:
        """Replace the checkpoint of ``name`` (state and position in one write)."""

    @abc.abstractmethod
    async def load(self, name: str) -> Checkpoint | None:
        """The checkpoint of ``name``, or None."""

    @abc.abstractmethod
    async def delete(self, name: str) -> None:
        """Forget the checkpoint of ``name``."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""

    async def __aenter__(self) -> CheckpointStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class MemoryCheckpointStore(CheckpointStore):
    """Checkpoints in a dict (tests, simulations)."""

    def __init__(self) -> None:
        self._rows: dict[str, Checkpoint] = {}

    async def save(self, name: str, position: int, state: bytes) -> None:
        self._rows[name] = Checkpoint(name, position, bytes(state))

    async def load(self, name: str) -> Checkpoint | None:
        return self._rows.get(name)

    async def delete(self, name: str) -> None:
        self._rows.pop(name, None)


class SQLiteCheckpointStore(CheckpointStore):
    """Checkpoints in a SQLite table (WAL), safe to share a file with the SQLite log."""

    def __init__(self, db: aiosqlite.Connection, path: str) -> None:
        self._db = db
        self.path = path

    @classmethod
    async def open(cls, path: str | Path) -> SQLiteCheckpointStore:
        """Open (creating if needed) the checkpoint table in the database at ``path``."""
        db = await aiosqlite.connect(str(path))
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA busy_timeout=5000")
        await db.execute(
            "CREATE TABLE IF NOT EXISTS checkpoints ("
            "name TEXT PRIMARY KEY, position INTEGER NOT NULL, state BLOB NOT NULL)"
        )
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


async def open_store(url: str) -> CheckpointStore:
    """``memory://`` or ``sqlite:///path.db`` (a plain path means SQLite)."""
    if url.startswith("memory://"):
        return MemoryCheckpointStore()
    path = url.split("://", 1)[1].removeprefix("/") if "://" in url else url
    if "://" in url and not url.startswith("sqlite://"):
        raise ValueError(f"unsupported checkpoint store URL {url!r}")
    return await SQLiteCheckpointStore.open(path or ":memory:")


async def resume(projection: Projection, store: CheckpointStore) -> bool:
    """Load the stored checkpoint of ``projection`` if there is a usable one.

    A checkpoint the projection cannot read (another format, another set of members)
    is ignored and the projection is left as it was (fresh), to be refolded.
    """
    checkpoint = await store.load(projection.name)
    if checkpoint is None:
        return False
    try:
        projection.load(checkpoint.state)
    except CheckpointError:
        return False
    if projection.position != checkpoint.position:
        raise CheckpointError(
            f"checkpoint {projection.name!r}: row says position {checkpoint.position}, "
            f"state says {projection.position}"
        )
    return True


async def run_projection(
    log: EventLog,
    projection: Projection,
    store: CheckpointStore,
    *,
    checkpoint_every: int = 10_000,
    stop: int | None = None,
) -> int:
    """Bring ``projection`` up to the log's head (or ``stop``), checkpointing as it goes.

    Returns the number of records folded in this call. The projection resumes from its
    stored checkpoint when it has one (see :func:`resume`); a projection that is already
    ahead of the checkpoint (folded in memory) just continues. The cyclic garbage
    collector is paused meanwhile (:func:`projections.base.paused_gc`).
    """
    if checkpoint_every < 1:
        raise ValueError("checkpoint_every must be at least 1")
    if projection.position == 0:
        await resume(projection, store)
    start = projection.position
    folded = since_checkpoint = 0
    with paused_gc():
        async for event in log.read(start, stop):
            projection.apply(event)
            folded += 1
            since_checkpoint += 1
            if since_checkpoint >= checkpoint_every:
                await store.save(projection.name, projection.position, projection.dump())
                since_checkpoint = 0
        if since_checkpoint:
            await store.save(projection.name, projection.position, projection.dump())
    return folded


def store_path(log_url: str) -> str | None:
    """The SQLite file that keeps a log's checkpoints: the log's own file, or None.

    A SQLite log on a file keeps them in that file; a ``kafka://`` log in the local SQLite
    file its ``checkpoints=`` option names (a checkpoint is state and position written in
    one statement, which a local file gives for free; a compacted topic would have to
    carry megabytes of state per record). ``memory://`` and private ``sqlite://`` logs
    vanish with the process and keep none.
    """
    url = normalise_url(log_url)
    if url.startswith("kafka://"):
        return checkpoint_path(url)
    if not url.startswith("sqlite:///"):
        return None
    return url.removeprefix("sqlite:///") or None


async def open_log_store(log_url: str, *, create: bool) -> CheckpointStore | None:
    """The checkpoint store kept with the log at ``log_url``, or None if it has none.

    With ``create=False`` (the reading commands) nothing is written: a missing file or a
    file without a checkpoint table gives None, and the table is never created.
    """
    path = store_path(log_url)
    if path is None:
        return None
    if create:
        return await SQLiteCheckpointStore.open(path)
    if not Path(path).exists():
        return None
    try:
        db = await aiosqlite.connect(path)
    except (aiosqlite.Error, sqlite3.Error):
        return None
    try:
        found = await db.execute_fetchall(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'"
        )
    except (aiosqlite.Error, sqlite3.Error):
        found = []
    if not list(found):
        await db.close()
        return None
    return SQLiteCheckpointStore(db, path)


async def resume_world(
    store: CheckpointStore | None, *, upto: int | None, head: int
) -> World | None:
    """A default World restored from the World checkpoint, if it is usable here.

    Usable means: it loads into a default World (same projections, not corrupt), its row
    and state agree on the position, and that position is at most ``upto`` (the point
    asked for; None for the head) and at most ``head`` (a checkpoint from beyond the log
    is not this log's). Anything else gives None, so the caller folds from offset 0: a
    bad checkpoint costs time, never a wrong answer or a crash.
    """
    if store is None:
        return None
    try:
        checkpoint = await store.load(WORLD_CHECKPOINT)
    except (aiosqlite.Error, sqlite3.Error):
        return None
    limit = head if upto is None else min(upto, head)
    if checkpoint is None or checkpoint.position > limit:
        return None
    world = World()
    try:
        world.load(checkpoint.state)
    except (ValueError, KeyError, TypeError, AttributeError):  # CheckpointError is a ValueError
        return None
    return world if world.position == checkpoint.position else None


async def checkpoint_world(log: EventLog, store: CheckpointStore) -> int:
    """Fold ``log`` to its head into a default World and save it as the World checkpoint.

    Resumes from the stored World checkpoint when it is usable (:func:`resume_world`), so
    a log written in several runs is folded once overall. Returns the saved position.
    """
    head = await log.head()
    resumed = await resume_world(store, upto=None, head=head)
    world = resumed or World()
    start = world.position
    with paused_gc():
        async for event in log.read(start):
            world.apply(event)
    if resumed is None or world.position != start:
        await store.save(WORLD_CHECKPOINT, world.position, world.dump())
    return world.position
