"""Reads over Fetch answers (``kafka_reader.records``, ``kafka_index.fetch_offsets``,
``kafka_fetch.end_offset``) against a scripted broker: what tansu does (the true end as
the high watermark, an empty answer while S3 storage is still being read, records
deleted before the position) and what Apache Kafka does (OFFSET_OUT_OF_RANGE past the
end: ListOffsets' answer decides), each read ending where the partition ends without
waiting there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiokafka import TopicPartition

from streams.backends.kafka_fetch import NO_WAIT_MS, PAST_THE_END, Answer, end_offset
from streams.backends.kafka_index import fetch_offsets
from streams.backends.kafka_reader import DATA_WAIT_MS, records
from streams.log import BackendUnavailableError
from tests.streams.test_kafka_batches import build

TP = TopicPartition("log", 0)


class Broker:
    """Batches of 3 records at 0, 3, 6, ... (``count`` records in all); ``slow``: the first
    answer below the end is empty (S3 storage still being read) unless it may wait;
    ``start``: the log's start (records below it deleted); ``kafka``: a fetch past the end
    is OFFSET_OUT_OF_RANGE."""

    def __init__(self, count: int, *, slow: bool = False, start: int = 0, kafka: bool = False):
        self.count, self.slow, self.start, self.kafka = count, slow, start, kafka
        self.max_bytes = 1 << 20
        self.asked: list[tuple[int, int]] = []

    async def fetch(
        self, tp: Any, offset: int, *, wait_ms: int = NO_WAIT_MS, max_bytes: int | None = None
    ) -> Answer:
        self.asked.append((offset, wait_ms))
        if offset < self.start:
            return Answer(b"", self.count, self.start)
        if offset >= self.count:
            return Answer(b"", -1 if self.kafka else self.count, self.start)
        if self.slow and wait_ms < DATA_WAIT_MS:
            return Answer(b"", self.count, self.start)
        base = offset - offset % 3
        data = b"".join(
            build(
                b,
                [
                    (1, None, b"v%d" % o, [("id", b"e%d" % o)])
                    for o in range(b, min(b + 3, self.count))
                ],
            )
            for b in range(base, min(base + 6, self.count), 3)
        )
        return Answer(data, self.count, self.start)


async def _offsets(broker: Broker, start: int, stop: int | None) -> list[int]:
    return [r.offset async for page in records(broker, TP, start, stop) for r in page]  # type: ignore[arg-type]


@pytest.mark.parametrize("slow", [False, True], ids=["memory", "slow storage"])
@pytest.mark.parametrize(("start", "stop"), [(0, None), (0, 100), (4, 11), (10, 11), (13, 20)])
def test_a_read_ends_at_its_bound_or_the_end_without_waiting_there(
    slow: bool, start: int, stop: int | None
) -> None:
    broker = Broker(13, slow=slow)
    bound = 13 if stop is None else min(stop, 13)
    got = asyncio.run(_offsets(broker, start, stop if stop is not None else 100))
    assert got == list(range(start, bound))
    waits = [w for o, w in broker.asked]
    assert waits[0] == NO_WAIT_MS  # nothing known yet: the first fetch does not wait
    at_end = [w for o, w in broker.asked if o >= 13]
    assert all(w == NO_WAIT_MS for w in at_end)  # never a long wait at the end
    assert len(broker.asked) <= (bound - start) // 6 + 3 + slow


def test_a_read_below_the_logs_start_starts_there() -> None:
    assert asyncio.run(_offsets(Broker(13, start=6), 0, 13)) == list(range(6, 13))


def test_lookups_take_the_offsets_the_answers_hold() -> None:
    broker = Broker(40, slow=True, start=3)
    wanted = [0, 1, 4, 5, 17, 18, 19, 39, 40, 55]
    got = asyncio.run(fetch_offsets(broker, TP, wanted))  # type: ignore[arg-type]
    assert [r.offset for r in got] == [4, 5, 17, 18, 19, 39]
    assert [r.value for r in got][:2] == [b"v4", b"v5"]


def test_a_lookup_that_no_answer_moves_on_gives_up() -> None:
    class Stuck(Broker):
        async def fetch(self, tp: Any, offset: int, **_: Any) -> Answer:
            return Answer(b"", self.count, 0)

    with pytest.raises(BackendUnavailableError, match="no records come"):
        asyncio.run(fetch_offsets(Stuck(10), TP, [2]))  # type: ignore[arg-type]


def _listed(value: int, calls: list[int]) -> Callable[[], Awaitable[int]]:
    async def listed() -> int:
        calls.append(value)
        return value

    return listed


@pytest.mark.parametrize("count", [0, 1, 13])
def test_the_end_is_one_fetch_past_it_on_tansu(count: int) -> None:
    broker, calls = Broker(count), list[int]()
    assert asyncio.run(end_offset(broker, TP, _listed(-99, calls))) == count  # type: ignore[arg-type]
    assert broker.asked == [(PAST_THE_END, NO_WAIT_MS)] and calls == []


@pytest.mark.parametrize(("count", "listed"), [(0, 0), (13, 13), (13, 13 - 2)])
def test_where_a_fetch_past_the_end_is_refused_listoffsets_and_a_fetch_there_decide(
    count: int, listed: int
) -> None:
    broker, calls = Broker(count, kafka=True), list[int]()
    assert asyncio.run(end_offset(broker, TP, _listed(listed, calls))) == count  # type: ignore[arg-type]
    assert calls == [listed]
