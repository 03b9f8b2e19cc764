"""Checkpoints of projections: what one holds, the runner, and the World kept with a log.

A checkpoint is a projection's state (its ``dump()``) and its position, kept together in a
:class:`~streams.backends.checkpoints.CheckpointStore`, the port in ``streams/backends/``
that stores opaque bytes at a position (in memory, or in a SQLite table in the log's own
file): this module does no I/O of its own and knows no log URL. :func:`run_projection`
loads the checkpoint (if any), folds the log from the stored position to its head (or
``stop``) and checkpoints every ``checkpoint_every`` records and at the end. A resumed
projection equals a full refold (``tests/projections/test_store.py``).

The World kept with a log: the commands that write a log keep checkpoints by position
(:func:`checkpoint_world`, :mod:`projections.checkpoints`) and the reading commands resume
from the nearest one at or before what they need (:func:`resume_at`) instead of refolding
from offset 0. The single World checkpoint tide kept before (name
:data:`WORLD_CHECKPOINT`, overwritten at the head) is still read (:func:`resume_world`),
never written. A position is "the last folded offset + 1", never a record count, so a
resumed fold reads on with ``log.read(position)`` whatever the log's offsets look like.
"""

from __future__ import annotations

import sys
from datetime import datetime

from projections.base import CheckpointError, Projection, paused_gc
from projections.checkpoints import CheckpointPolicy, Warn, keep_checkpoints, nearest
from projections.world import World
from streams.backends.checkpoints import CheckpointStore
from streams.log import EventLog

#: the checkpoint of a default :class:`~projections.world.World` in a log's store
WORLD_CHECKPOINT = "world"


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
    except store.unreadable:
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


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


async def resume_at(
    store: CheckpointStore | None,
    log: EventLog,
    *,
    upto: int | None,
    at: datetime | None = None,
    warn: Warn | None = _stderr,
) -> World | None:
    """The World of the nearest usable checkpoint at or before position ``upto`` (None:
    the head) — with ``at``, one whose records are all at or before that time — or None.

    The checkpoints by position (:func:`projections.checkpoints.nearest`: a bad one is
    skipped with one warning line, on stderr by default) and the single World
    checkpoint of earlier tides (:func:`resume_world`, without ``at``: it says no time)
    are the candidates; the one further along wins. Either equals a fold from offset 0.
    """
    if store is None:
        return None
    head = await log.head()
    found = await nearest(store, log, upto=upto, at=at, warn=warn)
    old = None if at is not None else await resume_world(store, upto=upto, head=head)
    if old is not None and (found is None or old.position > found.position):
        return old
    return found.world if found is not None else None


async def checkpoint_world(
    log: EventLog, store: CheckpointStore, *, policy: CheckpointPolicy | None = None
) -> int:
    """Fold ``log`` to its head into a default World, keeping checkpoints by position on
    the way and one at the head (:func:`projections.checkpoints.keep_checkpoints`).

    Resumes from the latest good checkpoint, so a log written in several runs is folded
    once overall. Returns the head's position.
    """
    keeper = await keep_checkpoints(log, store, policy=policy, warn=_stderr)
    return keeper.position
