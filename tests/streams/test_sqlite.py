"""The SQLite log against the log contract, plus what only a file-backed log can get wrong."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from streams import codec
from streams.backends import open_log
from streams.backends import sqlite as sqlite_backend
from streams.backends.sqlite import SQLiteLog
from streams.backends.sqlite_subjects import CAUSED
from streams.events import EVENT_TYPES
from streams.log import BackendUnavailableError, EventLog, LogError
from tests.builders import node_metrics
from tests.streams.capability_contracts import (
    IdIndexContract,
    QuarantineContract,
    RecordLookupContract,
)
from tests.streams.log_contract import (
    BackendContract,
    DenseLogContract,
    LogOpener,
    take,
    tick,
    ticks,
    unplaced,
)


class SQLiteFile(BackendContract):
    persistent = True

    @pytest.fixture
    def opener(self, tmp_path: Path) -> LogOpener:
        async def open_file() -> EventLog:
            return await SQLiteLog.open(tmp_path / "log.db")

        return open_file


class TestSQLiteLog(SQLiteFile, DenseLogContract):
    pass


class TestSQLiteQuarantine(SQLiteFile, QuarantineContract):
    pass


class TestSQLiteIdIndex(SQLiteFile, IdIndexContract):
    pass


class TestSQLiteRecordLookup(SQLiteFile, RecordLookupContract):
    pass


class PrivateSQLite(BackendContract):
    persistent = False

    @pytest.fixture
    def opener(self) -> LogOpener:
        async def open_private() -> EventLog:
            return await SQLiteLog.open(":memory:")

        return open_private


class TestInMemorySQLiteLog(PrivateSQLite, DenseLogContract):
    pass


async def test_a_failure_mid_batch_rolls_the_whole_batch_back(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    async with await SQLiteLog.open(path) as log:
        with sqlite3.connect(path) as db:  # make the third insert fail inside the transaction
            db.execute(
                f"CREATE TRIGGER boom BEFORE INSERT ON events WHEN NEW.id = '{tick(2).id}' "
                "BEGIN SELECT RAISE(ABORT, 'boom'); END"
            )
        with pytest.raises(LogError, match="boom"):
            await log.append(ticks(0, 4))
        assert await log.head() == 0
        assert await log.read_all() == []
        assert [e.offset for e in await log.append(ticks(0, 2))] == [0, 1]


async def test_unencodable_data_adds_nothing(tmp_path: Path) -> None:
    bad = tick(1).__class__(type="config.applied", at=tick(1).at, id="x", data={"o": object()})
    async with await SQLiteLog.open(tmp_path / "log.db") as log:
        with pytest.raises(TypeError):
            await log.append([tick(0), bad])
        assert await log.head() == 0


async def test_two_handles_on_one_file_share_one_order(tmp_path: Path) -> None:
    """Two handles stand in for two processes: each sees the other's appends."""
    path = tmp_path / "log.db"
    async with (
        await SQLiteLog.open(path, poll_interval=0.02) as a,
        await SQLiteLog.open(path, poll_interval=0.02) as b,
    ):
        reader = asyncio.create_task(take(b, 0, 6))
        await a.append(ticks(0, 3))
        assert [e.offset for e in await b.append(ticks(2, 6))] == [3, 4, 5]
        assert await a.append([tick(4)]) == []
        assert unplaced(await reader) == ticks(0, 6)
        assert await a.head() == await b.head() == 6


