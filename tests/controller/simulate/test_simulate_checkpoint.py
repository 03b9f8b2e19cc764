"""`tide simulate --log` leaves the World checkpoint a fold of the whole log gives: from the
run's own World when the log was empty, by folding the log otherwise."""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

import controller.compose.simulated as composed
from controller.cli import app
from controller.cli.reading import reader
from controller.simulate.spool import BATCH, Spool
from projections.checkpoint_codec import decode_snapshot
from projections.store import checkpoint_world
from projections.world import World
from streams.backends.checkpoints import CheckpointStore, open_log_store
from streams.log import EventLog

SOURCES = Path(__file__).resolve().parents[2] / "replay" / "golden" / "sources"
SCENARIO = SOURCES / "tdm-budgets.yaml"
OTHER = SOURCES / "allocate-gang.yaml"


def _simulate(db: Path, scenario: Path, *extra: str) -> None:
    args = [str(scenario), "-c", str(scenario), "--decisions", os.devnull, "--log", str(db)]
    result = CliRunner().invoke(app, ["simulate", *args, *extra])
    assert result.exit_code == 0, result.output


def _checkpoint(db: Path) -> tuple[int, bytes]:
    """The head's checkpoint: its position and the dump of its World."""

    async def load() -> tuple[int, bytes]:
        store = await open_log_store(f"sqlite:///{db}", create=False)
        assert store is not None
        async with store:
            head = (await store.stored())[-1].position
            found = await store.load_at(head)
            assert found is not None
            snapshot = decode_snapshot(found)
            return snapshot.position, snapshot.world.dump()

    return asyncio.run(load())


def _refolded(db: Path) -> tuple[int, bytes]:
    world = World()
    with reader(str(db)) as log:
        for record in log.records():
            world.apply(record)
        assert world.position == log.head()
    return world.position, world.dump()


@pytest.fixture
def refolds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the whole-log folds save_checkpoint runs."""
    calls: list[int] = []

    async def counted(log: EventLog, store: CheckpointStore) -> int:
        calls.append(1)
        return await checkpoint_world(log, store)

    monkeypatch.setattr(composed, "checkpoint_world", counted)
    return calls


def test_a_run_onto_an_empty_log_checkpoints_its_own_world(
    tmp_path: Path, refolds: list[int]
) -> None:
    db = tmp_path / "run.db"
    _simulate(db, SCENARIO)
    assert refolds == []
    assert _checkpoint(db) == _refolded(db)


def test_a_second_run_and_a_repeat_fold_the_log(tmp_path: Path, refolds: list[int]) -> None:
    db = tmp_path / "run.db"
    _simulate(db, SCENARIO)
    _simulate(db, OTHER, "--another-run")
    assert refolds == [1]
    assert _checkpoint(db) == _refolded(db)
    _simulate(db, SCENARIO)  # the first run again: nothing new is written
    assert refolds == [1, 1]
    assert _checkpoint(db) == _refolded(db)


@pytest.mark.parametrize("every", ["1", "7", "40"])
@pytest.mark.parametrize("batch", [BATCH, 1])
def test_a_run_onto_an_empty_log_keeps_checkpoints_along_it(
    tmp_path: Path, refolds: list[int], monkeypatch: pytest.MonkeyPatch, every: str, batch: int
) -> None:
    """Every checkpoint the spool kept as the run went is the fold of the log's records
    before it (World, ledger, chain checker state); the log was not folded again. With a
    batch of 1 every step's records are written before the step ends: a checkpoint due
    there is kept at once (it was held for a record that never came, and held up every
    later one: a day simulated with a checkpoint every 10,000 records kept only the head's)."""
    from projections.checkpoints import CheckpointPolicy
    from projections.effects import EffectsState
    from streams.chain_check import ChainChecker

    monkeypatch.setattr(composed, "Spool", functools.partial(Spool, batch=batch))
    monkeypatch.setenv("TIDE_CHECKPOINT_RECORDS", every)
    monkeypatch.setenv("TIDE_CHECKPOINT_KEEP", "1000")
    db = tmp_path / "run.db"
    _simulate(db, SCENARIO)
    assert refolds == []
    with reader(str(db)) as log:
        records = list(log.records())

    async def stored() -> list[bytes]:
        store = await open_log_store(f"sqlite:///{db}", create=False)
        assert store is not None
        async with store:
            found = [await store.load_at(s.position) for s in await store.stored()]
        return [data for data in found if data is not None]

    kept = [decode_snapshot(data) for data in asyncio.run(stored())]
    positions = [s.position for s in kept]
    assert positions[-1] == len(records) and len(positions) >= len(records) // (
        int(every) + CheckpointPolicy().keep
    )
    assert positions == sorted(set(positions))
    # not more often than due, and along the run, not only at its end
    assert all(b - a >= int(every) for a, b in itertools.pairwise(positions[:-1]))
    assert len(positions) > len(records) // (4 * int(every))
    for snapshot in kept:
        cut = records[: snapshot.position]
        assert snapshot.world.dump() == World().fold(cut).dump()
        effects, checker = EffectsState(), ChainChecker()
        effects.fold(cut)
        for record in cut:
            checker.feed(record)
        assert snapshot.effects.dump() == effects.dump()
        assert snapshot.chain == checker.state()
        assert snapshot.last == cut[-1].id
