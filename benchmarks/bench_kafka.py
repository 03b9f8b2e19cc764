"""Append and read rates of the Kafka log against raw aiokafka on the same bytes (tansu).

One tansu broker (memory storage) is started for the run (``tests/streams/tansu.py``).
Events: the first ``--events`` records of the benchmark recording (``benchmarks.run``)
or, run alone, the golden demo log's records repeated with fresh ids.

* append: ``KafkaLog.append`` in batches of ``--batch`` events (encode, id index,
  one record batch per append, acks=all) against a raw ``AIOKafkaProducer`` sending the
  *same records* — the canonical lines, the ``id``/``type`` headers and the timestamps,
  computed before the clock starts — as the same record batches (``create_batch`` /
  ``send_batch``).
* read: ``KafkaLog.read()`` iterated on a fresh handle (its head, its id index, dropping
  duplicates, decoding every event; each event dropped once counted, as a fold drops
  it, since the baseline keeps no parsed value either) against a raw
  ``AIOKafkaConsumer`` (``assign`` + ``seek``, ``getmany``) fetching the same records
  and ``orjson.loads``-ing each value — the least a reader that hands out events must
  do (as the fold benchmark's baseline).
* import append: ``KafkaLog.append_bulk`` with each payload's canonical bytes, which
  ``tide log import`` holds from parsing the line (``streams.recording``): the log then
  builds the record around them instead of serialising the payload again — the path
  where the caller holds the bytes, as the raw producer does. ``tide record`` and
  ``tide run`` take the same path (``append_encoded``, atomic): the recorder hashed each
  payload's bytes for its id (``controller.drive.sources.tap``).
* index rebuild: a fresh handle's first ``contains`` (the id index read from the topic's
  headers), the cost of "rebuilt on start" per event.

Baseline and subject alternate ``--repeat`` times, the cyclic collector paused for
both (as ``controller.cli.common`` pauses it around bulk reads); the rows give the
median of the paired ratios (subject against the baseline run beside it) on the wall
clock, with their range and the same on the CPU (process) clock, since the machines are
shared. Run alone (``--recording``: the first ``--events`` records of a recording, e.g.
the full-scale one ``benchmarks.run`` uses, instead of the golden demo log's)::

    .venv/bin/python -m benchmarks.bench_kafka --events 100000 --repeat 3
    .venv/bin/python -m benchmarks.bench_kafka --recording R.jsonl --events 30000 --repeat 5

Page faults: a batch of 1,000 pod events is ~5 MB, and aiokafka copies it several times
while encoding the produce request. Whether those copies fault fresh pages in (~2-4 per
event, a few µs of system time) depends on glibc's adaptive mmap and trim thresholds,
i.e. on what the process allocated and freed before, so the *raw* side's CPU moves by
~50 % with whatever ran before it. ``--pin-malloc`` fixes both thresholds (glibc's
``mallopt``) for the whole run, so that neither side faults: the ratios then compare
the work each side does.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import ctypes.util
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from benchmarks.common import Context, Result, rate_row, read_lines
from streams.backends.kafka import KafkaLog
from streams.codec import decode, encode
from streams.events import Event
from streams.gcpause import paused_gc
from tests.streams.tansu import Broker, start_broker

GOLDEN = Path(__file__).parents[1] / "tests" / "replay" / "golden" / "demo.jsonl"
TARGET = 0.7
Timing = tuple[float, float]  # (wall, cpu) seconds


def workload(count: int) -> list[Event]:
    base = [decode(line) for line in GOLDEN.read_bytes().splitlines()]
    return [replace(base[i % len(base)], id=f"e{i}") for i in range(count)]


async def _timed(call: Callable[[], Awaitable[Any]]) -> Timing:
    with paused_gc():  # as the commands that append or read in bulk pause it
        wall, cpu = time.perf_counter(), time.process_time()
        await call()
        return time.perf_counter() - wall, time.process_time() - cpu


def _records(events: list[Event]) -> list[tuple[int, bytes, list[tuple[str, bytes]]]]:
    return [
        (
            int(e.at.timestamp() * 1000),
            encode(e),
            [("id", e.id.encode()), ("type", e.type.encode())],
        )
        for e in events
    ]


async def raw_append(broker: Broker, topic: str, events: list[Event], batch: int) -> Timing:
    records = _records(events)
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap,
        acks="all",
        max_batch_size=16 << 20,
        max_request_size=17 << 20,
    )
    await producer.start()

    async def send() -> None:
        for k in range(0, len(records), batch):
            builder = producer.create_batch()
            for timestamp, value, headers in records[k : k + batch]:
                builder.append(timestamp=timestamp, key=None, value=value, headers=headers)
            builder.close()
            await (await producer.send_batch(builder, topic, partition=0))

    try:
        return await _timed(send)
    finally:
        await producer.stop()


async def raw_read(broker: Broker, topic: str, count: int) -> Timing:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        enable_auto_commit=False,
        fetch_max_bytes=50 << 20,
        max_partition_fetch_bytes=17 << 20,
    )
    await consumer.start()
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])

    async def fetch() -> None:
        consumer.seek(tp, 0)
        seen = 0
        while seen < count:
            fetched = await consumer.getmany(tp, timeout_ms=1000, max_records=10_000)
            for record in fetched.get(tp, []):
                orjson.loads(record.value)
                seen += 1

    try:
        return await _timed(fetch)
    finally:
        await consumer.stop()


async def log_append(url: str, events: list[Event], batch: int) -> Timing:
    async with await KafkaLog.open(url) as log:

        async def append() -> None:
            for k in range(0, len(events), batch):
                await log.append(events[k : k + batch])

        return await _timed(append)


async def log_import(url: str, events: list[Event], batch: int) -> Timing:
    payloads = [orjson.dumps(e.data, option=orjson.OPT_SORT_KEYS) for e in events]
    log = await KafkaLog.open(url)
    try:

        async def append() -> None:
            for k in range(0, len(events), batch):
                await log.append_bulk(events[k : k + batch], payloads[k : k + batch])

        return await _timed(append)
    finally:
        await log.close()


async def log_read(url: str, count: int) -> tuple[Timing, Timing]:
    async with await KafkaLog.open(url) as log:

        async def read() -> None:
            seen = 0
            async for _ in log.read():  # consumed one by one, as a fold does
                seen += 1
            assert seen == count

        read_time = await _timed(read)
    fresh = await KafkaLog.open(url)
    try:
        return read_time, await _timed(lambda: fresh.contains(["none"]))
    finally:
        await fresh.close()


async def measure(events: list[Event], batch: int, repeat: int) -> dict[str, list[Timing]]:
    """Every (wall, cpu) of each figure over ``repeat`` interleaved runs, in run order."""
    broker = start_broker()
    runs: dict[str, list[Timing]] = {}
    try:
        for r in range(repeat):
            raw_topic, url = f"raw{r}", broker.url(f"log{r}")
            timings = {
                "raw append": await raw_append(broker, raw_topic, events, batch),
                "KafkaLog append": await log_append(url, events, batch),
                "KafkaLog import": await log_import(broker.url(f"import{r}"), events, batch),
                "raw read": await raw_read(broker, raw_topic, len(events)),
            }
            timings["KafkaLog read"], timings["index rebuild"] = await log_read(url, len(events))
            for name, timing in timings.items():
                runs.setdefault(name, []).append(timing)
    finally:
        broker.stop()
    return runs


def ratios(runs: dict[str, list[Timing]], subject: str, raw: str, clock: int) -> list[float]:
    """Per run, the subject's rate over the raw rate beside it (0: wall, 1: CPU)."""
    return sorted(
        base[clock] / mine[clock] for mine, base in zip(runs[subject], runs[raw], strict=True)
    )


