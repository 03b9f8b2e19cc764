"""The streaming log: one single-partition Kafka topic per log, through aiokafka.

Why it looks the way it does (the broker in CI is ``tansu``; see ``tests/streams/tansu.py``):

* **One partition**, so the order is total; the topic and its companion
  ``<topic>.quarantine`` are created when missing. A record's value is the event's
  canonical line (``streams.codec.encode``), its headers carry ``id`` and ``type``, its
  timestamp is the event's ``at``; the offset is the Kafka offset (strictly increasing,
  not necessarily dense).
* **Atomic batches without transactions.** aiokafka's idempotent and transactional
  producers cannot start against tansu (aiokafka speaks only InitProducerId v0), so an
  append is produced as *one record batch* to the one partition, which the broker writes
  all-or-nothing. Its size is bounded by ``max_batch_bytes`` (URL option, default 16
  MiB, at most the broker's ``message.max.bytes``): ``append`` refuses a larger batch with
  :class:`BatchTooLargeError` before sending anything; only the bulk path
  ``append_encoded`` (``tide log import``) splits it into several atomic record batches,
  because a re-import skips what an interrupted one already wrote.
* **Idempotent by event id.** The log keeps an id index (id → first offset), rebuilt
  from the topic's headers as far as it is needed and extended by every append and read
  of this process; an append first catches the index up to the head and skips known ids.
  Two writers racing on one id (or a produce retried after a lost ack) can still put it
  on the topic twice: readers drop every record whose id appeared at a lower offset, so
  each reader sees each id once, at its first offset.
* **No consumer groups.** Every read and subscription has its own consumer with
  ``assign`` + ``seek`` (instant and deterministic; group joins take seconds); one
  long-lived consumer answers ``head()`` (the high watermark) and feeds the index.
* Errors: every aiokafka error becomes a :class:`~streams.log.LogError`,
  :class:`~streams.log.BackendUnavailableError` when aiokafka marks it retriable.

This is the only module that imports aiokafka.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, TypeVar

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError

from streams.backends.kafka_url import KafkaTarget, parse_kafka_url
from streams.codec import DecodeError, check_appendable, decode_record, encode
from streams.events import Event
from streams.log import BackendUnavailableError, EventLog, LogError, Quarantined

#: records one fetch may hand back
FETCH_RECORDS = 10_000
#: how long a subscription's fetch waits on the broker for new records
POLL_MS = 100
#: room above ``max_batch_bytes`` for the request and batch headers
_OVERHEAD = 64 * 1024

T = TypeVar("T")
Record = Any  # aiokafka's ConsumerRecord (aiokafka ships no type information)


class BatchTooLargeError(LogError):
    """An append whose record batch would exceed ``max_batch_bytes``; retrying cannot help."""

    retriable = False


class KafkaLog(EventLog):
    """An :class:`~streams.log.EventLog` on one Kafka partition (see the module docstring)."""

    def __init__(self, target: KafkaTarget, producer: Any, control: Any) -> None:
        self.target = target
        self.url = target.url
        self._tp = TopicPartition(target.topic, 0)
        self._qtp = TopicPartition(target.quarantine_topic, 0)
        self._producer = producer
        self._control = control
        self._control_lock = asyncio.Lock()
        self._append_lock = asyncio.Lock()
        self._quarantine_lock = asyncio.Lock()
        #: id -> first offset, for every record below ``_indexed``
        self._ids: dict[str, int] = {}
        self._indexed = 0
        #: (base offset, end) of the last record batch this handle appended
        self._last_batch = (-1, -1)

    @classmethod
    async def open(cls, url: str) -> KafkaLog:
        """Connect to the topic ``url`` names, creating it (and its quarantine) if missing.

        Raises:
            ValueError: the URL is malformed (a one-line reason).
            BackendUnavailableError: the broker cannot be reached.
            LogError: the topic exists with more than one partition, or the broker refused.
        """
        target = parse_kafka_url(url)
        clients: list[Any] = []
        try:
            await _ensure_topics(target)
            producer = AIOKafkaProducer(
                **_client(target),
                acks="all",
                linger_ms=0,
                max_batch_size=target.max_batch_bytes,
                max_request_size=target.max_batch_bytes + _OVERHEAD,
            )
            clients.append(producer)
            control = _consumer(target)
            clients.append(control)
            for client in clients:
                await client.start()
            partitions = await producer.partitions_for(target.topic)
        except KafkaError as exc:
            await _stop(clients)
            raise _wrap(exc, f"cannot open the Kafka log {url}") from exc
        if partitions != {0}:
            await _stop(clients)
            raise LogError(
                f"topic {target.topic!r} has partitions {sorted(partitions or ())}: "
                "a log needs exactly one"
            )
        control.assign(
            [TopicPartition(target.topic, 0), TopicPartition(target.quarantine_topic, 0)]
        )
        return cls(target, producer, control)

    async def close(self) -> None:
        await _stop([self._producer, self._control])

    # -- appending ---------------------------------------------------------------------

    async def append(self, events: Sequence[Event]) -> list[Event]:
        return await self._append(events, split=False)

    async def append_encoded(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """The bulk append of ``tide log import``: like :meth:`append`, but a batch above
        ``max_batch_bytes`` goes out as several atomic record batches, in order.
        (``payloads`` are not used: the record value is the canonical line.)"""
        del payloads
        return await self._append(events, split=True)

    async def _append(self, events: Sequence[Event], *, split: bool) -> list[Event]:
        check_appendable(events)
        unique: dict[str, Event] = {}
        for event in events:
            unique.setdefault(event.id, event)
        if not unique:
            return []
        lines = {id_: encode(event) for id_, event in unique.items()}  # may raise TypeError
        async with self._append_lock:
            await self._index_to(None)
            fresh = [event for id_, event in unique.items() if id_ not in self._ids]
            if not fresh:
                return []
            batches = self._batches(fresh, lines, split=split)
            added: list[Event] = []
            for batch, chunk in batches:
                base = await self._send(batch, self.target.topic)
                placed = [event.with_offset(base + i) for i, event in enumerate(chunk)]
                self._last_batch = (base, base + len(placed))
                if base == self._indexed:  # nothing from another writer in between
                    for event in placed:
                        self._ids.setdefault(event.id, event.offset)
                    self._indexed = base + len(placed)
                added.extend(placed)
        return added

    def _batches(
        self, events: list[Event], lines: dict[str, bytes], *, split: bool
    ) -> list[tuple[Any, list[Event]]]:
        """The record batches for ``events``: one, or (``split``) as many as needed."""
        batches: list[tuple[Any, list[Event]]] = []
        batch, chunk = self._producer.create_batch(), list[Event]()
        for event in events:
            record = {
                "timestamp": int(event.at.timestamp() * 1000),
                "key": None,
                "value": lines[event.id],
                "headers": [("id", event.id.encode()), ("type", event.type.encode())],
            }
            if batch.append(**record) is None:
                size = len(lines[event.id])
                if not chunk:
                    raise BatchTooLargeError(
                        f"event {event.id} ({size} bytes) does not fit in one record batch "
                        f"(max_batch_bytes={self.target.max_batch_bytes})"
                    )
                if not split:
                    raise BatchTooLargeError(
                        f"a batch of {len(events)} events exceeds max_batch_bytes="
                        f"{self.target.max_batch_bytes} (one batch is one atomic record "
                        "batch; append fewer events at a time)"
                    )
                batch.close()
                batches.append((batch, chunk))
                batch, chunk = self._producer.create_batch(), []
                if batch.append(**record) is None:
                    raise BatchTooLargeError(
                        f"event {event.id} ({size} bytes) does not fit in one record batch "
                        f"(max_batch_bytes={self.target.max_batch_bytes})"
                    )
            chunk.append(event)
        batch.close()
        batches.append((batch, chunk))
        return batches

    async def _send(self, batch: Any, topic: str) -> int:
        """Produce one record batch to partition 0; return its base offset."""

        async def send() -> int:
            future = await self._producer.send_batch(batch, topic, partition=0)
            return int((await future).offset)

        return await _guard(send(), f"append to {topic}")

    # -- reading -----------------------------------------------------------------------

    async def head(self) -> int:
        async with self._control_lock:
            return await self._end(self._tp)

    async def read(self, start: int = 0, stop: int | None = None) -> AsyncIterator[Event]:
        end = await self.head()
        stop = end if stop is None else min(stop, end)
        start = max(start, 0)
        if start >= stop:
            return
        await self._index_to(start)
        async for record in self._records(self._tp, start, stop):
            if self._first(record):
                yield self._decode(record)

    async def subscribe(self, start: int = 0) -> AsyncIterator[Event]:
        start = max(start, 0)
        seek = min(start, await self.head())
        await self._index_to(seek)
        async for record in self._records(self._tp, seek, None):
            first = self._first(record)  # every record extends the index, even below start
            if first and record.offset >= start:
                yield self._decode(record)

    async def contains(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        await self._index_to(None)
        return {id_ for id_ in ids if id_ in self._ids}

    # -- quarantine --------------------------------------------------------------------

    async def set_aside(self, items: Sequence[Quarantined]) -> None:
        if not items:
            return
        async with self._quarantine_lock:
            known = set(await self.quarantine())
            batch, count = self._producer.create_batch(), 0
            for item in items:
                if item in known:
                    continue
                known.add(item)
                value = orjson.dumps(
                    {
                        "source": item.source,
                        "line": item.line,
                        "reason": item.reason,
                        "raw": item.raw,
                    }
                )
                if batch.append(timestamp=None, key=None, value=value, headers=[]) is None:
                    raise BatchTooLargeError(
                        f"the input set aside exceeds max_batch_bytes={self.target.max_batch_bytes}"
                    )
                count += 1
            batch.close()
            if count:
                await self._send(batch, self.target.quarantine_topic)

    async def quarantine(self) -> list[Quarantined]:
        async with self._control_lock:
            end = await self._end(self._qtp)
        kept: dict[Quarantined, None] = {}
        if end > 0:
            async for record in self._records(self._qtp, 0, end):
                item = orjson.loads(record.value)
                kept.setdefault(Quarantined(**item), None)
        return list(kept)

    # -- the id index and the consumers --------------------------------------------------

    def _first(self, record: Record) -> bool:
        """Whether ``record`` is the first on the log with its id (and index it)."""
        offset: int = record.offset
        id_ = _record_id(record)
        if offset >= self._indexed:
            self._indexed = offset + 1
            return self._ids.setdefault(id_, offset) == offset
        return self._ids.get(id_) == offset

    async def _index_to(self, upto: int | None) -> None:
        """Index every record below ``upto`` (None: the head)."""
        if upto is not None and upto <= self._indexed:
            return
        async with self._control_lock:
            end = await self._end(self._tp)
            upto = end if upto is None else min(upto, end)
            if upto <= self._indexed:
                return
            control = self._control
            control.seek(self._tp, self._indexed)
            while self._indexed < upto:
                fetched = await _guard(
                    control.getmany(self._tp, timeout_ms=POLL_MS, max_records=FETCH_RECORDS),
                    f"read {self._tp.topic}",
                )
                records = fetched.get(self._tp, [])
                for record in records:
                    if record.offset >= upto:
                        break
                    self._first(record)
                if not records:
                    position = await _guard(control.position(self._tp), "read position")
                    self._indexed = max(self._indexed, min(position, upto))

    async def _end(self, tp: Any) -> int:
        """The high watermark of ``tp`` (hold ``_control_lock``).

        tansu answers ListOffsets(latest) with the last record batch's *base* offset + 1,
        so the rest of that batch would be cut off; a fetch at that offset - 1 returns the
        whole last batch, whose last record is the true end (on Apache Kafka both agree
        and this costs one fetch).
        """
        control = self._control
        ends = await _guard(control.end_offsets([tp]), f"head of {tp.topic}")
        end = int(ends[tp])
        if end == 0:
            return 0
        if tp == self._tp and end - 1 == self._last_batch[0]:
            return self._last_batch[1]  # our own last batch: its end is known
        control.seek(tp, end - 1)
        deadline = asyncio.get_running_loop().time() + self.target.timeout
        while True:  # an empty answer only means the fetch took longer than POLL_MS
            fetched = await _guard(
                control.getmany(tp, timeout_ms=POLL_MS, max_records=FETCH_RECORDS),
                f"head of {tp.topic}",
            )
            records = fetched.get(tp, [])
            if records:
                return max(end, int(records[-1].offset) + 1)
            if await _guard(control.position(tp), f"head of {tp.topic}") >= end:
                return end  # the record at end - 1 is gone (compacted): nothing after it
            if asyncio.get_running_loop().time() > deadline:
                raise BackendUnavailableError(f"head of {tp.topic}: no answer in time")

    async def _records(self, tp: Any, start: int, stop: int | None) -> AsyncIterator[Record]:
        """The records of ``tp`` from ``start`` (below ``stop``; None: forever)."""
        consumer = _consumer(self.target)
        await _guard(consumer.start(), f"read {tp.topic}")
        try:
            consumer.assign([tp])
            consumer.seek(tp, start)
            while True:
                fetched = await _guard(
                    consumer.getmany(tp, timeout_ms=POLL_MS, max_records=FETCH_RECORDS),
                    f"read {tp.topic}",
                )
                records = fetched.get(tp, [])
                for record in records:
                    if stop is not None and record.offset >= stop:
                        return
                    yield record
                if (
                    stop is not None
                    and not records
                    and await _guard(consumer.position(tp), "read position") >= stop
                ):
                    return
        finally:
            await _stop([consumer])

    def _decode(self, record: Record) -> Event:
        try:
            record_json = orjson.loads(record.value)
            if type(record_json) is not dict:
                raise DecodeError("not a JSON object")
            return decode_record(record_json).with_offset(record.offset)
        except (orjson.JSONDecodeError, DecodeError) as exc:
            raise LogError(
                f"{self.target.topic} offset {record.offset}: not a tide event ({exc})"
            ) from None


async def open_url(url: str) -> KafkaLog:
    """Open ``kafka://host:port/topic?...`` (see ``streams.backends.kafka_url``)."""
    return await KafkaLog.open(url)


