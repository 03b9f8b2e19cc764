"""Reading one partition of a Kafka log: pages of records, from our own Fetch requests.

No consumer (and no consumer group): a read sends Fetch requests where it wants to read
(``streams.backends.kafka_fetch``) and reads the record batches of each answer itself
(``streams.backends.kafka_batches``). A bounded read never waits at the head: a fetch
asks the broker to wait 1 ms at most unless an earlier answer's high watermark says
there are records past the position (then the broker answers as soon as it has read
them), and the read ends once it reaches its bound or the partition's end. Only a
subscription, which reads on forever, long-polls at the head (:data:`READ_WAIT_MS`), on
a connection of its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from aiokafka import AIOKafkaClient

from streams.backends import kafka_batches
from streams.backends.kafka_batches import Raw
from streams.backends.kafka_client import ClientOptions, guard
from streams.backends.kafka_fetch import NO_WAIT_MS, Fetcher
from streams.log import BackendUnavailableError, LogError

#: records a lookup groups into one range (``KafkaLog.records``)
FETCH_RECORDS = 10_000
#: how long a subscription's fetch at the head waits for new records
READ_WAIT_MS = 500
#: how long a fetch below the end lets the broker take to read the records there (it
#: answers as soon as it has them)
DATA_WAIT_MS = 500
#: answers in a row that move a read no further before it gives up
STUCK = 50


async def records(
    fetcher: Fetcher,
    tp: Any,
    start: int,
    stop_at: int | None,
    *,
    wait_ms: int = NO_WAIT_MS,
) -> AsyncIterator[list[Raw]]:
    """The records of ``tp`` from ``start`` below ``stop_at``, a fetch answer at a time;
    ``stop_at`` None: forever (a page may then be empty: nothing came yet), else the read
    ends at ``stop_at`` or at the end of the partition, whichever comes first.

    Raises:
        LogError: a record batch is corrupt or larger than the fetch size.
        BackendUnavailableError: the broker is gone or its answers move the read no further.
    """
    position, stuck, high = start, 0, -1
    while stop_at is None or position < stop_at:
        # below the end the records are there: the broker answers once it has read them
        # (which takes longer than 1 ms on S3 storage), so only a fetch at the end is short
        wait = DATA_WAIT_MS if position < high else wait_ms
        answer = await fetcher.fetch(tp, position, wait_ms=wait)
        high = max(high, answer.high)
        if answer.start > position:  # deleted (retention): the log starts later now
            position = answer.start
            continue
        page, after = kafka_batches.records(answer.data, position, stop_at)
        if page or stop_at is None:
            yield page
        if after > position:
            position, stuck = after, 0
            continue
        if answer.data:
            raise LogError(
                f"read {tp.topic} at {position}: a record batch larger than the fetch size "
                f"({fetcher.max_bytes} bytes)"
            )
        if stop_at is not None and 0 <= answer.high <= position:
            return  # the end of the partition
        stuck += 1
        if stop_at is not None and stuck >= STUCK:
            raise BackendUnavailableError(f"read {tp.topic} at {position}: no records come")


async def subscription(
    options: ClientOptions, fetcher: Fetcher, tp: Any, start: int
) -> AsyncIterator[list[Raw]]:
    """:func:`records` from ``start`` on, forever, long-polling at the head on a client of
    its own (a long poll holds its connection)."""
    client = AIOKafkaClient(**options)
    try:
        await guard(client.bootstrap(), f"read {tp.topic}")
        own = Fetcher(client, max_bytes=fetcher.max_bytes)
        async for page in records(own, tp, start, None, wait_ms=READ_WAIT_MS):
            yield page
    finally:
        await client.close()
