"""How an event becomes a Kafka record and a record becomes an event again.

A record's value is the event's canonical line (the bytes :func:`streams.codec.encode`
gives), so every field of the record round-trips however the record grows; its headers
carry ``id`` and ``type`` (the id index is rebuilt from them without decoding values);
its timestamp is the event's ``at``, so the broker's time-based retention follows the
cluster's time.

The append path is the hot one (measured in ``benchmarks/bench_kafka.py``):

* one pass over the batch (:func:`encode_batches`) checks each event, builds its
  value around the payload's canonical bytes (:func:`record_value`: when the caller
  already holds them -- ``tide log import`` computed them for content ids, the recorder
  for observation ids -- the payload is not serialised again; the envelope's time text,
  timestamp and type parts are computed once per distinct time and type) and puts the
  record straight into aiokafka's record-batch builder, skipping the producer's
  per-record wrapper; no value outlives its record's copy into the batch;
* a decoded event is built once with its offset (no second Event to set it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import chain, repeat
from typing import Any

import orjson

from streams.backends.kafka_client import BatchTooLargeError
from streams.codec import DecodeError, check_appendable, decode_record
from streams.events import Event, format_time
from streams.log import LogError

Record = Any  # aiokafka's ConsumerRecord (aiokafka ships no type information)

#: sets an Event's offset slot on an Event nobody else holds yet (a freshly decoded one)
_set_offset = vars(Event)["offset"].__set__


def record_value(event: Event, payload: bytes | None = None) -> bytes:
    """The record value of ``event``: its canonical line (:func:`streams.codec.encode`).

    ``payload`` is ``event.data`` already serialised canonically (sorted keys), or None
    (then it is serialised here). The line is put together around it: a canonical line
    is a JSON object with sorted keys (``at``, ``cause``, ``data``, ``id``, ``prev``,
    ``type``, ``v``) and no spaces, so its bytes are the fields' own serialisations
    between fixed keys; ``tests/streams/test_kafka_codec.py`` holds it to ``encode``.

    Raises:
        ValueError: ``event`` is not appendable (:func:`streams.codec.check_appendable`).
    """
    if payload is None:
        payload = orjson.dumps(event.data, option=_SORTED)
    head = (_STAMPS.get(event.at) or _stamp(event))[0]
    tail = (_KINDS.get(event.type) or _kind(event))[0]
    if event.cause is None and event.prev is None and event.v == 1:  # the usual record
        return b"".join((head, payload, _ID, orjson.dumps(event.id), tail))
    return _unusual_value(event, payload, head, tail)


def _unusual_value(event: Event, payload: bytes, head: bytes, tail: bytes) -> bytes:
    """:func:`record_value` of a record with a cause, a link or another version."""
    parts = [head[:-8]]  # '{"at":"…"', without ',"data":'
    if event.cause is not None:
        parts += (b',"cause":', orjson.dumps(event.cause, option=_SORTED))
    parts += (b',"data":', payload, _ID, orjson.dumps(event.id, option=_SORTED))
    if event.prev is not None:
        parts += (b',"prev":', orjson.dumps(event.prev, option=_SORTED))
    parts.append(tail[:-1])  # ',"type":"…"'
    if event.v != 1:
        parts += (b',"v":', orjson.dumps(event.v, option=_SORTED))
    parts.append(b"}")
    return b"".join(parts)


def record_timestamp(event: Event) -> int:
    """The record's timestamp: ``event.at`` in milliseconds since the epoch."""
    return (_STAMPS.get(event.at) or _stamp(event))[1]


def _stamp(event: Event) -> tuple[bytes, int]:
    """``'{"at":"<at>","data":'`` and the timestamp in ms of ``event.at``, computed once
    per time (checking it, as :func:`streams.codec.check_appendable` does, before it is
    kept: a time found in ``_STAMPS`` is known to have a zone).

    Formatting a time and taking its timestamp cost as much as copying a 5 KB payload,
    and a batch's records share few times (a relist or a metrics poll is stamped at
    once; a recording's first 30,000 records carry 7). Equal aware datetimes are the
    same instant, so they have the same text and timestamp whatever their zone (and a
    naive one equals none of them).
    """
    check_appendable((event,))
    at = event.at
    if len(_STAMPS) >= _STAMPS_MAX:
        _STAMPS.clear()
    head = b'{"at":' + orjson.dumps(format_time(at)) + b',"data":'
    known = _STAMPS[at] = (head, int(at.timestamp() * 1000))
    return known


def _kind(event: Event) -> tuple[bytes, tuple[str, bytes]]:
    """``',"type":"<type>"}'`` and the ``type`` header of ``event.type``, once per type
    (checking it first: a type found in ``_KINDS`` is a known one)."""
    check_appendable((event,))
    type_ = event.type
    kind = _KINDS[type_] = (b',"type":' + orjson.dumps(type_) + b"}", ("type", type_.encode()))
    return kind


