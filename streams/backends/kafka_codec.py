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
  timestamp and type parts are computed once per distinct time and type) and writes
  the record batch itself, byte for byte what aiokafka's builder makes: each payload is
  copied once (into the batch), the batch's CRC-32C is taken by google-crc32c (the CPU's
  CRC instructions) instead of aiokafka's table-driven one, and the batch is handed to
  the producer as a built ``BatchBuilder`` (:func:`producer_batch`);
* a decoded event is built once with its offset (no second Event to set it).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from datetime import datetime
from itertools import chain, repeat
from typing import Any

import google_crc32c
import orjson
from aiokafka.record._crecords.cutil import crc32c_cython

from streams.backends.kafka_client import BatchTooLargeError
from streams.codec import DecodeError, check_appendable, decode_record, line_around
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
    between fixed keys (:func:`streams.codec.line_around`, shared with the chain's
    digest); ``tests/streams/test_kafka_codec.py`` holds it to ``encode``.

    Raises:
        ValueError: ``event`` is not appendable (:func:`streams.codec.check_appendable`).
    """
    if payload is None:
        payload = orjson.dumps(event.data, option=_SORTED)
    head = (_STAMPS.get(event.at) or _stamp(event))[0]
    tail = (_KINDS.get(event.type) or _kind(event))[0]
    return line_around(event, payload, head, tail)


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


def _kind(event: Event) -> tuple[bytes, bytes]:
    """``',"type":"<type>"}'`` and the encoded ``type`` header of ``event.type`` (key
    length, key, value length, value), once per type (checking it first: a type found
    in ``_KINDS`` is a known one)."""
    check_appendable((event,))
    type_ = event.type
    value = type_.encode()
    header = b"\x08type" + _varint(len(value)) + value
    kind = _KINDS[type_] = (b',"type":' + orjson.dumps(type_) + b"}", header)
    return kind


_SORTED = orjson.OPT_SORT_KEYS
_ID = b',"id":'
_STAMPS: dict[datetime, tuple[bytes, int]] = {}
_STAMPS_MAX = 4096
#: per event type (only the known ones get in): the value's tail and the ``type`` header
_KINDS: dict[str, tuple[bytes, bytes]] = {}


def encode_batches(
    events: Sequence[Event],
    payloads: Sequence[bytes | None],
    *,
    max_bytes: int,
    split: bool,
) -> list[tuple[bytes, int]]:
    """Record batches holding ``events`` in order, ``(batch, count)``: each record's
    value (:func:`record_value`, around ``payloads[i]`` when given and not None), its
    ``id`` and ``type`` headers and its timestamp, in one pass that checks each event
    as :func:`streams.codec.check_appendable` does. One batch, or with ``split`` as
    many as ``max_bytes`` needs (a record fits where aiokafka's builder would take it:
    the first always, the next ones while the batch stays below ``max_bytes``).

    The batch is the one aiokafka's record-batch builder makes (message format v2, no
    compression, no producer id; ``tests/streams/test_kafka_codec.py`` holds the bytes
    equal), put together here so that each payload is copied once into the batch (no
    record value of its own) and the CRC-32C is taken by :func:`_crc32c`.

    Raises:
        ValueError: an event is not appendable (nothing is built).
        BatchTooLargeError: without ``split``, the events do not fit in one batch.
    """
    batches: list[tuple[bytes, int]] = []
    parts: list[bytes] = []
    add = parts.extend
    stamps, kinds, join, dumps = _STAMPS.get, _KINDS.get, b"".join, orjson.dumps
    varints, small = _VARINTS, len(_VARINTS)
    count = fresh = held = 0  # fresh: bytes of payloads serialised here in parts[held:]
    pos = _RECORDS_AT  # where the next record starts in the batch
    first = top = 0  # the batch's first and largest timestamp
    for event, payload in zip(events, chain(payloads, repeat(None)), strict=False):
        stamp = stamps(event.at) or _stamp(event)
        kind = kinds(event.type) or _kind(event)
        if payload is None:
            payload = dumps(event.data, option=_SORTED)
            fresh += len(payload)
        id_ = event.id
        key = id_.encode()
        id_length = varints[len(key)] if len(key) < small else _varint(len(key))
        headers = len(_ID_HEADER) + len(id_length) + len(key) + len(kind[1])  # their size
        # three parts a record: its length, lead and the value's opening; the payload;
        # the value's closing and the headers (the id's, then the type's)
        if event.cause is None and event.prev is None and event.v == 1:  # the usual record
            opening, middle = stamp[0], payload
            closing = join((_ID, dumps(id_), kind[0], _ID_HEADER, id_length, key, kind[1]))
        else:
            opening, middle = line_around(event, payload, stamp[0], kind[0]), b""
            closing = join((_ID_HEADER, id_length, key, kind[1]))
        size = len(opening) + len(middle) + len(closing) - headers  # the value's
        value_length = varints[size] if size < small else _varint(size)
        timestamp = stamp[1]
        if count:  # attributes, timestamp delta, offset delta, no key, value length
            delta = timestamp - first
            delta_bytes = varints[delta] if 0 <= delta < small else _varint(delta)
            offset_bytes = varints[count] if count < small else _varint(count)
            lead = 2 + len(delta_bytes) + len(offset_bytes) + len(value_length)
        else:
            lead = len(_FIRST_LEAD) + len(value_length)
        body = lead + size + headers
        length = varints[body] if body < small else _varint(body)
        if count and pos + len(length) + body >= max_bytes:  # full, as aiokafka's builder
            if not split:
                raise BatchTooLargeError(
                    f"a batch of {len(events)} events exceeds max_batch_bytes={max_bytes} "
                    "(one batch is one atomic record batch; append fewer events at a time)"
                )
            batches.append(_batch(parts, count, first, top))
            parts, count, pos, held = [], 0, _RECORDS_AT, 0
            add = parts.extend
            body = len(_FIRST_LEAD) + len(value_length) + size + headers
            length = varints[body] if body < small else _varint(body)
        if count:
            if timestamp > top:
                top = timestamp
            start = join(
                (length, b"\x00", delta_bytes, offset_bytes, b"\x01", value_length, opening)
            )
        else:
            first = top = timestamp
            start = join((length, _FIRST_LEAD, value_length, opening))
        add((start, middle, closing))
        pos += len(length) + body
        count += 1
        if fresh > _FRESH_MAX:  # let go of the payloads serialised here: see _FRESH_MAX
            parts[held:] = [join(parts[held:])]
            held, fresh = len(parts), 0
    batches.append(_batch(parts, count, first, top))
    return batches


def _batch(parts: list[bytes], count: int, first: int, top: int) -> tuple[bytes, int]:
    """The record batch of ``count`` records (``parts``), ``(batch, count)``: joined
    once, its CRC taken over the parts (a second batch-sized copy would cost a copy and
    push glibc into handing memory back and faulting it in again)."""
    # attributes, last offset delta, first and max timestamp, producer id, epoch,
    # base sequence (as aiokafka's builder: -1, -1, 0), record count
    rest = _REST.pack(0, count - 1, first, top, -1, -1, 0, count)
    crc = _crc32c(rest, parts)
    # base offset, length (from the leader epoch on), leader epoch, magic, CRC
    size = _HEAD.size - 12 + len(rest) + sum(map(len, parts))
    return b"".join((_HEAD.pack(0, size, -1, 2, crc), rest, *parts)), count


def _varint(value: int) -> bytes:
    """``value`` as a Kafka varint (zigzag, then 7 bits a byte, lowest first)."""
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


def _crc32c_joined(rest: bytes, parts: list[bytes]) -> int:
    """The CRC-32C of ``rest`` and ``parts`` by aiokafka's own (table-driven) function."""
    return int(crc32c_cython(b"".join((rest, *parts))))