async def test_a_held_write_lock_is_a_retriable_error(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    async with await SQLiteLog.open(path, busy_timeout=0.05) as log:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(BackendUnavailableError) as caught:
                await log.append([tick(0)])
            assert caught.value.retriable
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert [e.offset for e in await log.append([tick(0)])] == [0]


async def test_a_missing_directory_is_a_log_error(tmp_path: Path) -> None:
    with pytest.raises(LogError, match="cannot open SQLite log"):
        await SQLiteLog.open(tmp_path / "no" / "such" / "dir.db")


async def test_the_file_is_wal_with_the_documented_table(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    async with await SQLiteLog.open(path) as log:
        await log.append([tick(0, cause="c0")])
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        columns = [row[1] for row in db.execute("PRAGMA table_info(events)")]
        # prev: the record's hash-chain link (streams/chain.py), added after the others
        assert columns == ["offset", "id", "at", "type", "cause", "v", "data", "prev"]
        indexes = {row[1] for row in db.execute("PRAGMA index_list(events)")}
        assert {"events_type", "events_cause"} <= indexes
        row = db.execute('SELECT "offset", id, at, type, cause, v FROM events').fetchone()
        assert row == (0, tick(0, cause="c0").id, "2026-11-21T20:00:00Z", "trigger.fired", "c0", 1)


async def test_what_a_cause_led_to_is_read_by_an_index_a_writer_builds(tmp_path: Path) -> None:
    """``sqlite_subjects.CAUSED`` (a bind view's session decisions) reads the rows of its
    causes, not every row of its types: a log from before the index gets it from its next
    writer, and a reader finds the same rows either way."""
    path = tmp_path / "log.db"
    async with await SQLiteLog.open(path) as log:
        await log.append([tick(0), tick(1, cause="c0"), tick(2, cause="c1")])
    args = ('["trigger.fired"]', '["c0"]')
    with sqlite3.connect(path) as db:
        db.execute("DROP INDEX events_cause")  # as a log written before it
        before = db.execute(CAUSED, args).fetchall()
    async with await SQLiteLog.open(path):
        pass
    with sqlite3.connect(path) as db:
        plan = " ".join(str(row) for row in db.execute("EXPLAIN QUERY PLAN " + CAUSED, args))
        assert "events_cause" in plan
        assert db.execute(CAUSED, args).fetchall() == before
        assert [row[4] for row in before] == ["c0"]


async def test_new_files_get_large_pages_and_old_files_keep_theirs(tmp_path: Path) -> None:
    """Logs written with 4 KB pages (before ``PAGE_SIZE``) open, append and read as before,
    and their WAL is still checkpointed every ``CHECKPOINT_BYTES``."""
    new, old = tmp_path / "new.db", tmp_path / "old.db"
    with sqlite3.connect(old) as db:  # an old file: 4 KB pages, the table without prev
        db.execute("PRAGMA page_size=4096")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            'CREATE TABLE events ("offset" INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, '
            "at TEXT NOT NULL, type TEXT NOT NULL, cause TEXT, v INTEGER NOT NULL DEFAULT 1, "
            "data BLOB NOT NULL)"
        )
    db.close()
    for path, size in ((new, sqlite_backend.PAGE_SIZE), (old, 4096)):
        for reopened in (False, True):  # the second time, the file holds records
            opened = await SQLiteLog.open(path)
            async with opened as log:
                if not reopened:
                    await log.append(ticks(0, 3))
                assert unplaced(await log.read_all()) == ticks(0, 3)
                pragma = opened._db.execute_fetchall
                assert list(await pragma("PRAGMA page_size", ())) == [(size,)]
                pages = sqlite_backend.CHECKPOINT_BYTES // size
                assert list(await pragma("PRAGMA wal_autocheckpoint", ())) == [(pages,)]


async def test_old_payload_versions_are_upcast_on_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.db"
    sample = node_metrics("n1", cpu="1", memory="1Gi")
    async with await SQLiteLog.open(path) as log:
        await log.append([sample])
    monkeypatch.setitem(EVENT_TYPES, "metrics.node", 2)
    monkeypatch.setitem(codec.UPCASTERS, ("metrics.node", 1), lambda d: {**d, "window": "60s"})
    async with await SQLiteLog.open(path) as log:
        (stored,) = await log.read_all()
    assert stored.v == 2
    assert stored.data == {**sample.data, "window": "60s"}
    with sqlite3.connect(path) as db:  # the stored record is never rewritten
        assert db.execute("SELECT v FROM events").fetchone() == (1,)


async def test_open_log_understands_sqlite_urls_and_plain_paths(tmp_path: Path) -> None:
    for url in (f"sqlite:///{tmp_path}/a.db", str(tmp_path / "b.db")):
        log = await open_log(url)
        try:
            assert isinstance(log, SQLiteLog)
            assert Path(log.path).is_absolute()
            assert log.url == f"sqlite:///{log.path}"
        finally:
            await log.close()


async def test_appends_in_this_process_wake_subscribers_without_polling(tmp_path: Path) -> None:
    async with await SQLiteLog.open(tmp_path / "log.db", poll_interval=3600) as log:
        reader = asyncio.create_task(take(log, 0, 2))
        await asyncio.sleep(0.01)
        await log.append(ticks(0, 2))
        async with asyncio.timeout(1):
            assert [e.offset for e in await reader] == [0, 1]


def test_a_log_left_open_does_not_keep_the_process_alive(tmp_path: Path) -> None:
    script = f"""
import asyncio
from streams.backends import sqlite as sqlite_backend
from streams.backends.sqlite import SQLiteLog
from tests.streams.log_contract import ticks
kept = []
async def main():
    log = await SQLiteLog.open({str(tmp_path / "log.db")!r})
    await log.append(ticks(0, 2))
    kept.append(log)  # never closed
asyncio.run(main())
"""
    root = Path(__file__).parents[2]
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", script], cwd=root, timeout=20, check=False
    )
    assert done.returncode == 0


