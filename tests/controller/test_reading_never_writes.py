"""Reading never writes: every reading command × every kind of path, bytes and listing kept.

Issue 29: ``tide audit summary --log other.db`` on a user's own SQLite file added tide's
tables to it, after which ``tide demo --db other.db`` no longer refused it. Here each
reading command runs on a tide log (WAL mode, at rest: a ``mode=ro`` reader would leave
``-wal``/``-shm`` behind), a foreign SQLite file (rollback journal and WAL), an empty file,
a JSON Lines file, a directory and a missing path; the directory's listing and every
file's bytes are compared before and after, with the exit code and the one line said.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app
from projections.checkpoints import CheckpointPolicy, keep_checkpoints
from streams.backends import open_log
from streams.backends.checkpoints import open_log_store
from streams.log import LogError
from streams.recording import import_recording

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "replay" / "golden" / "allocate-gang.jsonl"
OWNERSHIP = ROOT / "tests" / "replay" / "golden" / "sources" / "ownership.yaml"

READERS = {
    "state": ["state", "--log", "{p}"],
    "state-positional": ["state", "{p}"],
    "replay": ["replay", "{p}"],
    "replay-verify": ["replay", "--verify", "{p}"],
    "replay-from": ["replay", "--from", "3", "{p}"],
    "audit-summary": ["audit", "summary", "--log", "{p}"],
    "audit-decisions": ["audit", "decisions", "--log", "{p}"],
    "audit-why": ["audit", "why", "web-0", "--log", "{p}"],
    "audit-timeline": ["audit", "timeline", "--node", "worker-0", "--log", "{p}"],
    "audit-metrics": ["audit", "metrics", "--log", "{p}"],
    "audit-series": ["audit", "series", "--node", "worker-0", "--log", "{p}"],
    "report": ["report", "{p}", "--out", "{out}"],
    "log-export": ["log", "export", "--log", "{p}"],
    "log-verify": ["log", "verify", "{p}"],
    "log-quarantine": ["log", "quarantine", "--log", "{p}"],
    "log-checkpoints": ["log", "checkpoints", "--log", "{p}"],
}

#: kind of path -> the phrase the one line says about it (None: a log, read as usual)
KINDS: dict[str, str | None] = {
    "tide-log": None,
    "foreign-sqlite": "is a SQLite file without tide's tables (it holds users), not a tide log",
    "foreign-sqlite-wal": "is a SQLite file without tide's tables (it holds users)",
    "empty": "is an empty file, not a tide log",
    "jsonl": "is not a SQLite file, so not a tide log",
    "directory": "is a directory, not a tide log",
    "missing": "no such log",
}


@pytest.fixture(scope="module")
def tide_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tide log (WAL mode) imported from a golden recording, with checkpoints by position
    (every 50 records: the readers start from them), closed: at rest."""
    path = tmp_path_factory.mktemp("log") / "log.db"

    async def make() -> None:
        async with await open_log(str(path)) as log:
            await import_recording(GOLDEN, log)
            store = await open_log_store(str(path), create=True)
            assert store is not None
            async with store:
                policy = CheckpointPolicy(every_records=50, every_minutes=0)
                assert (await keep_checkpoints(log, store, policy=policy)).written >= 2

    asyncio.run(make())
    assert sorted(p.name for p in path.parent.iterdir()) == ["log.db"]
    return path


def _foreign(path: Path, *, wal: bool) -> None:
    with sqlite3.connect(path) as db:
        if wal:
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE users (name TEXT)")
        db.execute("INSERT INTO users VALUES ('ann')")
    db.close()


def make(kind: str, where: Path, tide_log: Path) -> Path:
    """The path ``where/p`` holding ``kind``."""
    path = where / "p"
    if kind == "tide-log":
        shutil.copyfile(tide_log, path)
    elif kind.startswith("foreign-sqlite"):
        _foreign(path, wal=kind.endswith("wal"))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "jsonl":
        shutil.copyfile(GOLDEN, path)
    elif kind == "directory":
        path.mkdir()
        (path / "inside.txt").write_text("mine\n")
    assert sorted(p.name for p in where.iterdir()) == ([] if kind == "missing" else ["p"])
    return path


def snapshot(where: Path) -> dict[str, str]:
    """Every file under ``where`` (sidecars included) and its digest; directories too."""
    return {
        str(p.relative_to(where)): (
            "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        )
        for p in sorted(where.rglob("*"))
    }


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("command", list(READERS))
def test_a_reading_command_leaves_any_path_byte_identical(
    command: str, kind: str, tmp_path: Path, tide_log: Path
) -> None:
    where = tmp_path / "here"
    where.mkdir()
    path = make(kind, where, tide_log)
    before = snapshot(where)
    args = [a.format(p=path, out=tmp_path / "report.html") for a in READERS[command]]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert snapshot(where) == before, f"{command} wrote beside or into {kind}"
    assert "Traceback" not in result.output
    said = KINDS[kind]
    if said is None:  # a log: read as usual (audit why of a pod it lacks says so, exit 1)
        assert result.exit_code in (0, 1), result.output
        assert result.output.strip(), "a reading command says what it found"
        return
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {path}") and said in lines[0], lines[0]


WRITERS = {
    "log-import": ["log", "import", str(GOLDEN), "--log", "{p}"],
    "simulate": ["simulate", str(OWNERSHIP), "-c", str(OWNERSHIP), "--log", "{p}"],
    "demo": ["demo", "--db", "{p}"],
}


@pytest.mark.parametrize("wal", [False, True], ids=["journal", "wal"])
@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_writer_refuses_a_foreign_file_whatever_read_it_before(
    writer: str, wal: bool, tmp_path: Path
) -> None:
    path = tmp_path / "other.db"
    _foreign(path, wal=wal)
    before = snapshot(tmp_path)
    for reader in ("audit-summary", "state", "replay-verify", "log-quarantine"):
        args = [a.format(p=path, out=tmp_path / "r.html") for a in READERS[reader]]
        assert CliRunner().invoke(app, args).exit_code == 2
    args = [a.format(p=path) for a in WRITERS[writer]]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 2, result.output
    assert "not a tide log" in result.output and str(path) in result.output
    assert "Traceback" not in result.output
    assert snapshot(tmp_path) == before
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT name FROM users").fetchall() == [("ann",)]
    db.close()


def test_the_log_refuses_a_foreign_file_for_writing(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    _foreign(path, wal=False)
    with pytest.raises(LogError, match="users"):
        asyncio.run(open_log(str(path)))


def test_a_reader_beside_a_live_writer_sees_its_records(tmp_path: Path) -> None:
    """A log held open by a writer has its ``-wal``: the reader shares it (no immutable
    snapshot) and reads what the writer committed, and leaves the files as they were."""
    path = tmp_path / "live.db"

    async def run() -> tuple[int, int]:
        async with await open_log(str(path)) as writer:
            await import_recording(GOLDEN, writer)
            assert Path(f"{path}-wal").exists()
            from streams.backends import open_reader

            async with await open_reader(str(path)) as reader:
                return await reader.head(), await writer.head()

    seen, written = asyncio.run(run())
    assert seen == written > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live.db"]
