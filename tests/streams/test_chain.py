"""The hash chain (streams/chain.py): every deletion, insertion, move, alteration and cut
tail is reported at the first bad offset; an untouched log verifies."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from streams import codec
from streams.backends.memory import MemoryLog
from streams.backends.sqlite import SQLiteLog
from streams.chain import RUN_PREFIX, ChainWriter, RunMismatchError, check_chain, check_log, digest
from streams.chain_check import ChainChecker
from streams.events import Event, make_event
from streams.seal import SEALING, is_seal

T0 = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
N = 8
#: a written log: the N records and the seal record its writer ends it with
L = N + 1


def records(n: int = N) -> list[Event]:
    return [
        make_event("trigger.fired", T0 + timedelta(seconds=i), {"kind": "tick", "n": i})
        for i in range(n)
    ]


def written(events: list[Event], *, run: str = "r1") -> tuple[list[Event], tuple[int, str]]:
    """``events`` appended through a ChainWriter to a fresh log, and the log's seal."""

    async def go() -> tuple[list[Event], tuple[int, str]]:
        log = MemoryLog()
        async with ChainWriter(log, run=run) as writer:
            await writer.append(events[:3])
            await writer.append(events[3:])
        seal = await log.sealed()
        assert seal is not None
        return log.events, seal

    return asyncio.run(go())


def renumber(events: list[Event]) -> list[Event]:
    return [e.with_offset(i) for i, e in enumerate(events)]


def test_an_untouched_log_verifies_and_is_complete() -> None:
    log, seal = written(records())
    report = check_chain(log, seal)
    assert report.ok and report.chained and report.complete, report.describe()
    assert report.run == "r1" and log[0].prev == RUN_PREFIX + "r1" + SEALING
    assert len(log) == L and is_seal(log[-1])
    assert all(b.prev == digest(a) for a, b in itertools.pairwise(log))


Tamper = Callable[[list[Event], int], list[Event]]


def delete(log: list[Event], i: int) -> list[Event]:
    return log[:i] + log[i + 1 :]


def insert(log: list[Event], i: int) -> list[Event]:
    forged = make_event("decision.evict", log[i].at, {"pod": "ns/x"}, cause=log[i].id)
    return [*log[:i], forged.with_prev(log[i].prev), *log[i:]]


def move(log: list[Event], i: int) -> list[Event]:
    swapped = list(log)
    swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
    return swapped


def alter(log: list[Event], i: int) -> list[Event]:
    changed = list(log)
    e = log[i]
    changed[i] = Event(e.type, e.at, e.id, {**e.data, "n": -1}, e.cause, e.offset, e.v, e.prev)
    return changed


# (tamper, the positions it is applied at, the first offset that must be reported given i)
CASES: list[tuple[str, Tamper, range, Callable[[int], int]]] = [
    ("delete", delete, range(L), lambda i: i),
    # the forged record copies the link of the one it displaces: the break is just after it
    ("insert", insert, range(L), lambda i: i + 1),
    ("move", move, range(L - 1), lambda i: i),
    ("alter", alter, range(L), lambda i: i + 1 if i < L - 1 else i),
]


@pytest.mark.parametrize(
    ("tamper", "at", "expected"),
    [
        pytest.param(tamper, i, bad(i), id=f"{name}-{i}")
        for name, tamper, where, bad in CASES
        for i in where
    ],
)
def test_every_tampering_is_reported_at_the_first_bad_offset(
    tamper: Tamper, at: int, expected: int
) -> None:
    log, seal = written(records())
    tampered = renumber(tamper(log, at))
    report = check_chain(tampered, seal)
    assert not report.ok
    assert report.broken is not None
    assert report.broken[0] == expected, report.describe()
    assert f"offset {expected}" in report.describe()


@pytest.mark.parametrize("cut", [1, 2, N - 1], ids=lambda c: f"cut-{c}")
def test_a_cut_tail_is_reported_where_the_records_are_missing(cut: int) -> None:
    log, seal = written(records())
    report = check_chain(log[:-cut], seal)
    assert report.broken is not None and report.broken[0] == L - cut, report.describe()
    assert "tail was cut" in report.describe()


def test_without_a_seal_a_cut_tail_still_chains_but_is_not_complete() -> None:
    log, _ = written(records())
    report = check_chain(log[:-2])
    assert report.ok and not report.complete