async def test_reads_and_subscriptions_cross_page_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # rows are fetched a page at a time and decoded one by one as they are handed out
    monkeypatch.setattr(sqlite_backend, "PAGE", 3)
    async with await SQLiteLog.open(tmp_path / "log.db") as log:
        await log.append(ticks(0, 10))
        assert [e.offset for e in await log.read_all()] == list(range(10))
        assert [e.offset for e in [e async for e in log.read(2, 9)]] == list(range(2, 9))
        assert [e.offset for e in [e async for e in log.read(6)]] == list(range(6, 10))
        assert [e.offset for e in [e async for e in log.read(0, 6)]] == list(range(6))
        assert unplaced([e async for e in log.read(4, 7)]) == ticks(4, 7)
        assert [e.offset for e in await take(log, 1, 8)] == list(range(1, 9))


async def test_a_read_left_half_way_does_not_hold_up_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_backend, "PAGE", 3)
    async with await SQLiteLog.open(tmp_path / "log.db") as log:
        await log.append(ticks(0, 5))
        reader = aiter(log.read())
        assert (await anext(reader)).offset == 0  # mid-page: the page's rows are held
        assert [e.offset for e in await log.append(ticks(5, 7))] == [5, 6]
        assert [(await anext(reader)).offset for _ in range(6)] == [1, 2, 3, 4, 5, 6]
        with pytest.raises(StopAsyncIteration):
            await anext(reader)


async def test_the_writer_lock_file_is_gone_once_the_writer_is_done(tmp_path: Path) -> None:
    log = await SQLiteLog.open(str(tmp_path / "w.db"))
    try:
        async with log.writer_lock():
            assert (tmp_path / "w.db.lock").exists()
        assert not (tmp_path / "w.db.lock").exists()
        async with log.writer_lock():  # and it can be taken again
            pass
    finally:
        await log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.db"]


def test_removing_the_lock_file_never_lets_two_writers_in(tmp_path: Path) -> None:
    """Holders unlink the file before letting go; a waiter that wakes on the removed file
    must not enter beside one that locked the new file (many rounds, four threads)."""
    import os
    import threading

    path = str(tmp_path / "w.db.lock")
    inside: list[int] = []
    overlaps: list[int] = []

    def writer(n: int) -> None:
        for _ in range(150):
            fd = sqlite_backend._lock_file(path)
            inside.append(n)
            if len(inside) > 1:
                overlaps.append(n)
            os.sched_yield()
            inside.remove(n)
            os.unlink(path)
            os.close(fd)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