def _crc32c_hardware(rest: bytes, parts: list[bytes]) -> int:
    """The CRC-32C of ``rest`` and ``parts`` by google-crc32c (the CPU's CRC
    instructions: ~14x aiokafka's, which took ~2.3 µs of a 5 KB record's append)."""
    extend = google_crc32c.extend
    crc = google_crc32c.value(rest)
    for part in parts:
        crc = extend(crc, part)
    return int(crc)


#: google-crc32c's C extension when it is there (its wheels ship it; without it the
#: package falls back to pure Python), else aiokafka's
_crc32c = _crc32c_hardware if google_crc32c.implementation == "c" else _crc32c_joined
#: varints of 0 ... 2**15 - 1: the lengths, deltas and counts of almost every record
_VARINTS = [_varint(n) for n in range(1 << 15)]
#: attributes 0, timestamp delta 0, offset delta 0, no key: the first record's lead
_FIRST_LEAD = b"\x00\x00\x00\x01"
#: two headers, then the key "id" (length 2)
_ID_HEADER = b"\x04\x04id"
_HEAD = struct.Struct(">qiibI")
_REST = struct.Struct(">hiqqqhii")
#: how many bytes of payloads serialised here ``encode_batches`` keeps before joining
#: them into one part: holding a batch's worth (5 MB for 1,000 pod events), freed all
#: at once, had glibc hand the heap's top back and fault it in again for the next one
#: (4 page faults per event, ~6 µs)
_FRESH_MAX = 64 * 1024
_RECORDS_AT = _HEAD.size + _REST.size  # 61: where a batch's first record starts


def producer_batch(new_batch: Callable[[], Any], batch: bytes, count: int) -> Any:
    """An aiokafka ``BatchBuilder`` (from ``new_batch``, the producer's
    ``create_batch``) that sends ``batch``, a record batch of ``count`` records made by
    :func:`encode_batches`: what its ``_build`` returns after ``count`` appends and a
    ``close`` (aiokafka 0.11-0.14: the built buffer and the record count)."""
    wrapper = new_batch()
    wrapper._buffer = batch
    wrapper._relative_offset = count
    wrapper.close()
    return wrapper


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
