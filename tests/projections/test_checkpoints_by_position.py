"""Checkpoints by position (``projections.checkpoints``): every answer from one equals the
answer of a fold from offset 0, whatever the cut point and the interval, and a bad one is
skipped for an earlier one (or offset 0) with one warning line."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from collections.abc import Callable
from datetime import datetime
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.cli.state_cmd import fold_log
from projections.base import CheckpointError
from projections.checkpoint_codec import (
    MAGIC,
    Snapshot,
    decode_checked,
    decode_snapshot,
    read_header,
    state_digest,
    state_of,
)
from projections.checkpoints import GRID, CheckpointPolicy, keep_checkpoints, nearest
from projections.effects import EffectsState
from projections.world import World
from streams.backends import open_log
from streams.backends.checkpoints import open_log_store
from streams.backends.sqlite import SQLiteLog
from streams.chain_check import ChainChecker
from streams.codec import decode
from streams.events import Event
from streams.recording import import_recording

GOLDEN = Path(__file__).parents[1] / "replay" / "golden"
#: a chained log (the chain checker's state is checked too) and an older one without
LOGS = ("stale-metrics.jsonl", "pressure-graceful.jsonl")


def _records(name: str) -> list[Event]:
    lines = (GOLDEN / name).read_bytes().splitlines()
    return [decode(line).with_offset(i) for i, line in enumerate(lines)]


def _policy(every: int) -> CheckpointPolicy:
    return CheckpointPolicy(every_records=every, every_minutes=0, keep=10_000, thinned=0)


async def _write(path: Path, name: str, every: int) -> None:
    async with await SQLiteLog.open(path) as log:
        await import_recording(GOLDEN / name, log)
        store = await open_log_store(f"sqlite:///{path}", create=True)
        assert store is not None
        async with store:
            await keep_checkpoints(log, store, policy=_policy(every))


@cache
def _log(name: str, every: int) -> str:
    """A SQLite log of golden log ``name`` with a checkpoint every ``every`` records (one
    file per pair, kept for the session: hypothesis reuses them)."""
    path = Path(tempfile.mkdtemp(prefix="tide-ckpt-")) / f"{every}.db"
    asyncio.run(_write(path, name, every))
    return f"sqlite:///{path}"


def _fold(records: list[Event], upto: int) -> World:
    return World().fold(records[:upto])


def _chain(records: list[Event], upto: int) -> ChainChecker:
    checker = ChainChecker()
    for record in records[:upto]:
        checker.feed(record)
    return checker


async def _nearest(url: str, upto: int | None, at: datetime | None = None) -> Snapshot | None:
    async with await open_log(url) as log:
        store = await open_log_store(url, create=False)
        assert store is not None
        async with store:
            return await nearest(store, log, upto=upto, at=at)


async def _kept(url: str) -> list[bytes]:
    """The bytes of every checkpoint kept with the log at ``url``."""
    store = await open_log_store(url, create=False)
    assert store is not None
    async with store:
        found = [await store.load_at(s.position) for s in await store.stored()]
    return [d for d in found if d is not None]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(LOGS), every=st.sampled_from([1, 7, 50, 1000]), data=st.data())
def test_a_checkpoint_is_the_fold_from_zero_of_its_records(
    name: str, every: int, data: st.DataObject
) -> None:
    records = _records(name)
    url = _log(name, every)
    cut = data.draw(st.integers(0, len(records) + 3), label="cut")
    found = asyncio.run(_nearest(url, cut))
    limit = min(cut, len(records))
    if limit < every and limit < len(records):
        assert found is None
        return
    assert found is not None
    snapshot = found
    want = len(records) if limit == len(records) else limit - limit % every
    assert snapshot.position == want  # the nearest at or before the cut
    assert snapshot.world.dump() == _fold(records, want).dump()
    effects = EffectsState()
    effects.fold(records[:want])
    assert snapshot.effects.dump() == effects.dump()
    assert snapshot.chain == _chain(records, want).state()
    # the chain checked on from the checkpoint ends as the check from offset 0
    resumed = ChainChecker.resumed(snapshot.chain)
    for record in records[want:]:
        resumed.feed(record)
    assert resumed.finish() == _chain(records, len(records)).finish()


@pytest.mark.parametrize("name", LOGS)
def test_the_state_digest_of_a_fold_is_its_checkpoints_state(name: str) -> None:
    """What a --jobs segment's end is compared by: computed from the fold (nothing
    compressed), it equals the ``state`` the writer put in each checkpoint's header; one
    record more or less gives another."""
    records = _records(name)
    url = _log(name, 13)
    for upto in range(13, len(records), 13):
        found = asyncio.run(_nearest(url, upto))
        assert found is not None and found.position == upto
        world = _fold(records, upto)
        effects = EffectsState()
        effects.fold(records[:upto])
        chain = _chain(records, upto).state()
        folded = Snapshot(upto, found.at, records[upto - 1].id, world, effects, chain)
        assert state_digest(folded) == found.state == folded.state
        world.apply(records[upto])
        ahead = Snapshot(upto + 1, found.at, records[upto].id, world, effects, chain)
        assert state_digest(ahead) != found.state


def test_decode_checked_is_the_snapshot_and_the_state_its_bytes_hold() -> None:
    """What a --jobs segment loads its checkpoint with: the bytes inflated once give the
    decoded state and its computed digest, which a forged header does not change."""
    url = _log(LOGS[0], 50)
    every = asyncio.run(_kept(url))
    assert every
    for data in every:
        snapshot, state = decode_checked(data)
        assert state == state_of(data) == snapshot.state
        assert snapshot.world.dump() == decode_snapshot(data).world.dump()
        header = read_header(data)
        forged = data.replace(header.state.encode(), b"0" * 64, 1)
        assert decode_checked(forged)[1] == state != decode_checked(forged)[0].state
        with pytest.raises(CheckpointError):
            decode_checked(data[:-3])


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(LOGS), every=st.sampled_from([1, 13, 1000]), data=st.data())
def test_state_from_checkpoints_equals_a_fold_from_zero(
    name: str, every: int, data: st.DataObject
) -> None:
    records = _records(name)
    url = _log(name, every)
    offset = data.draw(st.none() | st.integers(0, len(records) + 2), label="offset")
    moment = data.draw(st.none() | st.sampled_from([r.at for r in records]), label="at")
    got = asyncio.run(fold_log(url, at=moment, offset=offset))
    upto = len(records) if offset is None else offset
    want = World().fold(r for r in records[:upto] if moment is None or r.at <= moment)
    assert got.dump() == want.dump()


@pytest.mark.parametrize(
    ("positions", "keep", "thinned", "every", "kept"),
    [
        ([], 2, 2, 10, []),
        ([10, 20, 30], 5, 5, 10, [10, 20, 30]),
        ([10, 20, 30, 40, 50], 2, 0, 10, [40, 50]),
        # older ones few enough: each the first of its span of 10 records
        ([10, 20, 30, 40, 50, 60], 2, 5, 10, [10, 20, 30, 40, 50, 60]),
        # too many: spans of 20 (10, 20, 40: three), then of 40 (10, 40)
        ([10, 20, 30, 40, 50, 60], 2, 2, 10, [10, 40, 50, 60]),
        # spans 0-5 of 10 are too many for 4: of 20, the first of each (not the nearest to
        # its start); an empty span keeps none
        ([5, 12, 18, 55, 58, 90], 1, 4, 10, [5, 55, 90]),
        ([5, 12, 18, 55, 58, 90], 1, 6, 10, [5, 12, 55, 90]),
        # no trigger by records: spans of GRID records
        (
            [1, 2, GRID + 3, 2 * GRID, 3 * GRID + 1, 9 * GRID],
            1,
            8,
            0,
            [1, GRID + 3, 2 * GRID, 3 * GRID + 1, 9 * GRID],
        ),
        ([1, 2, GRID + 3, 2 * GRID, 3 * GRID + 1, 9 * GRID], 1, 2, 0, [1, 2 * GRID, 9 * GRID]),
    ],
)
def test_retention_keeps_the_newest_and_older_ones_spread_evenly(
    positions: list[int], keep: int, thinned: int, every: int, kept: list[int]
) -> None:
    policy = CheckpointPolicy(every_records=every, every_minutes=0, keep=keep, thinned=thinned)
    assert policy.retained(positions) == kept


@settings(max_examples=200, deadline=None)
@given(
    gaps=st.lists(st.integers(1, 300), min_size=1, max_size=120),
    keep=st.integers(1, 5),
    thinned=st.integers(0, 9),
    every=st.sampled_from([0, 7, 100]),
)
def test_retention_applied_as_a_writer_goes_keeps_what_the_whole_list_would(
    gaps: list[int], keep: int, thinned: int, every: int
) -> None:
    """A writer applies the retention after each checkpoint, to what it kept before and
    the new one: whatever it drops is never one the whole list would keep later, and the
    older ones kept are never more than ``thinned``."""
    policy = CheckpointPolicy(every_records=every, every_minutes=0, keep=keep, thinned=thinned)
    written: list[int] = []
    kept: list[int] = []
    for gap in gaps:
        written.append((written[-1] if written else 0) + gap)
        kept = policy.retained([*kept, written[-1]])
        assert kept == policy.retained(written)
        assert len(kept) <= keep + thinned


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TIDE_CHECKPOINT_RECORDS": "many"}, "TIDE_CHECKPOINT_RECORDS='many': not a number"),
        ({"TIDE_CHECKPOINT_KEEP": "0"}, "TIDE_CHECKPOINT_KEEP='0': must be at least 1"),
        ({"TIDE_CHECKPOINT_MINUTES": "-1"}, "TIDE_CHECKPOINT_MINUTES='-1': must be at least 0"),
    ],
)
def test_a_bad_setting_is_one_line_naming_its_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(") + "$"):
        CheckpointPolicy.from_env(env)


def test_settings_from_the_environment() -> None:
    env = {"TIDE_CHECKPOINT_RECORDS": "500", "TIDE_CHECKPOINT_MINUTES": "2.5"}
    assert CheckpointPolicy.from_env(env) == CheckpointPolicy(every_records=500, every_minutes=2.5)
    assert CheckpointPolicy.from_env({}) == CheckpointPolicy()


# -- bad checkpoints ---------------------------------------------------------------------


def _flip(data: bytes) -> bytes:
    at = len(data) - 5
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


def _version(data: bytes) -> bytes:
    return MAGIC + b"99" + data[len(MAGIC) + 1 :]


def _header(data: bytes) -> bytes:
    return data.replace(b'"position":', b'"posit!on":', 1)


DAMAGE: dict[str, Callable[[bytes, bytes], bytes]] = {
    "corrupt": lambda data, _: _flip(data),
    "truncated": lambda data, _: data[: len(data) // 2],
    "empty": lambda _data, _: b"",
    "foreign-bytes": lambda _data, _: b"PK\x03\x04 a zip file",
    "version-mismatched": lambda data, _: _version(data),
    "bad-header": lambda data, _: _header(data),
    "another-log's": lambda _, other: other,
}


def _damaged(name: str, every: int, cut: int, kind: str, tmp: Path) -> tuple[str, int]:
    """A copy of the log with the checkpoint nearest ``cut`` damaged; its position."""
    source = Path(_log(name, every).removeprefix("sqlite:///"))
    copy = tmp / "damaged.db"
    with sqlite3.connect(source) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    db = sqlite3.connect(copy)
    try:
        positions = [p for (p,) in db.execute("SELECT position FROM checkpoints_at") if p <= cut]
        position = max(positions)
        (data,) = db.execute(
            "SELECT state FROM checkpoints_at WHERE position=?", (position,)
        ).fetchone()
        other = _other_log_checkpoint(position)
        db.execute(
            "UPDATE checkpoints_at SET state=? WHERE position=?",
            (DAMAGE[kind](bytes(data), other), position),
        )
        db.commit()
    finally:
        db.close()
    return f"sqlite:///{copy}", position


def _other_log_checkpoint(position: int) -> bytes:
    """A good checkpoint of another log, at ``position`` (or the nearest before it)."""
    source = Path(_log("pressure-graceful.jsonl", 1).removeprefix("sqlite:///"))
    with sqlite3.connect(source) as db:
        row = db.execute(
            "SELECT state FROM checkpoints_at WHERE position <= ? ORDER BY position DESC LIMIT 1",
            (position,),
        ).fetchone()
    data = bytes(row[0])
    snapshot = decode_snapshot(data)
    assert read_header(data).position == snapshot.position
    return data


@pytest.mark.parametrize("kind", sorted(DAMAGE))
@pytest.mark.parametrize("cut", [1, 12, 49, 50, 99, 174, 175])
def test_a_bad_checkpoint_is_skipped_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, cut: int
) -> None:
    name, every = "stale-metrics.jsonl", 12
    records = _records(name)
    if cut < every:
        cut = every
    url, position = _damaged(name, every, cut, kind, tmp_path)
    got = asyncio.run(fold_log(url, offset=cut))
    assert got.dump() == _fold(records, cut).dump()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"warning: skipped checkpoint at position {position}: ")
    earlier = position - every if position % every == 0 else position - position % every
    where = f"position {earlier}" if earlier > 0 else "offset 0"
    assert lines[0].endswith(f"; folding from {where}")


@pytest.mark.parametrize("kind", [None, "corrupt", "another-log's", "version-mismatched"])
def test_log_checkpoints_lists_them_and_says_which_are_bad(
    tmp_path: Path, kind: str | None
) -> None:
    from typer.testing import CliRunner

    from controller.cli import app

    name, every = "stale-metrics.jsonl", 50
    if kind is None:
        url, position = _log(name, every), -1
    else:
        url, position = _damaged(name, every, 100, kind, tmp_path)
    result = CliRunner().invoke(app, ["log", "checkpoints", "--log", url])
    lines = result.output.splitlines()
    assert lines[0].split() == ["position", "log", "time", "size", "digest"]
    rows = [line.split() for line in lines[1:-1]]
    assert [int(row[0]) for row in rows] == [50, 100, 150, 175]
    records = _records(name)
    for row in rows:
        at = max(r.at for r in records[: int(row[0])])
        assert row[1] == at.isoformat().replace("+00:00", "Z")
        assert (row[3] == "ok") == (int(row[0]) != position)
    assert lines[-1] == "4 checkpoint(s); the log has 175 records"
    assert result.exit_code == (0 if kind is None else 1)


@pytest.mark.parametrize("kind", ["memory", "sqlite-file-beside"])
async def test_the_same_contract_with_a_store_beside_the_log(tmp_path: Path, kind: str) -> None:
    """As a ``kafka://`` log's: the log in one place (here in memory), its checkpoints in a
    store of their own (in memory, or the SQLite file a ``checkpoints=`` option names)."""
    from streams.backends.checkpoints import MemoryCheckpointStore, open_sqlite_store
    from streams.backends.memory import MemoryLog

    records = _records("stale-metrics.jsonl")
    log = MemoryLog()
    await log.append(records)
    store = (
        MemoryCheckpointStore()
        if kind == "memory"
        else await open_sqlite_store(tmp_path / "checkpoints.db")
    )
    async with store:
        keeper = await keep_checkpoints(log, store, policy=_policy(25))
        assert keeper.position == len(records)
        assert [s.position for s in await store.stored()] == [*range(25, 175, 25), 175]
        for cut in (0, 24, 25, 26, 99, 100, 174, 175, 500):
            found = await nearest(store, log, upto=cut)
            want = min(cut, len(records)) // 25 * 25 if cut < len(records) else len(records)
            assert (found.position if found else 0) == want
            if found is not None:
                assert found.world.dump() == _fold(records, want).dump()
        # a damaged one is skipped for the one before it, told once
        data = await store.load_at(100)
        assert data is not None
        await store.save_at(100, "", data[: len(data) // 3])
        told: list[str] = []
        found = await nearest(store, log, upto=120, warn=told.append)
        assert found is not None and found.position == 75
        assert told == [
            "warning: skipped checkpoint at position 100: the checkpoint's digest does not "
            "match (corrupt or truncated); folding from position 75"
        ]
