"""Append and read rates of the Kafka log against raw aiokafka on the same bytes (tansu).

One tansu broker (memory storage) is started for the run (``tests/streams/tansu.py``).
Events: the golden demo log's records, repeated with fresh ids up to ``--events``.

* append: ``KafkaLog.append`` in batches of ``--batch`` events (encode, id index,
  one record batch per append, acks=all) against a raw ``AIOKafkaProducer`` sending the
  *same canonical lines* as the same record batches (``create_batch`` / ``send_batch``).
* read: ``KafkaLog.read_all()`` on a fresh handle (rebuilding its id index, deduping,
  decoding every event) against a raw ``AIOKafkaConsumer`` (``assign`` + ``seek``,
  ``getmany``) fetching the same records without decoding them.
* index rebuild: a fresh handle's first ``contains`` (the id index read from the topic's
  headers), the cost of "rebuilt on start" per event.

Baseline and subject alternate, best of ``--repeat``. Run::

    .venv/bin/python -m benchmarks.bench_kafka --events 100000 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import replace
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streams.backends.kafka import KafkaLog
from streams.codec import decode, encode
from streams.events import Event
from tests.streams.tansu import Broker, start_broker

GOLDEN = Path(__file__).parents[1] / "tests" / "replay" / "golden" / "demo.jsonl"


def workload(count: int) -> list[Event]:
    base = [decode(line) for line in GOLDEN.read_bytes().splitlines()]
    return [replace(base[i % len(base)], id=f"e{i}") for i in range(count)]


async def raw_append(broker: Broker, topic: str, lines: list[bytes], batch: int) -> float:
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap,
        acks="all",
        max_batch_size=16 << 20,
        max_request_size=17 << 20,
    )
    await producer.start()
    try:
        start = time.perf_counter()
        for k in range(0, len(lines), batch):
            builder = producer.create_batch()
            for line in lines[k : k + batch]:
                builder.append(timestamp=None, key=None, value=line, headers=[])
            builder.close()
            await (await producer.send_batch(builder, topic, partition=0))
        return time.perf_counter() - start
    finally:
        await producer.stop()


async def raw_read(broker: Broker, topic: str, count: int) -> float:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        enable_auto_commit=False,
        fetch_max_bytes=50 << 20,
        max_partition_fetch_bytes=17 << 20,
    )
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        start = time.perf_counter()
        consumer.seek(tp, 0)
        seen = 0
        while seen < count:
            fetched = await consumer.getmany(tp, timeout_ms=1000, max_records=10_000)
            seen += len(fetched.get(tp, []))
        return time.perf_counter() - start
    finally:
        await consumer.stop()


async def log_append(url: str, events: list[Event], batch: int) -> float:
    async with await KafkaLog.open(url) as log:
        start = time.perf_counter()
        for k in range(0, len(events), batch):
            await log.append(events[k : k + batch])
        return time.perf_counter() - start


async def log_read(url: str, count: int) -> tuple[float, float]:
    async with await KafkaLog.open(url) as log:
        start = time.perf_counter()
        assert len(await log.read_all()) == count
        read = time.perf_counter() - start
    fresh = await KafkaLog.open(url)
    try:
        start = time.perf_counter()
        await fresh.contains(["none"])
        return read, time.perf_counter() - start
    finally:
        await fresh.close()


async def main(events: int, batch: int, repeat: int) -> None:
    data = workload(events)
    lines = [encode(e) for e in data]
    size = sum(map(len, lines)) / len(lines)
    broker = start_broker()
    best: dict[str, float] = {}
    try:
        for r in range(repeat):
            raw_topic, url = f"raw{r}", broker.url(f"log{r}")
            timings = {
                "raw append": await raw_append(broker, raw_topic, lines, batch),
                "KafkaLog append": await log_append(url, data, batch),
                "raw read": await raw_read(broker, raw_topic, events),
            }
            timings["KafkaLog read"], timings["index rebuild"] = await log_read(url, events)
            for name, seconds in timings.items():
                best[name] = min(best.get(name, seconds), seconds)
    finally:
        broker.stop()
    print(f"{events:,} events of {size:,.0f} B on average, batches of {batch}, best of {repeat}")
    for name, seconds in best.items():
        print(f"{name:16s} {events / seconds:>12,.0f} events/s")
    print(f"append ratio {best['raw append'] / best['KafkaLog append']:.2f} (target >= 0.7)")
    print(f"read ratio   {best['raw read'] / best['KafkaLog read']:.2f} (target >= 0.7)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.events, args.batch, args.repeat))
