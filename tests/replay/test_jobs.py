"""`tide replay --verify --jobs N`: the log verified in segments cut at its checkpoints
gives the serial check's verdict and output, at any checkpoint interval and any N."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import Executor, Future
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from controller.cli import app
from controller.cli.reading import plan_jobs, replay_log
from projections.checkpoints import CheckpointPolicy, keep_checkpoints
from replay.segments import execute, join
from streams.backends.checkpoints import open_log_store
from streams.backends.sqlite import SQLiteLog
from streams.recording import import_recording
from tests.projections.golden_checkpoints import as_version_1, version_2

GOLDEN = Path(__file__).parent / "golden"
T = TypeVar("T")


async def _write(path: Path, name: str, every: int) -> None:
    async with await SQLiteLog.open(path) as log:
        await import_recording(GOLDEN / name, log)
        store = await open_log_store(f"sqlite:///{path}", create=True)
        assert store is not None
        async with store:
            policy = CheckpointPolicy(every_records=every, every_minutes=0, keep=10_000, thinned=0)
            await keep_checkpoints(log, store, policy=policy)


@cache
def log_with_checkpoints(name: str, every: int) -> Path:
    """A SQLite log of golden log ``name`` with a checkpoint every ``every`` records (kept
    for the session)."""
    path = Path(tempfile.mkdtemp(prefix="tide-jobs-")) / f"{every}.db"
    asyncio.run(_write(path, name, every))
    return path


def replay_cli(path: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["replay", str(path), "--verify", *args])
    return result.exit_code, result.stdout, result.stderr


#: (golden log, checkpoint interval in records, --jobs)
SCENARIOS = [
    ("stale-metrics.jsonl", 7, 3),
    ("stale-metrics.jsonl", 50, 2),
    ("stale-metrics.jsonl", 50, 3),
    ("pressure-graceful.jsonl", 30, 2),
    ("pressure-graceful.jsonl", 100, 3),
    ("demo.jsonl", 1000, 2),
    ("demo.jsonl", 1500, 3),
]


@pytest.mark.parametrize(("name", "every", "jobs"), SCENARIOS)
def test_jobs_give_the_serial_verdict_and_output(name: str, every: int, jobs: int) -> None:
    path = log_with_checkpoints(name, every)
    serial = replay_cli(path)
    parallel = replay_cli(path, "--jobs", str(jobs))
    assert parallel[:2] == serial[:2]
    assert serial[0] == 0 and "identical" in serial[1]
    # the segments answered (no serial check behind them), and no segment was dropped
    assert parallel[2] == ""


@pytest.mark.parametrize("jobs", ["2", "3"])
def test_jobs_in_a_process_of_its_own_give_the_serial_output(jobs: str) -> None:
    """``tide`` itself, one thread: its local pool forks (on Linux) and the output is the
    serial check's, byte for byte, with nothing written twice (stdout is a pipe)."""
    path = log_with_checkpoints("stale-metrics.jsonl", 50)
    tide = [sys.executable, "-c", "from controller.cli import main; main()"]

    def run(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([*tide, "replay", str(path), "--verify", *args], capture_output=True)

    serial, parallel = run(), run("--jobs", jobs)
    assert serial.returncode == parallel.returncode == 0
    assert parallel.stdout == serial.stdout
    assert parallel.stderr == b""


def test_jobs_1_is_the_serial_check() -> None:
    path = log_with_checkpoints("stale-metrics.jsonl", 50)
    assert replay_cli(path, "--jobs", "1") == replay_cli(path)


def test_too_few_checkpoints_say_so_in_one_line() -> None:
    path = log_with_checkpoints("stale-metrics.jsonl", 100)  # cuts at 100 only (175: head)
    code, out, err = replay_cli(path, "--jobs", "4")
    assert (code, out) == replay_cli(path)[:2]
    assert err.splitlines() == [
        "--jobs 4: the log keeps 1 checkpoint(s) to cut it at; verifying in 2 segment(s)"
    ]


def test_a_log_without_checkpoints_falls_back_to_one_process(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"

    async def write() -> None:
        async with await SQLiteLog.open(path) as log:
            await import_recording(GOLDEN / "stale-metrics.jsonl", log)

    asyncio.run(write())
    code, out, err = replay_cli(path, "--jobs", "2")
    assert (code, out) == replay_cli(path)[:2]
    assert "verifying in 1 segment(s)" in err


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["--from", "10"], "--config, --resimulate or --from"),
    ],
)
def test_jobs_with_what_reads_whole_says_one_process(args: list[str], what: str) -> None:
    path = log_with_checkpoints("stale-metrics.jsonl", 50)
    result = CliRunner().invoke(app, ["replay", str(path), "--jobs", "2", *args])
    assert result.exit_code == 0
    assert f"--jobs: {what} is replayed in one process" in result.stderr