def summary(values: list[float]) -> str:
    """``median [low-high]`` of sorted ``values``."""
    return f"{statistics.median(values):.2f} [{values[0]:.2f}-{values[-1]:.2f}]"


ROWS = (
    ("append", "KafkaLog append", "raw append", "AIOKafkaProducer.send_batch"),
    ("import append", "KafkaLog import", "raw append", "AIOKafkaProducer.send_batch"),
    ("read", "KafkaLog read", "raw read", "getmany + orjson.loads"),
)


def run(ctx: Context) -> list[Result]:
    """The append and read rows of ``benchmarks.run`` (the recording's first events)."""
    count = 6_000 if ctx.quick else 30_000
    events = [decode(line) for line in read_lines(ctx.recording, count)]
    runs = asyncio.run(measure(events, 1_000, ctx.repeat))
    size = sum(len(encode(e)) for e in events) / len(events)
    rows = []
    for what, subject, raw, baseline in ROWS:
        wall, cpu = ratios(runs, subject, raw, 0), ratios(runs, subject, raw, 1)
        mine = statistics.median(t[0] for t in runs[subject])
        rows.append(
            rate_row(
                "kafka",
                f"KafkaLog {what}, {count:,} events of {size:,.0f} B, batches of 1,000",
                count,
                mine,
                count,
                mine * statistics.median(wall),  # so that the row's ratio is the median one
                f"raw aiokafka {baseline}, same records",
                TARGET,
                notes=f"wall ratio {summary(wall)}, CPU ratio {summary(cpu)}, "
                f"{len(wall)} paired runs",
            )
        )
    return rows


def pin_malloc() -> None:
    """Fix glibc's mmap and trim thresholds (64 MiB, 1 GiB) for this process: batch-sized
    buffers then come from the heap and stay mapped (see the module docstring)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    m_trim_threshold, m_mmap_threshold = -1, -3
    if not (libc.mallopt(m_mmap_threshold, 64 << 20) and libc.mallopt(m_trim_threshold, 1 << 30)):
        raise SystemExit("--pin-malloc: mallopt refused (not glibc?)")


async def main(events: int, batch: int, repeat: int, recording: Path | None = None) -> None:
    if recording is None:
        data = workload(events)
    else:
        data = [decode(line) for line in read_lines(recording, events)]
        events = len(data)
    size = sum(len(encode(e)) for e in data) / len(data)
    runs = await measure(data, batch, repeat)
    print(f"{events:,} events of {size:,.0f} B on average, batches of {batch}, {repeat} runs")
    for name, timings in runs.items():
        seconds = statistics.median(t[0] for t in timings)
        per_event = statistics.median(t[1] for t in timings) / events * 1e6
        print(f"{name:16s} {events / seconds:>12,.0f} events/s   CPU {per_event:6.1f} µs/event")
    for what, subject, raw, _ in ROWS:
        wall, cpu = ratios(runs, subject, raw, 0), ratios(runs, subject, raw, 1)
        print(f"{what} ratio {summary(wall)} wall, {summary(cpu)} CPU (target >= {TARGET})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--recording", type=Path, help="read the events from this recording")
    parser.add_argument(
        "--pin-malloc", action="store_true", help="fix glibc's mmap/trim thresholds (no faults)"
    )
    args = parser.parse_args()
    if args.pin_malloc:
        pin_malloc()
    asyncio.run(main(args.events, args.batch, args.repeat, args.recording))
