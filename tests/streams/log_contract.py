"""The log contract, written once (the port's docstring in ``streams/log.py`` in tests).

:class:`LogContract` holds what every backend promises: offsets strictly increasing,
``head()`` above every offset and at most the next one, ``read(start, stop)`` half-open.
It never assumes offsets start at 0 or grow by one. :class:`DenseLogContract` adds what
the memory and SQLite backends promise besides (offsets 0, 1, 2, ...; ``head()`` is the
count). A backend's test module is a few lines::

    class MyBackend(BackendContract):
        persistent = True          # False skips the reopening tests

        @pytest.fixture
        def opener(self, tmp_path: Path) -> LogOpener:
            return lambda: MyLog.open(tmp_path / "log")

    class TestMyLog(MyBackend, LogContract): ...

``opener()`` must open the *same* storage every time it is called, so that the
reopening tests see what an earlier handle wrote. The capability contracts (quarantine,
id index) are in ``capability_contracts.py``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import ClassVar, cast

import pytest

from streams.events import Event, format_time, make_event
from streams.log import EventLog
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


def offsets(events: list[Event]) -> list[int]:
    return [e.offset for e in events]


def ids(events: list[Event]) -> list[str]:
    return [e.id for e in events]


def increasing(values: list[int]) -> bool:
    return all(a < b for a, b in itertools.pairwise(values))


class BackendContract:
    """How a contract reaches a backend: the ``opener`` fixture, and whether it persists."""

    persistent: ClassVar[bool] = True

    @pytest.fixture
    def opener(self) -> LogOpener:
        raise NotImplementedError("a backend's test class provides the opener fixture")

    @pytest.fixture
    async def log(self, opener: LogOpener) -> AsyncIterator[EventLog]:
        log = await opener()
        yield log
        await log.close()


class LogContract(BackendContract):
    """Every :class:`~streams.log.EventLog` backend must pass these."""

    # -- append and offsets ------------------------------------------------------------

    async def test_a_new_log_is_empty(self, log: EventLog) -> None:
        assert await log.head() >= 0
        assert await log.read_all() == []

    async def test_append_assigns_increasing_offsets(self, log: EventLog) -> None:
        before = await log.head()
        first = await log.append(ticks(0, 3))
        assert increasing(offsets(first))
        assert min(offsets(first)) >= before
        assert unplaced(first) == ticks(0, 3)
        middle = await log.head()
        assert middle > max(offsets(first))
        second = await log.append(ticks(3, 5))
        assert increasing(offsets(second))
        assert min(offsets(second)) >= middle
        assert await log.head() > max(offsets(second))
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
        head = await log.head()
        assert await log.append([]) == []
        assert await log.head() == head
        assert await log.read_all() == []

    async def test_append_is_idempotent_by_id(self, log: EventLog) -> None:
        first = await log.append(ticks(0, 3))
        head = await log.head()
        assert await log.append(ticks(0, 3)) == []
        assert await log.head() == head
        mixed = [tick(1), tick(3), tick(3), tick(0), tick(4)]
        added = await log.append(mixed)
        assert ids(added) == [tick(3).id, tick(4).id]
        assert increasing(offsets(first) + offsets(added))
        assert ids(await log.read_all()) == [tick(n).id for n in range(5)]

    async def test_duplicates_inside_one_batch_are_kept_once(self, log: EventLog) -> None:
        added = await log.append([tick(7), tick(7), tick(8), tick(7)])
        assert ids(added) == [tick(7).id, tick(8).id]
        assert increasing(offsets(added))

    async def test_a_batch_with_an_unstorable_event_adds_nothing(self, log: EventLog) -> None:
        bogus = Event(type="k8s.nonsense", at=T0, id="bogus", data={})
        naive = replace(tick(9), at=datetime(2026, 1, 1), id="naive")
        head = await log.head()
        for bad in (bogus, naive):
            with pytest.raises(ValueError):
                await log.append([tick(0), bad, tick(1)])
        assert await log.head() == head
        assert await log.read_all() == []
        assert ids(await log.append([tick(0)])) == [tick(0).id]

    async def test_concurrent_batches_do_not_interleave(self, log: EventLog) -> None:
        batches = [ticks(k * 300, (k + 1) * 300) for k in range(4)]
        results = await asyncio.gather(*(log.append(b) for b in batches))
        spans = []
        for batch, added in zip(batches, results, strict=True):
            assert increasing(offsets(added))
            assert unplaced(added) == batch
            spans.append((added[0].offset, added[-1].offset))
        spans.sort()
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))
        stored = await log.read_all()
        assert increasing(offsets(stored))
        assert sorted(ids(stored)) == sorted(e.id for b in batches for e in b)

    # -- reading -----------------------------------------------------------------------

    async def test_read_is_half_open(self, log: EventLog) -> None:
        await log.append(ticks(0, 10))
        at = offsets(await log.read_all())
        head = await log.head()

        async def read(start: int, stop: int | None = None) -> list[int]:
            return offsets(await log.read_all(start, stop))

        assert await read(at[0]) == at
        assert await read(at[3], at[7]) == at[3:7]
        assert await read(at[3] + 1, at[7] + 1) == at[4:8]
        assert await read(at[7]) == at[7:]
        assert await read(at[8], head + 100) == at[8:]
        assert await read(at[5], at[5]) == []
        assert await read(at[6], at[2]) == []
        assert await read(head) == []
        assert await read(-5, at[2]) == at[:2]
        assert await read(at[9] + 1) == []

    async def test_reads_cross_page_boundaries(self, log: EventLog) -> None:
        events = ticks(0, 2_500)
        await log.append(events)
        stored = await log.read_all()
        at = offsets(stored)
        assert increasing(at)
        assert unplaced(stored) == events
        assert offsets(await log.read_all(at[999], at[1_001])) == at[999:1_001]
        assert offsets(await log.read_all(at[1_998]))[:3] == at[1_998:2_001]

    # -- subscribing -------------------------------------------------------------------

    async def test_subscribe_yields_old_records_then_new_ones(self, log: EventLog) -> None:
        first = await log.append(ticks(0, 3))
        got: list[Event] = []
        reader = asyncio.create_task(take(log, first[1].offset, 4, got))
        await until(lambda: len(got) == 2)
        await log.append(ticks(3, 5))
        await reader
        assert increasing(offsets(got))
        assert unplaced(got) == ticks(1, 5)

    async def test_subscribe_on_an_empty_log_waits_for_the_first_record(
        self, log: EventLog
    ) -> None:
        reader = asyncio.create_task(take(log, await log.head(), 1))
        await asyncio.sleep(0.05)
        assert not reader.done()
        await log.append([tick(0)])
        assert ids(await reader) == [tick(0).id]

    async def test_subscribe_from_the_head_yields_only_new_records(self, log: EventLog) -> None:
        await log.append(ticks(0, 2))
        reader = asyncio.create_task(take(log, await log.head(), 2))
        await log.append(ticks(2, 5))
        assert ids(await reader) == ids(ticks(2, 4))

    async def test_two_subscribers_both_see_everything_in_order(self, log: EventLog) -> None:
        start = await log.head()
        readers = [asyncio.create_task(take(log, start, 50)) for _ in range(2)]
        for k in range(5):
            await log.append(ticks(k * 10, (k + 1) * 10))
            await asyncio.sleep(0.01)
        for reader in readers:
            got = await reader
            assert increasing(offsets(got))
            assert unplaced(got) == ticks(0, 50)

    # -- reopening (persistent backends) -----------------------------------------------

    async def test_reopening_keeps_records_and_ids(self, opener: LogOpener) -> None:
        if not self.persistent:
            pytest.skip("this backend does not persist")
        async with await opener() as log:
            first = await log.append(ticks(0, 3))
            head = await log.head()
        async with await opener() as log:
            assert await log.head() == head
            assert await log.read_all() == first
            assert await log.append(ticks(1, 3)) == []
            added = await log.append(ticks(2, 5))
            assert ids(added) == ids(ticks(3, 5))
            assert min(offsets(added)) >= head


class DenseLogContract(LogContract):
    """What the memory and SQLite backends promise besides: offsets 0, 1, 2, ... and
    ``head()`` is the number of records."""

    async def test_a_new_log_starts_at_zero(self, log: EventLog) -> None:
        assert await log.head() == 0
        assert [e.offset for e in await log.append([tick(0)])] == [0]

    async def test_append_assigns_offsets_from_zero(self, log: EventLog) -> None:
        first = await log.append(ticks(0, 3))
        assert [e.offset for e in first] == [0, 1, 2]
        second = await log.append(ticks(3, 5))
        assert [e.offset for e in second] == [3, 4]
        assert await log.head() == 5

    async def test_skipped_ids_take_no_offsets(self, log: EventLog) -> None:
        await log.append(ticks(0, 3))
        assert await log.append(ticks(0, 3)) == []
        assert await log.head() == 3
        added = await log.append([tick(1), tick(3), tick(3), tick(0), tick(4)])
        assert [(e.offset, e.id) for e in added] == [(3, tick(3).id), (4, tick(4).id)]
        assert await log.head() == 5
        fresh = await log.append([tick(7), tick(7), tick(8), tick(7)])
        assert [(e.offset, e.id) for e in fresh] == [(5, tick(7).id), (6, tick(8).id)]

    async def test_duplicates_inside_a_first_batch_take_offsets_from_zero(
        self, log: EventLog
    ) -> None:
        added = await log.append([tick(7), tick(7), tick(8), tick(7)])
        assert [(e.offset, e.id) for e in added] == [(0, tick(7).id), (1, tick(8).id)]

    async def test_two_subscribers_count_the_same_records(self, log: EventLog) -> None:
        readers = [asyncio.create_task(take(log, 0, 20)) for _ in range(2)]
        for k in range(2):
            await log.append(ticks(k * 10, (k + 1) * 10))
            await asyncio.sleep(0.01)
        for reader in readers:
            assert [e.offset for e in await reader] == list(range(20))

    async def test_a_refused_batch_takes_no_offsets(self, log: EventLog) -> None:
        bogus = Event(type="k8s.nonsense", at=T0, id="bogus", data={})
        with pytest.raises(ValueError):
            await log.append([tick(0), bogus, tick(1)])
        assert await log.head() == 0
        assert [e.offset for e in await log.append([tick(0)])] == [0]

    async def test_concurrent_batches_get_contiguous_offsets(self, log: EventLog) -> None:
        batches = [ticks(k * 300, (k + 1) * 300) for k in range(4)]
        results = await asyncio.gather(*(log.append(b) for b in batches))
        for added in results:
            got = [e.offset for e in added]
            assert got == list(range(got[0], got[0] + 300))
        assert [e.offset for e in await log.read_all()] == list(range(1200))

    async def test_read_ranges_by_number(self, log: EventLog) -> None:
        await log.append(ticks(0, 10))

        async def read(start: int, stop: int | None = None) -> list[int]:
            return [e.offset for e in await log.read_all(start, stop)]

        assert await read(0) == list(range(10))
        assert await read(3, 7) == [3, 4, 5, 6]
        assert await read(7) == [7, 8, 9]
        assert await read(8, 100) == [8, 9]
        assert await read(10) == []
        assert await read(-5, 2) == [0, 1]
        events = ticks(10, 2_500)
        await log.append(events)
        assert [e.offset for e in await log.read_all(999, 1_001)] == [999, 1_000]
        assert [e.offset for e in await log.read_all(1_998)][:3] == [1_998, 1_999, 2_000]

    async def test_subscribe_counts_records(self, log: EventLog) -> None:
        await log.append(ticks(0, 3))
        got: list[Event] = []
        reader = asyncio.create_task(take(log, 1, 4, got))
        await until(lambda: len(got) == 2)
        await log.append(ticks(3, 5))
        await reader
        assert [e.offset for e in got] == [1, 2, 3, 4]

    async def test_subscribe_from_beyond_the_head_skips_to_it(self, log: EventLog) -> None:
        await log.append(ticks(0, 2))
        reader = asyncio.create_task(take(log, 5, 2))
        await log.append(ticks(2, 5))
        await log.append(ticks(5, 8))
        assert [e.offset for e in await reader] == [5, 6]

    async def test_reopening_continues_the_count(self, opener: LogOpener) -> None:
        if not self.persistent:
            pytest.skip("this backend does not persist")
        async with await opener() as log:
            await log.append(ticks(0, 3))
        async with await opener() as log:
            assert await log.head() == 3
            assert [e.offset for e in await log.append(ticks(2, 5))] == [3, 4]