def test_an_executor_of_another_scheme_fails_in_one_line() -> None:
    path = log_with_checkpoints("stale-metrics.jsonl", 50)
    code, _, err = replay_cli(path, "--jobs", "2", "--executor", "ray://x:1")
    assert code == 2
    assert (
        err.strip().splitlines()[-1]
        == "error: --executor ray://x:1: not a dask://HOST:PORT address"
    )


class Inline(Executor):
    """Runs each segment at once in this process (the segments' logic without spawning)."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(["stale-metrics.jsonl", "pressure-graceful.jsonl"]),
    every=st.sampled_from([3, 11, 25, 60, 140]),
    jobs=st.integers(2, 6),
    chain=st.booleans(),
)
def test_segments_joined_equal_the_serial_check(
    name: str, every: int, jobs: int, chain: bool
) -> None:
    path = log_with_checkpoints(name, every)
    serial, serial_chain = replay_log(str(path), start=None, chain=chain)
    segments = plan_jobs(str(path), jobs=jobs, chain=chain)
    assert 1 < len(segments) <= jobs
    assert [s.start for s in segments] == sorted({s.start for s in segments})
    joined = join(segments, execute(segments, Inline()), chain=chain)
    assert joined.exact, (joined.problems, joined.mismatches)
    assert (joined.checked, joined.decisions) == (serial.checked, serial.decisions)
    assert joined.chain == serial_chain


def test_dask_not_installed_fails_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed: ImportError
    path = log_with_checkpoints("stale-metrics.jsonl", 50)
    code, _, err = replay_cli(path, "--jobs", "2", "--executor", "dask://127.0.0.1:8786")
    assert code == 2
    assert err.strip().splitlines() == [
        "error: --executor dask://127.0.0.1:8786: Dask is not installed (pip install 'tide[dask]')"
    ]


def _mixed_versions(name: str, tmp: Path) -> Path:
    """A copy of the log with a checkpoint every 13 records, each in turn as this tide
    writes it (version 3), as tides before wrote it (version 2, stored) and as the first
    ones did (version 1, made from the stored one)."""
    copy = tmp / "mixed.db"
    with sqlite3.connect(log_with_checkpoints(name, 13)) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    stored = dict(version_2(name.removesuffix(".jsonl")))
    with sqlite3.connect(copy) as db:
        positions = sorted(p for (p,) in db.execute("SELECT position FROM checkpoints_at"))
        assert positions == sorted(stored)
        for i, position in enumerate(positions):
            if i % 3 == 0:
                continue
            old = stored[position] if i % 3 == 1 else as_version_1(stored[position])
            db.execute("UPDATE checkpoints_at SET state=? WHERE position=?", (old, position))
    return copy


@pytest.mark.parametrize("name", ["stale-metrics.jsonl", "pressure-graceful.jsonl"])
def test_cuts_at_checkpoints_of_earlier_tides_match(name: str, tmp_path: Path) -> None:
    """Each segment's end is digested as the checkpoint at its end was written (its
    version): cuts at checkpoints of every version read join exactly, not by falling back
    to the serial check."""
    path = _mixed_versions(name, tmp_path)
    serial, serial_chain = replay_log(str(path), start=None, chain=True)
    versions = set()
    for jobs in (2, 3, 4, 6, 9):
        segments = plan_jobs(str(path), jobs=jobs, chain=True)
        assert len(segments) > 1
        versions |= {s.stop_version for s in segments[:-1]}
        joined = join(segments, execute(segments, Inline()), chain=True)
        assert joined.exact, (jobs, joined.problems, joined.mismatches)
        assert (joined.checked, joined.decisions) == (serial.checked, serial.decisions)
        assert joined.chain == serial_chain
    assert versions == {1, 2, 3}
