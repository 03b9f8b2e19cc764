"""What only the Kafka log can get wrong: duplicates that slipped in, batch bounds, errors.

A raw aiokafka producer stands in for a writer whose produce was retried after its ack
was lost, or for a second process racing on the same ids.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import signal
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streams.backends import open_log
from streams.backends.kafka import BatchTooLargeError, KafkaLog, runs
from streams.backends.kafka_url import parse_kafka_url
from streams.codec import encode
from streams.events import Event
from streams.log import BackendUnavailableError, LogError
from tests.streams.log_contract import ids, take, tick, ticks, unplaced
from tests.streams.tansu import Broker, free_port
from tests.streams.test_kafka_codec import canonical_payload


async def produce_raw(broker: Broker, topic: str, events: list[Event]) -> None:
    """Put ``events`` on ``topic`` as a KafkaLog would, bypassing its id index."""
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    await producer.start()
    try:
        for event in events:
            headers = [("id", event.id.encode()), ("type", event.type.encode())]
            await producer.send_and_wait(topic, encode(event), partition=0, headers=headers)
    finally:
        await producer.stop()


async def test_a_duplicate_that_slipped_in_is_dropped_on_read(broker: Broker) -> None:
    url = broker.url()
    topic = parse_kafka_url(url).topic
    async with await KafkaLog.open(url) as log:
        first = await log.append(ticks(0, 3))
        await produce_raw(broker, topic, [tick(1), tick(0), tick(3)])  # 1 and 0 again, 3 new
        await log.append(ticks(4, 6))
        stored = await log.read_all()
        assert ids(stored) == [tick(n).id for n in (0, 1, 2, 3, 4, 5)]
        assert stored[:3] == first  # each id at its first offset
        got = await take(log, 0, 6)
        assert ids(got) == ids(stored)
    async with await KafkaLog.open(url) as fresh:  # a new reader, index rebuilt from the topic
        assert ids(await fresh.read_all(stored[2].offset + 1)) == ids(stored[3:])
        assert await fresh.append(ticks(0, 6)) == []


async def test_an_append_after_another_writer_reports_only_what_readers_see(
    broker: Broker,
) -> None:
    """The log trusts its index between its own appends; the produce answer shows that
    another writer got in between, and what that writer already put there is not added."""
    url = broker.url()
    topic = parse_kafka_url(url).topic
    async with await KafkaLog.open(url) as log:
        assert len(await log.append(ticks(0, 2))) == 2
        await produce_raw(broker, topic, [tick(5)])  # unseen by the log's index
        added = await log.append([tick(5), tick(6)])
        assert ids(added) == [tick(6).id]  # tick 5 went out again, but readers drop it
        assert await log.append([tick(5)]) == []  # caught up before appending now
        stored = await log.read_all()
        assert ids(stored) == [tick(n).id for n in (0, 1, 5, 6)]
        assert stored[3] == added[0]


async def test_two_writers_racing_on_the_same_ids_are_seen_once(broker: Broker) -> None:
    url = broker.url()
    async with await KafkaLog.open(url) as a, await KafkaLog.open(url) as b:
        batches = [ticks(k * 5, k * 5 + 20) for k in range(6)]  # heavily overlapping
        await asyncio.gather(
            *(log.append(batch) for log, batch in zip([a, b] * 3, batches, strict=True))
        )
        for log in (a, b):
            stored = await log.read_all()
            assert sorted(ids(stored)) == sorted(e.id for e in ticks(0, 45))
            assert len(set(ids(stored))) == len(stored)


@pytest.mark.parametrize("held", [False, True], ids=["append", "append_encoded"])
async def test_a_batch_above_the_bound_is_refused_whole(broker: Broker, held: bool) -> None:
    async with await KafkaLog.open(broker.url(max_batch_bytes="4096")) as log:
        with pytest.raises(BatchTooLargeError, match="max_batch_bytes=4096") as caught:
            if held:
                assert isinstance(log, KafkaLog)
                events = ticks(0, 100)
                await log.append_encoded(events, [canonical_payload(e) for e in events])
            else:
                await log.append(ticks(0, 100))
        assert not caught.value.retriable
        assert await log.head() == 0
        assert len(await log.append(ticks(0, 5))) == 5  # a batch within the bound is fine


async def test_the_bulk_append_splits_into_atomic_record_batches(broker: Broker) -> None:
    log = await KafkaLog.open(broker.url(max_batch_bytes="4096"))
    try:
        added = await log.append_bulk(ticks(0, 100), [])
        assert unplaced(added) == ticks(0, 100)
        assert unplaced(await log.read_all()) == ticks(0, 100)
    finally:
        await log.close()


async def test_an_unreachable_broker_is_a_retriable_error() -> None:
    with pytest.raises(BackendUnavailableError, match="cannot open the Kafka log") as caught:
        await KafkaLog.open(f"kafka://127.0.0.1:{free_port()}/log?timeout=2")
    assert caught.value.retriable


async def test_a_topic_with_several_partitions_is_refused(broker: Broker) -> None:
    url = broker.url()
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(parse_kafka_url(url).topic, 2, 1)])
    finally:
        await admin.close()
    with pytest.raises(LogError, match="a log needs exactly one"):
        await KafkaLog.open(url)


async def test_a_record_that_is_not_an_event_names_its_offset(broker: Broker) -> None:
    url = broker.url()
    async with await KafkaLog.open(url) as log:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await producer.start()
        try:
            await producer.send_and_wait(parse_kafka_url(url).topic, b"{oops", partition=0)
        finally:
            await producer.stop()
        with pytest.raises(LogError, match="offset 0: not a tide event"):
            await log.read_all()


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("kafka:///log", "names no broker"),
        ("kafka://h:1", "exactly one topic"),
        ("kafka://h:1/a/b", "exactly one topic"),
        ("kafka://h:1/log?partitions=3", "partitions must be 1"),
        ("kafka://h:1/log?colour=red", "unknown option 'colour'"),
        ("kafka://h:1/log?max_batch_bytes=big", "is not a whole number"),
        ("kafka://h:1/log?replication=0", "at least 1"),
    ],
    ids=["no-broker", "no-topic", "two-topics", "partitions", "unknown", "not-number", "zero"],
)
async def test_bad_urls_are_one_line_errors(url: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        await open_log(url)


async def test_open_log_opens_kafka_urls(broker: Broker) -> None:
    url = broker.url(client_id="auditor", replication="1")
    async with await open_log(url) as log:
        assert isinstance(log, KafkaLog)
        assert log.url == url
        assert log.target.client_id == "auditor"


def _append_forever(url: str, started: Any) -> None:
    """The writer that gets killed: batches of 50 whose ids may already be on the topic."""

    async def run() -> None:
        log = await KafkaLog.open(url)
        k = 0
        while True:
            await log.append(ticks(k * 50, (k + 1) * 50))
            started.set()
            k += 1

    asyncio.run(run())


def test_kill_9_leaves_no_half_batch_and_no_duplicate(broker: Broker) -> None:
    """A writer killed at 30 random points: readers see whole batches, each id once.

    The writers are forked from this process (already past its imports), so 30 kills
    take seconds, not a minute of interpreter start-ups.
    """
    url = broker.url()
    rng = random.Random(13)
    context = multiprocessing.get_context("fork")
    for _ in range(30):
        started = context.Event()
        writer = context.Process(target=_append_forever, args=(url, started), daemon=True)
        writer.start()
        assert started.wait(timeout=30), "the writer never appended"
        time.sleep(rng.uniform(0.0, 0.03))
        assert writer.pid is not None
        os.kill(writer.pid, signal.SIGKILL)
        writer.join()

    async def read() -> list[Event]:
        async with await KafkaLog.open(url) as log:
            return await log.read_all()

    stored = asyncio.run(read())
    assert len(set(ids(stored))) == len(stored)
    count = len(stored)
    assert count % 50 == 0 and count >= 50
    assert unplaced(stored) == ticks(0, count)


@pytest.mark.parametrize(
    ("offsets", "gap", "expected"),
    [
        ([], 10, []),
        ([5], 10, [(5, 6)]),
        ([1, 2, 3], 10, [(1, 4)]),
        ([1, 12], 10, [(1, 2), (12, 13)]),
        ([1, 10], 10, [(1, 11)]),
        ([0, 3, 40, 41, 90], 10, [(0, 4), (40, 42), (90, 91)]),
    ],
    ids=["none", "one", "adjacent", "far-apart", "within-gap", "three-runs"],
)
def test_record_lookups_seek_once_per_run_of_nearby_offsets(
    offsets: list[int], gap: int, expected: list[tuple[int, int]]
) -> None:
    assert runs(offsets, gap=gap) == expected


async def test_a_lookup_finds_the_first_record_of_an_id(broker: Broker) -> None:
    url = broker.url()
    log = await KafkaLog.open(url)
    try:
        first = await log.append(ticks(0, 3))
        await produce_raw(broker, parse_kafka_url(url).topic, [tick(1)])  # slipped in again
        found = await log.records([tick(1).id, tick(2).id, "unknown"])
        assert found == {tick(1).id: first[1], tick(2).id: first[2]}
    finally:
        await log.close()
