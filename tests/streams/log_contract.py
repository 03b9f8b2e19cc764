"""The log contract, written once (the port's docstring in ``streams/log.py`` in tests).

A backend's test module is a few lines::

    class TestMyLog(LogContract):
        persistent = True          # False skips the reopening tests

        @pytest.fixture
        def opener(self, tmp_path: Path) -> LogOpener:
            return lambda: MyLog.open(tmp_path / "log")

``opener()`` must open the *same* storage every time it is called, so that the
reopening tests see what an earlier handle wrote.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import ClassVar, cast

import pytest

from streams.events import Event, format_time, make_event
from streams.log import EventLog, Quarantined
from tests.builders import T0, build_pod, watch

LogOpener = Callable[[], Awaitable[EventLog]]
TIMEOUT = 5.0


def tick(n: int, *, cause: str | None = None) -> Event:
    """A small distinct event; ``n`` makes it unique."""
    when = T0 + timedelta(seconds=n)
    return make_event(
        "trigger.fired",
        when,
        {"trigger": "session", "kind": "tick", "scheduled": format_time(when), "n": n},
        cause=cause,
    )


def ticks(start: int, stop: int) -> list[Event]:
    return [tick(n) for n in range(start, stop)]


def unplaced(events: list[Event]) -> list[Event]:
    """The events as they were before the log gave them offsets."""
    return [replace(e, offset=-1) for e in events]


async def take(
    log: EventLog, start: int, count: int, into: list[Event] | None = None
) -> list[Event]:
    """The first ``count`` records a subscription from ``start`` yields (fails on timeout)."""
    got = [] if into is None else into
    # the port promises an AsyncIterator; every backend returns an async generator
    subscription = cast(AsyncGenerator[Event, None], log.subscribe(start))
    async with asyncio.timeout(TIMEOUT), aclosing(subscription) as records:
        async for event in records:
            got.append(event)
            if len(got) == count:
                break
    return got


async def until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(TIMEOUT):
        while not predicate():
            await asyncio.sleep(0.001)


class LogContract:
    """Every :class:`~streams.log.EventLog` backend must pass these."""

    persistent: ClassVar[bool] = True

    @pytest.fixture
    def opener(self) -> LogOpener:
        raise NotImplementedError("a backend's test class provides the opener fixture")

    @pytest.fixture
    async def log(self, opener: LogOpener) -> AsyncIterator[EventLog]:
        log = await opener()
        yield log
        await log.close()

    # -- append and offsets ------------------------------------------------------------

    async def test_a_new_log_is_empty(self, log: EventLog) -> None:
        assert await log.head() == 0
        assert await log.read_all() == []
        assert await log.contains(["nope"]) == set()
        assert await log.quarantine() == []

    async def test_append_assigns_offsets_from_zero(self, log: EventLog) -> None:
        first = await log.append(ticks(0, 3))
        assert [e.offset for e in first] == [0, 1, 2]
        assert unplaced(first) == ticks(0, 3)
        second = await log.append(ticks(3, 5))
        assert [e.offset for e in second] == [3, 4]
        assert await log.head() == 5
        assert await log.read_all() == first + second

    async def test_records_come_back_exactly(self, log: EventLog) -> None:
        paris = timezone(timedelta(hours=1))
        pod = build_pod("default", "wéb-1", cpu="250m", labels={"app": "日本"})
        originals = [
            watch("pods", pod, datetime(2026, 11, 21, 21, 0, 0, 123456, tzinfo=paris)),
            make_event(
                "config.applied",
                T0,
                {
                    "config": {"f": 0.1, "big": 2**62, "neg": -3, "t": True, "n": None, "l": []},
                    "source": "x",
                },
                cause="some-trigger",
            ),
        ]
        added = await log.append(originals)
        assert unplaced(added) == originals
        stored = await log.read_all()
        assert unplaced(stored) == originals
        assert [e.cause for e in stored] == [None, "some-trigger"]
        assert all(e.at.utcoffset() == timedelta(0) for e in stored)
        assert stored[0].at == datetime(2026, 11, 21, 20, 0, 0, 123456, tzinfo=UTC)

    async def test_an_empty_append_adds_nothing(self, log: EventLog) -> None:
        assert await log.append([]) == []
        assert await log.head() == 0

    async def test_append_is_idempotent_by_id(self, log: EventLog) -> None:
        await log.append(ticks(0, 3))
        assert await log.append(ticks(0, 3)) == []
        assert await log.head() == 3
        mixed = [tick(1), tick(3), tick(3), tick(0), tick(4)]
        added = await log.append(mixed)
        assert [(e.offset, e.id) for e in added] == [(3, tick(3).id), (4, tick(4).id)]
        assert await log.head() == 5
        assert [e.id for e in await log.read_all()] == [tick(n).id for n in range(5)]

    async def test_duplicates_inside_one_batch_are_kept_once(self, log: EventLog) -> None:
        added = await log.append([tick(7), tick(7), tick(8), tick(7)])
        assert [(e.offset, e.id) for e in added] == [(0, tick(7).id), (1, tick(8).id)]

    async def test_a_batch_with_an_unstorable_event_adds_nothing(self, log: EventLog) -> None:
        bogus = Event(type="k8s.nonsense", at=T0, id="bogus", data={})
        naive = replace(tick(9), at=datetime(2026, 1, 1), id="naive")
        for bad in (bogus, naive):
            with pytest.raises(ValueError):
                await log.append([tick(0), bad, tick(1)])
        assert await log.head() == 0
        assert await log.contains([tick(0).id, "bogus", "naive"]) == set()
        assert [e.offset for e in await log.append([tick(0)])] == [0]

    async def test_concurrent_batches_do_not_interleave(self, log: EventLog) -> None:
        batches = [ticks(k * 300, (k + 1) * 300) for k in range(4)]
        results = await asyncio.gather(*(log.append(b) for b in batches))
        for batch, added in zip(batches, results, strict=True):
            offsets = [e.offset for e in added]
            assert offsets == list(range(offsets[0], offsets[0] + 300))
            assert unplaced(added) == batch
        stored = await log.read_all()
        assert [e.offset for e in stored] == list(range(1200))
        assert sorted(e.id for e in stored) == sorted(e.id for b in batches for e in b)

    # -- reading -----------------------------------------------------------------------

    async def test_read_ranges(self, log: EventLog) -> None:
        await log.append(ticks(0, 10))

        async def offsets(start: int, stop: int | None = None) -> list[int]:
            return [e.offset for e in await log.read_all(start, stop)]

        assert await offsets(0) == list(range(10))
        assert await offsets(3, 7) == [3, 4, 5, 6]
        assert await offsets(7) == [7, 8, 9]
        assert await offsets(8, 100) == [8, 9]
        assert await offsets(5, 5) == []
        assert await offsets(6, 2) == []
        assert await offsets(10) == []
        assert await offsets(-5, 2) == [0, 1]

    async def test_reads_cross_page_boundaries(self, log: EventLog) -> None:
        events = ticks(0, 2_500)
        await log.append(events)
        stored = await log.read_all()
        assert [e.offset for e in stored] == list(range(2_500))
        assert unplaced(stored) == events
        assert [e.offset for e in await log.read_all(999, 1_001)] == [999, 1_000]
        assert [e.offset for e in await log.read_all(1_998)][:3] == [1_998, 1_999, 2_000]

    async def test_contains(self, log: EventLog) -> None:
        await log.append(ticks(0, 5))
        assert await log.contains([tick(1).id, "unknown", tick(4).id]) == {tick(1).id, tick(4).id}
        assert await log.contains([]) == set()
        assert await log.contains([e.id for e in ticks(5, 8)]) == set()

    # -- subscribing -------------------------------------------------------------------

    async def test_subscribe_yields_old_records_then_new_ones(self, log: EventLog) -> None:
        await log.append(ticks(0, 3))
        got: list[Event] = []
        reader = asyncio.create_task(take(log, 1, 4, got))
        await until(lambda: len(got) == 2)
        await log.append(ticks(3, 5))
        await reader
        assert [e.offset for e in got] == [1, 2, 3, 4]
        assert unplaced(got) == ticks(1, 5)

    async def test_subscribe_on_an_empty_log_waits_for_the_first_record(
        self, log: EventLog
    ) -> None:
        reader = asyncio.create_task(take(log, 0, 1))
        await asyncio.sleep(0.05)
        assert not reader.done()
        await log.append([tick(0)])
        assert [e.id for e in await reader] == [tick(0).id]

    async def test_subscribe_from_beyond_the_head_skips_to_it(self, log: EventLog) -> None:
        await log.append(ticks(0, 2))
        reader = asyncio.create_task(take(log, 5, 2))
        await log.append(ticks(2, 5))
        await log.append(ticks(5, 8))
        assert [e.offset for e in await reader] == [5, 6]

    async def test_two_subscribers_both_see_everything_in_order(self, log: EventLog) -> None:
        readers = [asyncio.create_task(take(log, 0, 50)) for _ in range(2)]
        for k in range(5):
            await log.append(ticks(k * 10, (k + 1) * 10))
            await asyncio.sleep(0.01)
        for reader in readers:
            got = await reader
            assert [e.offset for e in got] == list(range(50))
            assert unplaced(got) == ticks(0, 50)

    # -- quarantine --------------------------------------------------------------------

    async def test_quarantine_round_trip(self, log: EventLog) -> None:
        first = [
            Quarantined("rec.jsonl", 3, "not JSON: unexpected character", "{oops"),
            Quarantined("rec.jsonl", 9, "pod without metadata.name", '{"ünï": "cödé"}'),
        ]
        later = Quarantined("other.jsonl", 1, "unknown event type 'x'", '{"type": "x"}')
        await log.set_aside(first)
        await log.set_aside([])
        await log.set_aside([later])
        assert await log.quarantine() == [*first, later]

    async def test_setting_the_same_line_aside_twice_keeps_it_once(self, log: EventLog) -> None:
        item = Quarantined("rec.jsonl", 3, "not JSON", "{oops")
        await log.set_aside([item])
        await log.set_aside([item, item])
        assert await log.quarantine() == [item]

    # -- reopening (persistent backends) -----------------------------------------------

    async def test_reopening_keeps_records_ids_and_quarantine(self, opener: LogOpener) -> None:
        if not self.persistent:
            pytest.skip("this backend does not persist")
        item = Quarantined("rec.jsonl", 2, "not JSON", "{")
        async with await opener() as log:
            await log.append(ticks(0, 3))
            await log.set_aside([item])
        async with await opener() as log:
            assert await log.head() == 3
            assert unplaced(await log.read_all()) == ticks(0, 3)
            assert await log.contains([tick(2).id]) == {tick(2).id}
            assert await log.append(ticks(1, 3)) == []
            assert [e.offset for e in await log.append(ticks(2, 5))] == [3, 4]
            assert await log.quarantine() == [item]
