"""Reading one partition of a Kafka log: record streams and the true end of the partition.

Every read and subscription gets its own consumer with ``assign`` + ``seek`` (no
consumer group: instant and deterministic; group joins take seconds). :func:`end_offset`
finds where the partition ends, working around a broker that answers the end-offset
query with the start of its last record batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from streams.backends.kafka_client import POLL_MS, ClientOptions, consumer, guard, stop
from streams.backends.kafka_url import KafkaTarget
from streams.log import BackendUnavailableError

#: records one fetch may hand back
FETCH_RECORDS = 10_000
#: how long one wait for a page may take (an empty page only means nothing came yet)
READ_WAIT_MS = 1_000

Record = Any  # aiokafka's ConsumerRecord


async def records(
    target: KafkaTarget,
    options: ClientOptions,
    tp: Any,
    start: int,
    stop_at: int | None,
    *,
    until: asyncio.Future[int] | None = None,
) -> AsyncIterator[list[Record]]:
    """The records of ``tp`` from ``start`` (below ``stop_at``; None: forever), in the
    pages the broker returns them (a page may be empty while waiting for new records).

    ``until``, when given, is the end of the partition still being found out (its
    :func:`end_offset`, run beside the first fetches so that a read does not wait for
    it): the bound is ``min(stop_at, until)`` once it is known. A page fetched before
    then is handed out whole: each of its records was on the partition when fetched.
    """
    reader = consumer(target, options)
    await guard(reader.start(), f"read {tp.topic}")
    try:
        reader.assign([tp])
        reader.seek(tp, start)
        while True:
            # while the end is being found out, a short wait: an empty page then waits
            # for the end instead of for records that may never come
            wait = POLL_MS if until is not None else READ_WAIT_MS
            fetched = await guard(
                reader.getmany(tp, timeout_ms=wait, max_records=FETCH_RECORDS),
                f"read {tp.topic}",
            )
            page = fetched.get(tp, [])
            if until is not None and (until.done() or not page):
                end = await until  # an empty page: nothing more to hand out before it
                stop_at = end if stop_at is None else min(stop_at, end)
                until = None
            if stop_at is not None and page and page[-1].offset >= stop_at - 1:
                # the last record wanted is here: no fetch that would wait for more
                yield [record for record in page if record.offset < stop_at]
                return
            yield page
            if (
                until is None
                and stop_at is not None
                and not page
                and await guard(reader.position(tp), "read position") >= stop_at
            ):
                return
    finally:
        await stop([reader])


async def end_offset(control: Any, tp: Any, *, known: tuple[int, int], timeout: float) -> int:
    """The end of ``tp``: one past its last record (hold the lock of ``control``).

    tansu answers ListOffsets(latest) with the last record batch's *base* offset + 1, so
    the rest of that batch would be cut off. ``known`` is ``(base, end)`` of a record
    batch this process wrote: when the answer is its base + 1, its end is the true end.
    Otherwise a fetch at the answer - 1 returns the whole last batch, whose last record
    is the true end (on Apache Kafka both agree and this costs one fetch).
    """
    end = await listed_end(control, tp)
    if end == 0:
        return 0
    if end - 1 == known[0]:
        return known[1]
    control.seek(tp, end - 1)
    deadline = asyncio.get_running_loop().time() + timeout
    while True:  # an empty answer only means the fetch took longer than POLL_MS
        fetched = await guard(
            control.getmany(tp, timeout_ms=POLL_MS, max_records=FETCH_RECORDS),
            f"head of {tp.topic}",
        )
        page = fetched.get(tp, [])
        if page:
            return max(end, int(page[-1].offset) + 1)
        if await guard(control.position(tp), f"head of {tp.topic}") >= end:
            return end  # the record at end - 1 is gone (compacted): nothing after it
        if asyncio.get_running_loop().time() > deadline:
            raise BackendUnavailableError(f"head of {tp.topic}: no answer in time")


async def listed_end(control: Any, tp: Any) -> int:
    """The broker's answer to ListOffsets(latest) for ``tp``: the end on Apache Kafka,
    one past the last record batch's *base* on tansu (see :func:`end_offset`); either
    way, a record at this - 1 exists unless it was deleted."""
    ends = await guard(control.end_offsets([tp]), f"head of {tp.topic}")
    return int(ends[tp])
