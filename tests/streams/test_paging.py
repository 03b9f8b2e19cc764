"""The paged reader yields exactly the records an eager ``read_all`` gives, on every backend."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import streams.paging
from streams.backends.memory import MemoryLog
from streams.backends.sqlite import SQLiteLog
from streams.events import DECISION_TYPES, Event, make_event
from streams.log import EventLog
from streams.paging import LogReader, RowPages

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
Opener = Callable[[Path], Callable[[], Coroutine[Any, Any, EventLog]]]


def _events(count: int) -> list[Event]:
    """Samples, triggers and decisions interleaved, as a log holds them."""
    out: list[Event] = []
    for i in range(count):
        at = T0 + timedelta(seconds=i)
        kind = i % 7
        if kind == 3:
            trigger = make_event("trigger.fired", at, {"kind": "tick", "name": f"t{i}"})
            out.append(trigger)
        elif kind == 4:
            data: dict[str, Any] = {"kind": "evict", "namespace": "ns", "pod": f"p{i}"}
            data |= {"node": "n1", "reason": "cpu-pressure", "source": "pressure", "evidence": {}}
            out.append(make_event("decision.evict", at, data, cause=out[-1].id))
        else:
            usage = {"cpu": f"{i}m", "memory": "1Ki"}
            out.append(make_event("metrics.node", at, {"metadata": {"name": "n1"}, "usage": usage}))
    return out


def _sqlite(path: Path) -> Callable[[], Coroutine[Any, Any, EventLog]]:
    async def opener() -> EventLog:
        return await SQLiteLog.open(path / "log.db")

    return opener


def _memory(path: Path) -> Callable[[], Coroutine[Any, Any, EventLog]]:
    shared = MemoryLog()

    async def opener() -> EventLog:
        return shared

    return opener


BACKENDS: dict[str, Opener] = {"sqlite": _sqlite, "memory": _memory}


@pytest.mark.parametrize("backend", sorted(BACKENDS))
@pytest.mark.parametrize(
    ("count", "start", "stop"),
    [
        pytest.param(0, 0, None, id="empty"),
        pytest.param(23, 0, None, id="pages-and-a-bit"),
        pytest.param(20, 0, None, id="exact-pages"),
        pytest.param(23, 6, None, id="from-the-middle-of-a-page"),
        pytest.param(23, 3, 17, id="bounded"),
        pytest.param(23, 30, None, id="past-the-end"),
    ],
)
def test_paged_reads_match_read_all(
    backend: str,
    count: int,
    start: int,
    stop: int | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(streams.paging, "PAGE", 5)
    with LogReader(BACKENDS[backend](tmp_path)) as reader:
        reader.run(reader.log.append(_events(count)))
        eager = reader.run(reader.log.read_all(start, stop))
        assert list(reader.records(start, stop)) == eager
        wanted = [e for e in eager if e.type in DECISION_TYPES | {"trigger.fired"}]
        if stop is None:
            narrow = list(reader.of_types(DECISION_TYPES | {"trigger.fired"}, start))
            assert narrow == wanted
        assert reader.head() == count


def test_sqlite_pages_stored_rows(tmp_path: Path) -> None:
    """The SQLite backend is paged through its rows (decoded one at a time)."""
    with LogReader(_sqlite(tmp_path)) as reader:
        assert isinstance(reader.log, RowPages)
    with LogReader(_memory(tmp_path)) as reader:
        assert not isinstance(reader.log, RowPages)
