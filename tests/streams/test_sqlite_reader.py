"""The SQLite log opened for reading (streams/backends/sqlite_reader.py) answers as the
writer does on the same file, every question the port and its capabilities ask, on logs
of every age (without the hash chain's column, the subject index, the seal); its
coroutines never wait, so streams.paging.LogReader reads it without an event loop; it
writes nothing."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

import streams.paging
from streams.backends import open_reader
from streams.backends.sqlite import SQLiteLog
from streams.backends.sqlite_reader import SQLiteReader
from streams.events import DECISION_TYPES, Event
from streams.log import EventLog, LogError, NotALogError, Quarantined
from streams.paging import LogReader
from streams.recording import import_recording, read_recording
from streams.subjects import subjects_of

GOLDEN = Path(__file__).resolve().parents[1] / "replay" / "golden" / "tdm-budgets.jsonl"
ASIDE = [Quarantined(source="in.jsonl", line=3, reason="bad", raw="{")]


def _done(coro: Coroutine[Any, Any, Any]) -> Any:
    """The value of a coroutine that finishes without waiting (fails if it waits)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise AssertionError("the reader's coroutine waited")


def _write(path: Path) -> None:
    async def make() -> None:
        log = await SQLiteLog.open(path)
        try:
            await import_recording(GOLDEN, log)
            await log.set_aside(ASIDE)
            await log.seal(await log.head() - 1, "abc")
        finally:
            await log.close()

    asyncio.run(make())


def _age(path: Path, kind: str) -> None:
    """Make ``path`` a log of an older kind: no prev column, no index, no seal table."""
    with sqlite3.connect(path) as db:
        if kind == "no-prev":
            db.execute("ALTER TABLE events DROP COLUMN prev")
        elif kind == "no-index":
            db.execute("DROP TABLE subjects")
            db.execute("DROP TABLE subjects_version")
        elif kind == "no-seal":
            db.execute("DROP TABLE seal")
            db.execute("DROP TABLE quarantine")


async def _answers(log: Any, subjects: list[str], ids: list[str]) -> dict[str, Any]:
    return {
        "head": await log.head(),
        "all": await log.read_all(),
        "range": await log.read_all(5, 40),
        "page": await log.read_page(10, 7),
        "decisions": await log.read_page(0, 1000, type_="decision.evict"),
        "about": await log.read_about(subjects, 0, 1000),
        "about-late": await log.read_about(subjects, 60, 3),
        "contains": await log.contains([*ids, "nope"]),
        "records": await log.records([*ids, "nope"]),
        "quarantine": await log.quarantine(),
        "sealed": await log.sealed(),
    }


@pytest.mark.parametrize("kind", ["current", "no-prev", "no-index", "no-seal"])
def test_the_reader_answers_as_the_writer(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    _write(path)
    events = [e for e in read_recording(GOLDEN) if isinstance(e, Event)]
    subjects = sorted({s for e in events[:40] for s in subjects_of(e)})[:3]
    ids = [events[3].id, events[50].id]
    # the writer's read-only answers, before aging (the writer would migrate an old file)
    if kind == "current":

        async def written() -> dict[str, Any]:
            async with await SQLiteLog.open(path) as log:
                return await _answers(log, subjects, ids)

        expected = asyncio.run(written())
    _age(path, kind)
    reader = SQLiteReader.open(path)
    try:
        got = {
            "head": _done(reader.head()),
            "page": _done(reader.read_page(10, 7)),
            "decisions": _done(reader.read_page(0, 1000, type_="decision.evict")),
            "about": _done(reader.read_about(subjects, 0, 1000)),
            "quarantine": _done(reader.quarantine()),
            "sealed": _done(reader.sealed()),
        }
        more = asyncio.run(_answers(reader, subjects, ids))  # awaited on a loop, as well
    finally:
        _done(reader.close())
    assert {k: more[k] for k in got} == got
    assert more["head"] == len(events)
    assert [e.id for e in more["all"]] == [e.id for e in events]
    if kind == "current":
        assert more == expected
        assert more["about"] and more["sealed"] and more["quarantine"] == ASIDE
    if kind == "no-prev":
        assert all(row[-1] is None for row in more["page"])
    if kind == "no-index":
        assert more["about"] is None
    if kind == "no-seal":
        assert more["sealed"] is None and more["quarantine"] == []


def test_the_reader_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "log.db"
    _write(path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    reader = SQLiteReader.open(path)
    with pytest.raises(LogError, match="reading only"):
        _done(reader.append([]))
    with pytest.raises(LogError, match="reading only"):
        _done(reader.set_aside(ASIDE))
    with pytest.raises(LogError, match="reading only"):
        _done(reader.seal(0, "x"))
    _done(reader.close())
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("what", ["missing", "empty", "foreign", "memory"])
def test_the_reader_refuses_what_is_not_a_log(what: str, tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    if what == "empty":
        path.write_bytes(b"")
    if what == "foreign":
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE users (name TEXT)")
    url = "sqlite://" if what == "memory" else str(path)
    with pytest.raises(NotALogError):
        asyncio.run(open_reader(url))


def test_open_reader_gives_the_reader_and_log_reader_pages_it_without_a_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.db"
    _write(path)
    monkeypatch.setattr(streams.paging, "PAGE", 7)  # many pages
    events = [e for e in read_recording(GOLDEN) if isinstance(e, Event)]
    with LogReader(lambda: open_reader(str(path)), synchronous=True) as log:
        assert isinstance(log.log, SQLiteReader)
        assert log._runner is None
        assert [e.id for e in log.records()] == [e.id for e in events]
        assert [e.id for e in log.of_types(DECISION_TYPES)] == [
            e.id for e in events if e.type in DECISION_TYPES
        ]
        assert log.head() == len(events)
        assert log._runner is None  # no event loop so far
        assert log.run(log.log.head()) == len(events)  # a caller's coroutine: one now
        assert log._runner is not None
        assert [e.id for e in log.records(3, 9)] == [e.id for e in events[3:9]]


def test_a_synchronous_reader_refuses_a_log_that_waits(tmp_path: Path) -> None:
    """An opener that waits (as a writer's aiosqlite connection does) under
    ``synchronous`` fails loudly instead of hanging or answering wrong."""
    path = tmp_path / "log.db"
    _write(path)

    async def waits() -> EventLog:
        await asyncio.sleep(0)
        return SQLiteReader.open(path)

    with (
        pytest.raises(RuntimeError, match="needs an event loop"),
        LogReader(waits, synchronous=True),
    ):
        pass
    with LogReader(waits) as log:  # on an event loop it is read as any log
        assert log.head() > 0