_SORTED = orjson.OPT_SORT_KEYS
_ID = b',"id":'
_STAMPS: dict[datetime, tuple[bytes, int]] = {}
_STAMPS_MAX = 4096
#: per event type (only the known ones get in): the value's tail and the ``type`` header
_KINDS: dict[str, tuple[bytes, tuple[str, bytes]]] = {}


def encode_batches(
    new_batch: Callable[[], Any],
    events: Sequence[Event],
    payloads: Sequence[bytes | None],
    *,
    max_bytes: int,
    split: bool,
) -> list[tuple[Any, int]]:
    """Record batches holding ``events`` in order, ``(batch, count)``: each record's
    value (:func:`record_value`, around ``payloads[i]`` when given and not None), its
    ``id`` and ``type`` headers and its timestamp, in one pass that checks each event
    as :func:`streams.codec.check_appendable` does. One batch, or with ``split`` as
    many as ``max_bytes`` needs.

    Each value goes into aiokafka's record-batch builder as soon as it is made, so the
    next one reuses its memory; the producer's per-record wrapper is skipped (its
    record count is set once at the end, which is all it keeps besides the builder:
    aiokafka 0.11-0.14).

    Raises:
        ValueError: an event is not appendable (nothing is built).
        BatchTooLargeError: one event does not fit in a batch, or (without ``split``) the
            events do not fit in one.
    """
    batches: list[tuple[Any, int]] = []
    batch = new_batch()
    append, count = batch._builder.append, 0  # aiokafka's DefaultRecordBatchBuilder
    stamps, kinds, join, dumps = _STAMPS.get, _KINDS.get, b"".join, orjson.dumps
    for event, payload in zip(events, chain(payloads, repeat(None)), strict=False):
        stamp = stamps(event.at) or _stamp(event)
        kind = kinds(event.type) or _kind(event)
        if payload is None:
            payload = dumps(event.data, option=_SORTED)
        id_ = event.id
        if event.cause is None and event.prev is None and event.v == 1:  # the usual record
            value = join((stamp[0], payload, _ID, dumps(id_), kind[0]))
        else:
            value = _unusual_value(event, payload, stamp[0], kind[0])
        headers = [("id", id_.encode()), kind[1]]
        if append(count, stamp[1], None, value, headers) is not None:
            count += 1
            continue
        if not count:
            raise _too_big(event, value, max_bytes)
        if not split:
            raise BatchTooLargeError(
                f"a batch of {len(events)} events exceeds max_batch_bytes={max_bytes} "
                "(one batch is one atomic record batch; append fewer events at a time)"
            )
        batches.append(_closed(batch, count))
        batch = new_batch()
        append, count = batch._builder.append, 0
        if append(count, stamp[1], None, value, headers) is None:
            raise _too_big(event, value, max_bytes)
        count += 1
    batches.append(_closed(batch, count))
    return batches


def _closed(batch: Any, count: int) -> tuple[Any, int]:
    """``batch`` closed, telling its wrapper how many records went into the builder."""
    batch._relative_offset = count  # what the wrapper's append would have counted
    batch.close()
    return batch, count


def _too_big(event: Event, value: bytes, max_bytes: int) -> BatchTooLargeError:
    return BatchTooLargeError(
        f"event {event.id} ({len(value)} bytes) does not fit in one record batch "
        f"(max_batch_bytes={max_bytes})"
    )


def decode_value(topic: str, record: Record) -> Event:
    """The event a record holds, with the record's offset.

    Raises:
        LogError: the value is not a tide event (naming the topic and offset).
    """
    try:
        parsed = orjson.loads(record.value)
        if type(parsed) is not dict:
            raise DecodeError("not a JSON object")
        event = decode_record(parsed)
    except (orjson.JSONDecodeError, DecodeError) as exc:
        raise LogError(f"{topic} offset {record.offset}: not a tide event ({exc})") from None
    _set_offset(event, record.offset)  # decode_record built it for us alone
    return event


def record_id(record: Record) -> str:
    """The event id of a record: its ``id`` header, else the value's ``id``, else ""."""
    headers = record.headers
    if headers and headers[0][0] == "id":  # where this log puts it
        return bytes(headers[0][1]).decode()
    for key, value in headers:
        if key == "id":
            return bytes(value).decode()
    try:  # written by something else: the id is in the value, if anywhere
        value = orjson.loads(record.value)
    except orjson.JSONDecodeError:
        return ""  # decoding the record will fail, naming its offset
    return str(value.get("id", "")) if isinstance(value, dict) else ""
