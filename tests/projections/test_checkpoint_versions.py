"""Checkpoints of every layout version this tide reads (``projections.checkpoint_codec``):
the ones earlier tides kept (version 2, stored in ``tests/projections/golden``, and
version 1 made from them) load into the fold from offset 0 of their records, their state
digest is computed as they computed it, and damage to them is caught as to the current
version's."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from projections.base import CheckpointError
from projections.checkpoint_codec import (
    READS,
    VERSION,
    Snapshot,
    decode_checked,
    decode_snapshot,
    read_header,
    state_digest,
)
from projections.effects import EffectsState
from projections.world import World
from streams.chain_check import ChainChecker
from tests.projections.golden_checkpoints import as_version_1, version_2
from tests.projections.test_checkpoints_by_position import _flip, _kept, _log, _records

LOGS = ("stale-metrics", "pressure-graceful", "demo")


def _folds(log: str, positions: list[int]) -> Iterator[Snapshot]:
    """The fold from offset 0 of the log's records, at each of ``positions`` (ascending)."""
    records = _records(f"{log}.jsonl")
    world, effects, chain = World(), EffectsState(), ChainChecker()
    done = 0
    for position in positions:
        for record in records[done:position]:
            world.apply(record)
            effects.apply(record)
            chain.feed(record)
        done = position
        yield Snapshot(position, "", records[position - 1].id, world, effects, chain.state())


@pytest.mark.parametrize("version", [2, 1])
@pytest.mark.parametrize("log", LOGS)
def test_an_earlier_tides_checkpoint_is_the_fold_from_zero_of_its_records(
    log: str, version: int
) -> None:
    stored = version_2(log)
    assert len(stored) >= 3
    positions = [position for position, _ in stored]
    for (position, data), folded in zip(stored, _folds(log, positions), strict=True):
        if version == 1:
            data = as_version_1(data)
        header = read_header(data)
        assert (header.version, header.position) == (version, position)
        snapshot, state = decode_checked(data)
        assert state == header.state == snapshot.state
        assert snapshot.world.dump() == folded.world.dump(), position
        assert snapshot.effects.dump() == folded.effects.dump(), position
        assert snapshot.chain == folded.chain, position
        # a --jobs segment ending here computes the digest as this checkpoint's writer did
        assert state_digest(folded, 2) == header.state
        assert state_digest(folded, VERSION) != header.state  # another layout's parts
        with pytest.raises(CheckpointError, match="digest does not match"):
            decode_snapshot(_flip(data))


@pytest.mark.parametrize("log", LOGS[:2])
def test_the_current_checkpoint_at_the_same_position_holds_the_same_state(log: str) -> None:
    """Version 3 writes the cluster's rows otherwise (maps named by digest): the state it
    loads is the same, its digest the fold's at version 3."""
    current = {read_header(d).position: d for d in asyncio.run(_kept(_log(f"{log}.jsonl", 13)))}
    stored = version_2(log)
    positions = [position for position, _ in stored]
    for (position, old), folded in zip(stored, _folds(log, positions), strict=True):
        new = current[position]
        assert read_header(new).version == VERSION == 3
        assert decode_snapshot(new).world.dump() == decode_snapshot(old).world.dump()
        assert state_digest(folded) == read_header(new).state


def test_a_version_not_read_has_no_state_digest() -> None:
    folded = next(_folds("stale-metrics", [13]))
    assert READS == (1, 2, 3)
    with pytest.raises(ValueError, match="no checkpoint version 4"):
        state_digest(folded, 4)
