"""The streaming log: one single-partition Kafka topic per log, through aiokafka.

Why it looks the way it does (the broker in CI is ``tansu``; see ``tests/streams/tansu.py``;
the record format is ``streams.backends.kafka_codec``, the clients and the URL's security
settings ``streams.backends.kafka_client``, reading ``streams.backends.kafka_reader``,
``kafka_fetch`` and ``kafka_batches``):

* **One partition**, so the order is total; the topic and its companion
  ``<topic>.quarantine`` are created when missing. The offset is the Kafka offset
  (strictly increasing, not necessarily dense).
* **Atomic batches without transactions.** aiokafka's idempotent and transactional
  producers cannot start against tansu (aiokafka speaks only InitProducerId v0), so an
  append is produced as *one record batch* to the one partition, which the broker writes
  all-or-nothing. Its size is bounded by ``max_batch_bytes`` (URL option, default 16
  MiB, at most the broker's ``message.max.bytes``): ``append`` refuses a larger batch with
  :class:`BatchTooLargeError` before sending anything (``append_encoded`` too); only the
  bulk path ``append_bulk`` (``tide log import``) splits it into several atomic record
  batches, because a re-import skips what an interrupted one already wrote.
* **Idempotent by event id.** The log keeps an id index (id → first offset), rebuilt
  from the topic's headers as far as it is needed and extended by every append and read
  of this process. The first append of a handle catches the index up to the head and
  skips known ids. After that, while this process is the only writer, the index *is* the
  topic: an append skips known ids without asking the broker, and the produce answer
  verifies it (the batch's base offset is where the index ends). When it is not, another
  writer got in between: the index catches up to the batch, the batch's records whose id
  was already there are not reported as added (readers drop them), and from then on
  every append catches up first. Two writers racing on one id (or a produce retried
  after a lost ack) can thus put it on the topic twice: readers drop every record whose
  id appeared at a lower offset, so each reader sees each id once, at its first offset.
* **No consumers** (see ``kafka_reader``): reads send their own Fetch requests, on a
  connection of the producer's client, and never wait at the head; ``head()`` is the
  high watermark of one fetch (``kafka_fetch.end_offset``).
* **Conflicts are looked up, not indexed.** ``records(ids)`` reads the stored records
  where the id index points (``streams.conflicts`` compares their content hashes), so
  telling a conflict from a duplicate costs the append path nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson
from aiokafka import TopicPartition
from aiokafka.client import ConnectionGroup
from aiokafka.errors import KafkaError

from streams.backends import kafka_client as client
from streams.backends import kafka_index, sqlite_kafka_index
from streams.backends.kafka_client import OVERHEAD, BatchTooLargeError, ClientOptions
from streams.backends.kafka_codec import (
    Record,
    decode_value,
    encode_batches,
    producer_batch,
    record_id,
)
from streams.backends.kafka_fetch import Fetcher, end_offset
from streams.backends.kafka_reader import FETCH_RECORDS, records, subscription
from streams.backends.kafka_url import KafkaTarget, parse_kafka_url, redact
from streams.codec import check_appendable
from streams.events import Event, build_event
from streams.log import EventLog, LogError, NotALogError, Quarantined

__all__ = ["BatchTooLargeError", "KafkaLog", "open_url"]


class KafkaLog(EventLog):
    """An :class:`~streams.log.EventLog` on one Kafka partition (see the module docstring)."""

    def __init__(self, target: KafkaTarget, producer: Any, options: ClientOptions) -> None:
        self.target = target
        self.url = target.url
        self._options = options
        self._tp = TopicPartition(target.topic, 0)
        self._qtp = TopicPartition(target.quarantine_topic, 0)
        self._producer = producer
        #: a consumer for ListOffsets, started when first needed (never on tansu, whose
        #: fetch past the end answers the head: ``kafka_fetch.end_offset``)
        self._control: Any | None = None
        #: reads of our own, on a connection of the producer's client that the producer
        #: never uses (it has no transaction coordinator)
        self._fetcher = Fetcher(
            producer.client,
            max_bytes=max(target.max_batch_bytes + OVERHEAD, 4 * 1024 * 1024),
            group=ConnectionGroup.COORDINATION,
        )
        #: held while the id index is extended
        self._index_lock = asyncio.Lock()
        self._append_lock = asyncio.Lock()
        self._quarantine_lock = asyncio.Lock()
        #: id -> first offset, for every record below ``_indexed``
        self._ids: dict[str, int] = {}
        self._indexed = 0
        #: (base offset, end) of the last record batch this handle appended
        self._last_batch = (-1, -1)
        #: whether the index is known to reach the end of the topic (only writer so far)
        self._at_end = False
        #: whether another writer was seen: every append catches up first
        self._shared = False
        #: one warning line each, on stderr (a subject index ignored or left behind)
        self._warn = kafka_index.once(kafka_index.stderr_line)
        #: the subject index this writer extends (``kafka_index``), None for a reader
        self._subjects: kafka_index.SubjectIndexer | None = None
        #: the head :meth:`indexed_about` reads up to (found by its first call)
        self._about_head: int | None = None

    @classmethod
    async def open(cls, url: str, *, read_only: bool = False) -> KafkaLog:
        """Connect to the topic ``url`` names, creating it (and its quarantine) if missing;
        with ``read_only`` (the reading commands) creating nothing: a missing topic is a
        :class:`~streams.log.NotALogError`.

        Raises:
            ValueError: the URL is malformed, or its password or TLS files cannot be read
                (a one-line reason that never shows a secret).
            BackendUnavailableError: the broker cannot be reached.
            LogError: the topic exists with more than one partition, or the broker refused.
        """
        target = parse_kafka_url(url)
        options = client.client_options(target)
        clients: list[Any] = []
        try:
            if not read_only:
                await client.ensure_topics(target, options)
            elif missing := await client.missing_topics(target, options):
                raise NotALogError(
                    f"{redact(url)}: no such log (the broker has no topic {', '.join(missing)})"
                )
            producer = client.producer(target, options)
            clients.append(producer)
            await producer.start()
            partitions = await producer.partitions_for(target.topic)
        except KafkaError as exc:
            await client.stop(clients)
            raise client.wrap(exc, f"cannot open the Kafka log {redact(url)}") from exc
        if partitions != {0}:
            await client.stop(clients)
            raise LogError(
                f"topic {target.topic!r} has partitions {sorted(partitions or ())}: "
                "a log needs exactly one"
            )
        log = cls(target, producer, options)
        if not read_only:
            log._subjects = kafka_index.SubjectIndexer.open(target, warn=log._warn)
        return log

    async def close(self) -> None:
        if self._subjects is not None:
            self._subjects.close()
        await client.stop([self._producer, *([self._control] if self._control else [])])

    # -- appending ---------------------------------------------------------------------

    async def append(self, events: Sequence[Event]) -> list[Event]:
        return await self._append(events, (), split=False)

    async def append_encoded(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """:meth:`append`, reusing ``payloads[i]`` (``events[i].data`` serialised
        canonically, or None) in the record value (``tide record`` and ``tide run``: the
        recorder serialised each payload to hash its id)."""
        return await self._append(events, payloads, split=False)

    async def append_bulk(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        """The bulk append of ``tide log import``: :meth:`append_encoded`, and a batch
        above ``max_batch_bytes`` goes out as several atomic record batches, in order."""
        return await self._append(events, payloads, split=True)

    async def _append(
        self, events: Sequence[Event], payloads: Sequence[bytes | None], *, split: bool
    ) -> list[Event]:
        ids = [event.id for event in events]
        unique = set(ids)
        if len(unique) < len(ids):  # an id twice in one batch: its first record is kept
            check_appendable(events)
            first: dict[str, int] = {}
            for k, id_ in enumerate(ids):
                first.setdefault(id_, k)
            events, payloads, ids = _pick(events, payloads, list(first.values()))
        if not events:
            return []
        batches: list[tuple[bytes, int]] | None = None
        try:  # built before taking the lock; checks every event
            batches = self._encode(events, payloads, split=split)
        except BatchTooLargeError:
            if split:
                raise
            check_appendable(events)  # it may fit once known ids are left out
        async with self._append_lock:
            if self._shared or not self._at_end:
                await self._index_to(None)
            index = self._ids
            if not index.keys().isdisjoint(unique):  # iterates the smaller of the two
                keep = [k for k, id_ in enumerate(ids) if id_ not in index]
                if not keep:
                    return []
                events, payloads, ids = _pick(events, payloads, keep)
                batches = None
            if batches is None:
                batches = self._encode(events, payloads, split=split)
            added: list[Event] = []
            spans: list[tuple[int, int]] = []
            done = 0
            self._at_end = False  # until the produce answers: a lost ack leaves it unknown
            for record_batch, count in batches:
                batch = producer_batch(self._producer.create_batch, record_batch, count)
                base = await self._send(batch, self.target.topic)
                self._last_batch = (base, base + count)
                spans.append(self._last_batch)
                sent, sent_ids = events[done : done + count], ids[done : done + count]
                done += count
                if base == self._indexed:  # the only writer: every record is the first
                    self._indexed = base + count
                    index.update(zip(sent_ids, range(base, base + count), strict=True))
                    added += placed(sent, base)
                    continue
                self._shared = True  # another writer got in between
                await self._index_to(base)
                added += [
                    event.with_offset(base + i)
                    for i, event in enumerate(sent)
                    if self._place(event.id, base + i)
                ]
            self._at_end = True
            if self._subjects is not None:
                await self._subjects.extend(added, spans, scan=self._first_records)
        return added

    async def _first_records(self, start: int, stop: int) -> list[Event]:
        """The first records of their ids in ``[start, stop)``, read back from the topic
        (the id index reaches ``stop``)."""
        await self._index_to(stop)
        pages = records(self._fetcher, self._tp, start, stop)
        return await kafka_index.first_records(pages, self.target.topic, self._first)

    def _encode(
        self, events: Sequence[Event], payloads: Sequence[bytes | None], *, split: bool
    ) -> list[tuple[bytes, int]]:
        return encode_batches(events, payloads, max_bytes=self.target.max_batch_bytes, split=split)

    async def _send(self, batch: Any, topic: str) -> int:
        """Produce one record batch to partition 0; return its base offset."""

        async def send() -> int:
            future = await self._producer.send_batch(batch, topic, partition=0)
            return int((await future).offset)

        return await client.guard(send(), f"append to {topic}")

    # -- reading -----------------------------------------------------------------------

    async def head(self) -> int:
        return await self._end(self._tp)

    async def read(self, start: int = 0, stop: int | None = None) -> AsyncIterator[Event]:
        start = max(start, 0)
        if stop is not None and start >= stop:
            return
        head = await self.head()  # one fetch past the end: no wait
        stop = head if stop is None else min(stop, head)
        if start >= stop:
            return
        topic, first = self.target.topic, self._first
        await self._index_to(start)
        async for page in records(self._fetcher, self._tp, start, stop):
            for record in page:
                if first(record):
                    yield decode_value(topic, record)

    async def subscribe(self, start: int = 0) -> AsyncIterator[Event]:
        start = max(start, 0)
        seek = min(start, await self.head())
        await self._index_to(seek)
        topic, first = self.target.topic, self._first
        async for page in subscription(self._options, self._fetcher, self._tp, seek):
            for record in page:
                # every record extends the index, even below start
                if first(record) and record.offset >= start:
                    yield decode_value(topic, record)

    async def indexed_about(self, subjects: Sequence[str]) -> AsyncIterator[list[Event]] | None:
        """The records filed under any of ``subjects`` (``streams.subjects``), in offset
        order, a page at a time, through the local subject index of the ``checkpoints=``
        file (``streams.backends.kafka_index``); its tail beyond the index is scanned.
        None when there is no usable index (a corrupt or foreign one: one warning line):
        scan the topic instead, for the same answer. Reads only. Every such read of one
        handle answers up to the head its first one found (a node's records and then its
        zones', from one snapshot)."""
        path = self.target.checkpoints
        found = None
        if path is not None:
            found = sqlite_kafka_index.find(path, self.target.topic, subjects, warn=self._warn)
        if found is None:
            return None
        if self._about_head is None:  # one head for every such read of this handle
            self._about_head = await self.head()
        return kafka_index.pages_about(
            offsets=found[0],
            upto=found[1],
            head=self._about_head,
            subjects=subjects,
            fetch=self._at_offsets,
            topic=self.target.topic,
            tail=self.read,
        )

    async def _at_offsets(self, offsets: Sequence[int]) -> list[Record]:
        return await kafka_index.fetch_offsets(self._fetcher, self._tp, offsets)

    async def contains(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        await self._index_to(None)
        return {id_ for id_ in ids if id_ in self._ids}

    async def records(self, ids: Sequence[str]) -> dict[str, Event]:
        """The stored records with these ids, by id (:class:`streams.conflicts.RecordLookup`):
        each at its first offset, read from the topic where the id index points."""
        if not ids:
            return {}
        await self._index_to(None)
        wanted = {self._ids[id_]: id_ for id_ in ids if id_ in self._ids}
        topic = self.target.topic
        found: dict[str, Event] = {}
        for record in await kafka_index.fetch_offsets(self._fetcher, self._tp, sorted(wanted)):
            found[wanted[record.offset]] = decode_value(topic, record)
        return found

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
                    {"source": item.source, "line": item.line, "reason": item.reason}
                    | {"raw": item.raw}
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
        end = await self._end(self._qtp)
        kept: dict[Quarantined, None] = {}
        if end > 0:
            async for page in records(self._fetcher, self._qtp, 0, end):
                for record in page:
                    kept.setdefault(Quarantined(**orjson.loads(record.value or b"null")), None)
        return list(kept)

    # -- the id index --------------------------------------------------------------------

    def _place(self, id_: str, offset: int) -> bool:
        """Whether ``offset`` is the first on the log with ``id_`` (indexing it)."""
        if offset >= self._indexed:
            self._indexed = offset + 1
            return self._ids.setdefault(id_, offset) == offset
        return self._ids.get(id_) == offset

    def _first(self, record: Record) -> bool:
        """Whether ``record`` is the first on the log with its id (and index it)."""
        return self._place(record_id(record), record.offset)

    async def _index_to(self, upto: int | None) -> None:
        """Index every record below ``upto`` (None: the head)."""
        if upto is not None and upto <= self._indexed:
            return
        async with self._index_lock:
            end = await self._end(self._tp)
            upto = end if upto is None else min(upto, end)
            if upto <= self._indexed:
                return
            first = self._first
            async for page in records(self._fetcher, self._tp, self._indexed, upto):
                for record in page:
                    first(record)
            self._indexed = max(self._indexed, upto)

    async def _end(self, tp: Any) -> int:
        """The end of ``tp``: one past its last record (``kafka_fetch.end_offset``)."""

        async def listed() -> int:
            if self._control is None:
                control = client.consumer(self.target, self._options)
                await client.guard(control.start(), f"head of {tp.topic}")
                self._control = control
            ends = await client.guard(self._control.end_offsets([tp]), f"head of {tp.topic}")
            return int(ends[tp])

        return await end_offset(self._fetcher, tp, listed)


def _pick(
    events: Sequence[Event], payloads: Sequence[bytes | None], keep: list[int]
) -> tuple[list[Event], list[bytes | None], list[str]]:
    """The events at the indices ``keep`` (in order), their payloads and their ids."""
    held = len(payloads)
    picked = [events[k] for k in keep]
    return picked, [payloads[k] if k < held else None for k in keep], [e.id for e in picked]


def placed(events: Sequence[Event], base: int) -> list[Event]:
    """``events`` at offsets ``base``, ``base + 1``, ... (new Events: the caller's stay
    as they were)."""
    build = build_event
    return [
        build(e.type, e.at, e.id, e.data, e.cause, offset, e.v, e.prev)
        for offset, e in enumerate(events, base)
    ]


def runs(offsets: list[int], *, gap: int = FETCH_RECORDS) -> list[tuple[int, int]]:
    """Sorted ``offsets`` grouped into ``[start, stop)`` ranges, a new one where the next
    offset is more than ``gap`` past the last (one seek each, not one per offset)."""
    ranges: list[tuple[int, int]] = []
    for offset in offsets:
        if ranges and offset - ranges[-1][1] < gap:
            ranges[-1] = (ranges[-1][0], offset + 1)
        else:
            ranges.append((offset, offset + 1))
    return ranges


async def open_url(url: str, *, read_only: bool = False) -> KafkaLog:
    """Open ``kafka://host:port/topic?...`` (see ``streams.backends.kafka_url``);
    ``read_only``: see :meth:`KafkaLog.open`."""
    return await KafkaLog.open(url, read_only=read_only)