def test_a_log_written_before_the_chain_verifies_with_a_note() -> None:
    plain = renumber(records())
    report = check_chain(plain)
    assert report.ok and not report.chained
    assert "no chain" in report.describe()


def test_a_chain_link_inside_an_unchained_log_is_reported() -> None:
    plain = renumber(records())
    plain[3] = plain[3].with_prev("forged")
    report = check_chain(plain)
    assert report.broken is not None and report.broken[0] == 3


def test_appending_again_is_idempotent_and_keeps_the_chain() -> None:
    async def go() -> MemoryLog:
        log = MemoryLog()
        events = records()
        for chunk in (events[:5], events, events[2:]):
            async with ChainWriter(log, run="r1") as writer:
                await writer.append(chunk)
        return log

    log = asyncio.run(go())
    # the first two writers each ended after adding records (two seals); the third added
    # nothing and found the log already ending in a seal, so it added none
    assert [e.id for e in log.events if not is_seal(e)] == [e.id for e in records()]
    assert [i for i, e in enumerate(log.events) if is_seal(e)] == [5, N + 1]
    assert asyncio.run(check_log(log)).complete


@pytest.mark.parametrize(
    ("another_run", "fails"), [(False, True), (True, False)], ids=["refused", "asked-for"]
)
def test_a_different_run_is_refused_unless_asked_for(another_run: bool, fails: bool) -> None:
    async def go() -> None:
        log = MemoryLog()
        async with ChainWriter(log, run="r1") as writer:
            await writer.append(records(3))
        async with ChainWriter(log, run="r2", another_run=another_run) as writer:
            await writer.append(records(5))

    if fails:
        with pytest.raises(RunMismatchError, match="holds run r1, this is run r2"):
            asyncio.run(go())
    else:
        asyncio.run(go())


def test_an_import_keeps_an_unchained_recording_unchained() -> None:
    async def go() -> MemoryLog:
        log = MemoryLog()
        async with ChainWriter(log, adopt=True) as writer:
            await writer.append(records())
        return log

    log = asyncio.run(go())
    assert all(e.prev is None for e in log.events)


def test_the_link_round_trips_through_the_codec_and_sqlite(tmp_path: Path) -> None:
    event = records(1)[0].with_prev(RUN_PREFIX + "r1")
    assert codec.decode(codec.encode(event)) == event  # the Kafka backend's path

    async def go() -> list[Event]:
        async with await SQLiteLog.open(tmp_path / "a.db") as log:
            await log.append([event])
            return await log.read_all()

    assert [e.prev for e in asyncio.run(go())] == [event.prev]


def test_a_sqlite_log_from_before_the_chain_gains_the_column_and_reads_as_before(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute(
            'CREATE TABLE events ("offset" INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, '
            "at TEXT NOT NULL, type TEXT NOT NULL, cause TEXT, v INTEGER NOT NULL DEFAULT 1, "
            "data BLOB NOT NULL)"
        )
        db.execute(
            "INSERT INTO events VALUES (0, 'x', '2026-11-21T20:00:00Z', 'trigger.fired', "
            "NULL, 1, '{}')"
        )

    async def go() -> list[Event]:
        async with await SQLiteLog.open(path) as log:
            return await log.read_all()

    read = asyncio.run(go())
    assert [(e.id, e.prev) for e in read] == [("x", None)]
    assert check_chain(read).chained is False


def test_a_checker_told_each_link_is_its_writers_holds_the_state_of_one_that_hashed_it() -> None:
    """``ChainChecker.linked`` (the writer hashed each record for the next one's link):
    at every record the state is the one :meth:`feed` reaches, a seal and the checks after
    it included; a record with no link or another writer's is fed as ``feed`` feeds it."""

    async def written() -> list[Event]:
        log = MemoryLog()
        async with ChainWriter(log, run="r1") as writer:
            for i in range(0, 12, 4):
                batch = [
                    make_event(
                        "trigger.fired", T0 + timedelta(seconds=i + j), {"kind": f"k{i + j}"}
                    )
                    for j in range(4)
                ]
                await writer.append(batch)
        return await log.read_all()

    records = asyncio.run(written())
    assert records[0].prev is not None and len(records) == 13  # the seal at the end
    fed, told = ChainChecker(), ChainChecker()
    for record in records:
        fed.feed(record)
        told.linked(record)
        assert told.state() == fed.state(), record.offset
    assert told.finish().describe() == fed.finish().describe()
