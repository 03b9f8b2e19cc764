"""The seal record (streams/seal.py): a log that travels without its SQLite file still
says whether it ended cleanly, and a cut tail is named by the offset it was cut after."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from streams.backends.memory import MemoryLog
from streams.chain import RUN_PREFIX, ChainWriter, check_chain, digest
from streams.events import Event, make_event
from streams.seal import SEALING, genesis, group_anchor, is_seal, parse_genesis, seal_record

T0 = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
N = 6


def records(n: int = N) -> list[Event]:
    return [
        make_event("trigger.fired", T0 + timedelta(seconds=i), {"kind": "tick", "n": i})
        for i in range(n)
    ]


def written(events: list[Event]) -> list[Event]:
    """``events`` written by a writer that ends cleanly (a seal record last)."""

    async def go() -> list[Event]:
        log = MemoryLog()
        async with ChainWriter(log, run="r1") as writer:
            await writer.append(events)
        return log.events

    return asyncio.run(go())


def old_chain(events: list[Event]) -> list[Event]:
    """``events`` chained as before seals existed (``run:<id>`` alone, no seal record)."""
    linked: list[Event] = []
    for i, event in enumerate(events):
        link = digest(linked[-1]) if linked else RUN_PREFIX + "r1"
        linked.append(event.with_prev(link).with_offset(i))
    return linked


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        pytest.param(genesis("abc"), ("abc", True), id="sealing"),
        pytest.param(RUN_PREFIX + "abc", ("abc", False), id="before-seals"),
        pytest.param(genesis(None), ("unnamed", True), id="unnamed"),
        pytest.param(None, (None, False), id="unchained"),
        pytest.param("forged", (None, False), id="not-a-run"),
    ],
)
def test_the_first_link_says_whether_the_chain_is_sealed(
    link: str | None, expected: tuple[str | None, bool]
) -> None:
    assert parse_genesis(link) == expected


def test_a_clean_end_leaves_a_seal_record_and_the_records_alone_say_complete() -> None:
    log = written(records())
    assert log[0].prev == RUN_PREFIX + "r1" + SEALING
    assert is_seal(log[-1]) and log[-1].data == {"head": digest(log[-2])}
    assert log[-1].at == log[-2].at  # deterministic: no clock read for the seal
    report = check_chain(log)  # no table seal: the records alone
    assert report.ok and report.complete and not report.cut, report.describe()


@pytest.mark.parametrize("cut", [1, 2, N], ids=lambda c: f"cut-{c}")
def test_a_cut_tail_names_the_offset_it_was_cut_after(cut: int) -> None:
    log = written(records())
    report = check_chain(log[:-cut])
    last = len(log) - cut - 1
    assert report.ok and report.cut and not report.complete
    assert report.unsealed_after == last
    assert f"not sealed: the tail after offset {last} was cut" in report.describe()


@pytest.mark.parametrize(
    "forge",
    ["other-head", "seal-first"],
)
def test_a_seal_that_names_another_record_is_a_break(forge: str) -> None:
    log = written(records())
    if forge == "other-head":
        seal = seal_record(log[-2].at, digest(log[0])).with_prev(log[-1].prev)
        tampered = [*log[:-1], seal.with_offset(len(log) - 1)]
        at = len(log) - 1
    else:
        tampered = [seal_record(T0, "x").with_prev(genesis("r1")).with_offset(0)]
        at = 0
    report = check_chain(tampered)
    assert report.broken is not None and report.broken[0] == at, report.describe()


def test_a_chain_from_before_seals_is_not_sealed_and_not_failed() -> None:
    report = check_chain(old_chain(records()))
    assert report.ok and not report.cut and not report.complete
    assert "not sealed (its chain was started before" in report.describe(sealable=False)


def test_an_import_of_a_cut_export_adds_no_seal() -> None:
    cut = [e.with_offset(-1) for e in written(records())[:-2]]

    async def go() -> list[Event]:
        log = MemoryLog()
        async with ChainWriter(log, adopt=True) as writer:
            await writer.append(cut)
        return log.events

    imported = asyncio.run(go())
    assert not any(is_seal(e) for e in imported)
    assert check_chain(imported).cut


def test_a_writer_appending_to_a_chain_from_before_seals_adds_none() -> None:
    old = old_chain(records(3))

    async def go() -> list[Event]:
        log = MemoryLog()
        await log.append(old)
        async with ChainWriter(log, run="r1") as writer:
            await writer.append(records()[3:])
        return log.events

    log = asyncio.run(go())
    assert not any(is_seal(e) for e in log) and len(log) == N
    assert check_chain(log).ok


def two_writers(*, a_seals: bool = True) -> list[Event]:
    """Writers ``a`` and ``b`` appending in turns to one log (no lock), each its own chain."""

    async def go() -> list[Event]:
        log = MemoryLog()
        a, b = ChainWriter(log, shared=True, writer="a"), ChainWriter(log, shared=True, writer="b")
        await a.__aenter__()
        await b.__aenter__()
        events = records(2 * N)
        for i in range(N):
            await a.append([events[2 * i]])
            await b.append([events[2 * i + 1]])
        await b.__aexit__(None, None, None)
        if a_seals:
            await a.__aexit__(None, None, None)
        return log.events

    return asyncio.run(go())


def test_several_writers_each_chain_and_seal_their_own_records() -> None:
    log = two_writers()
    assert log[0].prev == "@a/" + genesis(None) and log[1].prev == "@b/" + genesis(None)
    assert log[2].prev == "@a/" + group_anchor(genesis(None), [digest(log[0])])
    report = check_chain(log)
    assert report.ok and report.complete and report.writers == ["a", "b"], report.describe()


def test_a_writer_that_did_not_seal_leaves_the_log_not_complete() -> None:
    log = two_writers(a_seals=False)
    report = check_chain(log)
    assert report.ok and report.cut and report.unsealed_after == 2 * N - 2, report.describe()


WRITER_TAMPERS: dict[str, tuple[Callable[[list[Event]], list[Event]], int]] = {
    # deleting a's record at offset 2: a's next record (offset 4, now 3) names it
    "delete": (lambda log: log[:2] + log[3:], 3),
    # altering b's record at offset 5: b's next record (offset 7) no longer matches
    "alter": (
        lambda log: [
            *log[:5],
            Event(log[5].type, log[5].at, log[5].id, {"n": -1}, None, 5, 1, log[5].prev),
            *log[6:],
        ],
        7,
    ),
    # deleting all of a writer's first records: its next record names one not on the log
    "delete-first": (lambda log: [e for i, e in enumerate(log) if i != 0], 1),
}


@pytest.mark.parametrize("tamper", sorted(WRITER_TAMPERS))
def test_tampering_with_one_writers_records_is_reported(tamper: str) -> None:
    change, expected = WRITER_TAMPERS[tamper]
    log = [e.with_offset(i) for i, e in enumerate(change(two_writers()))]
    report = check_chain(log)
    assert report.broken is not None and report.broken[0] == expected, report.describe()


@pytest.mark.parametrize("cut", [1, 3], ids=lambda c: f"cut-{c}")
def test_a_cut_tail_of_a_shared_log_names_an_offset(cut: int) -> None:
    log = two_writers()
    report = check_chain(log[:-cut])
    assert report.ok and report.cut, report.describe()
    assert report.unsealed_after is not None and report.unsealed_after < len(log) - cut
