"""`tide replay --verify --jobs 2` catches every tampering the serial check catches, with
the serial check's output, and a forged checkpoint (one whose state is not the fold of
the records before it) that the serial check cannot see, naming its segment."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from controller.cli.reading import plan_jobs
from projections.checkpoint_codec import decode_snapshot, encode_snapshot
from tests.replay.test_jobs import log_with_checkpoints, replay_cli

Columns = tuple[object, ...]
#: the events table's columns after "offset"
COLUMNS = "id, at, type, cause, v, data, prev"


def _row(db: sqlite3.Connection, offset: int) -> Columns:
    row = db.execute(f'SELECT {COLUMNS} FROM events WHERE "offset"=?', (offset,)).fetchone()
    assert row is not None
    return tuple(row)


def _put(db: sqlite3.Connection, offset: int, row: Columns) -> None:
    db.execute('DELETE FROM events WHERE "offset"=?', (offset,))
    db.execute(
        f'INSERT INTO events ("offset", {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)', (offset, *row)
    )


def _offset_of(db: sqlite3.Connection, type_: str, after: int) -> int:
    (offset,) = db.execute(
        'SELECT MIN("offset") FROM events WHERE type LIKE ? AND "offset">?', (type_, after)
    ).fetchone()
    return int(offset)


def _alter_data(
    db: sqlite3.Connection, offset: int, change: Callable[[dict[str, object]], None]
) -> None:
    row = list(_row(db, offset))
    data = orjson.loads(row[5])  # type: ignore[arg-type]
    change(data)
    row[5] = orjson.dumps(data)
    _put(db, offset, tuple(row))


def altered_decision(db: sqlite3.Connection, after: int) -> None:
    offset = _offset_of(db, "decision.%", after)
    _alter_data(db, offset, lambda d: d.update(node="elsewhere"))


def deleted_decision(db: sqlite3.Connection, after: int) -> None:
    db.execute('DELETE FROM events WHERE "offset"=?', (_offset_of(db, "decision.%", after),))


def deleted_record(db: sqlite3.Connection, after: int) -> None:
    db.execute('DELETE FROM events WHERE "offset"=?', (_offset_of(db, "k8s.watch", after),))


def altered_record(db: sqlite3.Connection, after: int) -> None:
    _alter_data(db, _offset_of(db, "metrics.node", after), lambda d: d.update(tampered=True))


def moved_record(db: sqlite3.Connection, after: int) -> None:
    a = _offset_of(db, "k8s.watch", after)
    b = _offset_of(db, "metrics.node", a + 3)
    ra, rb = _row(db, a), _row(db, b)
    db.execute('DELETE FROM events WHERE "offset" IN (?, ?)', (a, b))
    _put(db, a, rb)
    _put(db, b, ra)


def inserted_record(db: sqlite3.Connection, after: int) -> None:
    offset = _offset_of(db, "metrics.node", after)
    row = list(_row(db, offset))
    (last,) = db.execute('SELECT MAX("offset") FROM events').fetchone()
    for o in range(int(last), offset - 1, -1):  # shift the tail up by one
        db.execute('UPDATE events SET "offset"=? WHERE "offset"=?', (o + 1, o))
    row[0] = f"{row[0]}-again"
    _put(db, offset, tuple(row))


def forged_decision_cause(db: sqlite3.Connection, after: int) -> None:
    """A decision's cause pointed at a record that cannot cause decisions."""
    offset = _offset_of(db, "decision.%", after)
    row = list(_row(db, offset))
    (watch,) = db.execute(
        'SELECT id FROM events WHERE type=? AND "offset"<? ORDER BY "offset" DESC LIMIT 1',
        ("k8s.watch", offset),
    ).fetchone()
    row[3] = watch
    _put(db, offset, tuple(row))


TAMPERING: dict[str, Callable[[sqlite3.Connection, int], None]] = {
    "altered decision": altered_decision,
    "deleted decision": deleted_decision,
    "deleted record": deleted_record,
    "altered record": altered_record,
    "moved record": moved_record,
    "inserted record": inserted_record,
    "decision naming another cause": forged_decision_cause,
}


def _copy(tmp: Path, every: int) -> Path:
    source = log_with_checkpoints("stale-metrics.jsonl", every)
    copy = tmp / "tampered.db"
    with sqlite3.connect(source) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    return copy


@pytest.mark.parametrize("kind", sorted(TAMPERING))
@pytest.mark.parametrize("after", [0, 60, 140])  # in the first, a middle, the last segment
def test_jobs_catch_what_the_serial_check_catches(tmp_path: Path, kind: str, after: int) -> None:
    path = _copy(tmp_path, 50)  # checkpoints at 50, 100, 150: --jobs 2 cuts at one
    with sqlite3.connect(path) as db:
        TAMPERING[kind](db, after)
    serial = replay_cli(path)
    assert serial[0] == 1, serial
    for jobs in ("2", "3"):
        code, out, _ = replay_cli(path, "--jobs", jobs)
        assert (code, out) == serial[:2]


@pytest.mark.parametrize("position", [50, 100, 150])
@pytest.mark.parametrize("jobs", [2, 3])
def test_a_forged_checkpoint_fails_naming_its_segment(
    tmp_path: Path, position: int, jobs: int
) -> None:
    """A checkpoint with good digests whose state is not the fold: the serial check (which
    reads no checkpoint) says identical; --jobs fails when it cuts there."""
    path = _copy(tmp_path, 50)
    cuts = [s.start for s in plan_jobs(str(path), jobs=jobs)[1:]]
    assert len(cuts) == jobs - 1
    with sqlite3.connect(path) as db:
        (data,) = db.execute(
            "SELECT state FROM checkpoints_at WHERE position=?", (position,)
        ).fetchone()
        snapshot = decode_snapshot(bytes(data))
        snapshot.world.config = {"forged": True}
        db.execute(
            "UPDATE checkpoints_at SET state=? WHERE position=?",
            (encode_snapshot(snapshot), position),
        )
    serial = replay_cli(path)
    assert serial[0] == 0
    code, out, _ = replay_cli(path, "--jobs", str(jobs))
    if position not in cuts:
        assert (code, out) == serial[:2]
        return
    index = cuts.index(position) + 2
    stop = "head" if position == cuts[-1] else str(cuts[cuts.index(position) + 1])
    assert code == 1
    lines = out.splitlines()
    assert lines[:-1] == [*serial[1].splitlines()[:-1], lines[-2]]
    assert lines[-2].startswith(
        f"segment {index} (positions {position}-{stop}, log times 2026-11-21T"
    )
    assert "the checkpoint it starts from does not match the fold" in lines[-2]
    assert lines[-1].endswith("1 difference(s): 1 checkpoint(s) not the fold of their records")
