"""kill -9 at random points of ``tide simulate --log``: whatever a killed run left is a
prefix of the reference log (no decision point without all its decisions, no duplicate
id, an intact chain), and re-running the same command completes the log
to the reference bytes, sealed.

The simulation appends in batches of 5,000 records; the killed processes here use
batches of 20 and pause briefly before each append (both set in the subprocess before the
command runs), so a small scenario crosses many batch boundaries, its writes span about a
second even on a fast machine, and the kills land between and inside appends.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app
from streams.backends.sqlite import SQLiteLog
from streams.chain import check_chain
from streams.events import DECISION_TYPES, Event

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests" / "replay" / "golden" / "sources" / "rescheduling-hot-cold.yaml"
CONFIG = SCENARIO.with_name("rescheduling-hot-cold.config.yaml")
BATCH = 20
LOGS = 3
KILLS_PER_LOG = 10  # 30 kills in all
SEED = 1616
PAUSE = 0.03  # seconds before each batch's append, so the writes span a second or so
BOOT = (
    "import time; import controller.simulate.spool as spool; "
    f"spool.Spool.__init__.__kwdefaults__['batch'] = {BATCH}; "
    "flush = spool.Spool.flush; "
    f"spool.Spool.flush = lambda self: (time.sleep({PAUSE}), flush(self))[1]; "
    "from controller.cli import main; main()"
)


def args(db: Path) -> list[str]:
    inputs = [str(SCENARIO), "-c", str(CONFIG), "--decisions", os.devnull]
    return ["simulate", *inputs, "--log", str(db)]


def start(db: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", BOOT, *args(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )


def count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    except sqlite3.Error:  # the table is not created yet, or the file is being set up
        return 0


def records(db: Path) -> list[Event]:
    async def read() -> list[Event]:
        async with await SQLiteLog.open(db) as log:
            return await log.read_all()

    return asyncio.run(read())


def export(db: Path) -> bytes:
    result = CliRunner().invoke(app, ["log", "export", "--log", str(db)])
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Event], bytes]:
    db = tmp_path_factory.mktemp("reference") / "ref.db"
    proc = start(db)
    assert proc.wait(timeout=300) == 0
    return records(db), export(db)


def kill_at_random_point(db: Path, rng: random.Random, total: int) -> None:
    """Start the run and kill it once the log holds a random number of records more than it
    holds now, at most half of what it still lacks (so a log's kills spread from its start
    towards its end), or, when that number is none, at a random moment before its next
    append (a log already complete is killed at a random moment of the re-run)."""
    held = count(db)
    target = rng.randrange(held, held + (total - held + 1) // 2) if held < total else held
    deadline = time.monotonic() + rng.uniform(0.5, 8.0) if target == held else None
    proc = start(db)
    try:
        while proc.poll() is None:
            now = count(db)
            if deadline is not None and (time.monotonic() >= deadline or now > held):
                break
            if deadline is None and now >= target:
                break
            time.sleep(rng.uniform(0.0, 0.02))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def check_prefix(db: Path, reference: list[Event]) -> None:
    stored = records(db)
    ids = [e.id for e in stored]
    assert len(set(ids)) == len(ids), "a duplicate id"
    assert ids == [e.id for e in reference[: len(ids)]], "not a prefix of the reference"
    # no half batch: a decision point's trigger is stored with all its decisions or not
    kept = set(ids)
    for e in reference:
        if e.type in DECISION_TYPES and e.cause in kept:
            assert e.id in kept, f"{e.cause} is stored without its decision {e.id}"
    report = check_chain(stored)
    assert report.ok, report.describe()
    offsets = {e.id: e.offset for e in stored}
    for e in stored:  # a decision is never stored without the record that caused it
        if e.type in DECISION_TYPES:
            assert e.cause is not None and offsets.get(e.cause, e.offset) < e.offset


@pytest.mark.parametrize("attempt", range(LOGS), ids=lambda a: f"log-{a}")
def test_kill_9_at_random_points_of_simulate_then_rerun_completes_the_log(
    reference: tuple[list[Event], bytes], tmp_path: Path, attempt: int
) -> None:
    events, reference_bytes = reference
    assert events[-1].type == "log.sealed"
    rng = random.Random(SEED + attempt)
    db = tmp_path / "killed.db"
    stored: list[int] = []
    for _ in range(KILLS_PER_LOG):
        kill_at_random_point(db, rng, len(events))
        if db.exists():
            check_prefix(db, events)
        stored.append(count(db))
    # the kills landed while the log was being written, not only before or after
    assert any(0 < n < len(events) - 1 for n in stored), stored
    proc = start(db)
    assert proc.wait(timeout=300) == 0
    assert export(db) == reference_bytes
