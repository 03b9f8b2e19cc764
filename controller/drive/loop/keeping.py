"""Checkpoints kept while ``tide run`` runs, not only on its way out (issue 26).

Why: a restart after a kill, or a standby taking the lead, resumes from the latest
checkpoint kept with the log (:func:`projections.checkpoints.restart`); with checkpoints
only written on a clean exit, a killed run left its successor the whole run to fold
again. :class:`RunCheckpoints` follows the live loop's fold: it is started with the loop's
World and ledger where the loop's fold starts (a checkpoint, or offset 0), sees every record
the loop folds (:meth:`seen`), and keeps a checkpoint when its
:class:`~projections.checkpoints.CheckpointPolicy` says one is due (:meth:`save_if_due`,
called by the loop between two of its writes, the loop's lock held so nothing folds
meanwhile; the World is encoded in a worker thread, so the event loop goes on serving the
sources and the lease). It keeps none once the records it sees are not the log's every
record in a row (another replica wrote between them): its World is then not the log's
fold, until a takeover folds the log afresh and starts it again.
"""

from __future__ import annotations

import asyncio
import logging

from projections.checkpoint_codec import Snapshot, world_part
from projections.checkpoints import CheckpointPolicy, Keeper, Restart
from projections.effects import EffectsState
from projections.world import World
from streams.backends.checkpoints import CheckpointStore, open_log_store
from streams.events import Event
from streams.log import EventLog

logger = logging.getLogger(__name__)


class RunCheckpoints:
    """The checkpoints a live run keeps as it goes (see the module docstring)."""

    def __init__(self, store: CheckpointStore, policy: CheckpointPolicy) -> None:
        self.store, self.policy = store, policy
        self.keeper: Keeper | None = None
        #: checkpoints written by this run so far
        self.written = 0

    def start(self, world: World, effects: EffectsState, snapshot: Snapshot | None) -> None:
        """Follow a fold that starts at ``snapshot`` (None: offset 0) into ``world`` and the
        ledger ``effects`` (both the loop's: the keeper folds neither)."""
        self.keeper = Keeper(self.store, self.policy, world=world, start=snapshot, effects=effects)

    def seen(self, record: Event, *, linked: bool = False) -> None:
        """A record the loop folded (in offset order); ``linked``: its writer linked it just
        now (:meth:`projections.checkpoints.Keeper.feed`)."""
        keeper = self.keeper
        if keeper is None:
            return
        if record.offset != keeper.position:
            logger.info(
                "checkpoints paused: offset %d follows %d (another writer)",
                record.offset,
                keeper.position - 1,
            )
            self.keeper = None
            return
        keeper.feed(record, linked=linked)

    @property
    def due(self) -> bool:
        """Whether a checkpoint is due at the records seen."""
        return self.keeper is not None and self.keeper.due

    async def save_if_due(self, world: World) -> bool:
        """Keep a checkpoint of ``world`` if one is due and ``world`` is at the records
        seen (the caller holds the loop's lock); whether one was kept."""
        keeper = self.keeper
        if keeper is None or not keeper.due or world.position != keeper.position:
            return False
        part = await asyncio.to_thread(world_part, world, cache=keeper.rows)
        keeper.world = world
        await keeper.save(world=part)
        self.written += 1
        positions = [info.position for info in await self.store.stored()]
        kept = set(self.policy.retained(positions))
        dropped = [p for p in positions if p not in kept]
        if dropped:  # the retention, as a writer's end applies it
            await self.store.drop_at(dropped)
        logger.info("checkpoint kept at position %d", keeper.position)
        return True

    async def close(self) -> None:
        """Close the store (the loop's run is over)."""
        self.keeper = None
        await self.store.close()


async def open_run_checkpoints(log: EventLog, policy: CheckpointPolicy) -> RunCheckpoints | None:
    """The checkpoints ``log`` keeps while a run writes it (its store opened for writing,
    created if need be); None for a log that keeps none (``memory://``, Kafka without a
    ``checkpoints=`` store)."""
    if not log.url:
        return None
    store = await open_log_store(log.url, create=True)
    return RunCheckpoints(store, policy) if store is not None else None


def snapshot_of(resumed: Restart | None) -> Snapshot | None:
    """The checkpoint a restart resumed from, if any."""
    return resumed.snapshot if resumed is not None else None


__all__ = ["RunCheckpoints", "open_run_checkpoints", "snapshot_of"]