def _client(target: KafkaTarget) -> dict[str, Any]:
    return {
        "bootstrap_servers": target.bootstrap.split(","),
        "client_id": target.client_id,
        "request_timeout_ms": int(target.timeout * 1000),
    }


def _consumer(target: KafkaTarget) -> Any:
    fetch = max(target.max_batch_bytes + _OVERHEAD, 4 * 1024 * 1024)
    return AIOKafkaConsumer(
        **_client(target),
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=POLL_MS,
        fetch_max_bytes=max(fetch, 50 * 1024 * 1024),
        max_partition_fetch_bytes=fetch,
    )


async def _ensure_topics(target: KafkaTarget) -> None:
    admin = AIOKafkaAdminClient(**_client(target))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [
            NewTopic(name, 1, target.replication)
            for name in (target.topic, target.quarantine_topic)
            if name not in existing
        ]
        if missing:
            await admin.create_topics(missing)
    finally:
        await admin.close()


def _record_id(record: Record) -> str:
    for key, value in record.headers:
        if key == "id":
            return bytes(value).decode()
    try:  # written by something else: the id is in the value, if anywhere
        value = orjson.loads(record.value)
    except orjson.JSONDecodeError:
        return ""  # decoding the record will fail, naming its offset
    return str(value.get("id", "")) if isinstance(value, dict) else ""


async def _guard(call: Awaitable[T], what: str) -> T:
    try:
        return await call
    except KafkaError as exc:
        raise _wrap(exc, what) from exc


async def _stop(clients: list[Any]) -> None:
    for client in clients:
        with contextlib.suppress(KafkaError):  # already gone: nothing left to release
            await client.stop()


def _wrap(exc: KafkaError, what: str) -> LogError:
    message = f"{what}: {exc}"
    if getattr(exc, "retriable", False) or "Connection" in type(exc).__name__:
        return BackendUnavailableError(message)
    return LogError(message)
