"""How an event becomes a Kafka record and a record becomes an event again.

A record's value is the event's canonical line, made by the one encoder
(:func:`streams.codec.encode`), so every field of the record round-trips however the
record grows; its headers carry ``id`` and ``type`` (the id index is rebuilt from them
without decoding values); its timestamp is the event's ``at``, so the broker's
time-based retention follows the cluster's time.

The append path is the hot one (measured in ``benchmarks/bench_kafka.py``):

* each value is encoded once; when the caller already holds the payload's canonical
  bytes (``tide log import`` computed them for content ids), the encoder splices them in
  as an ``orjson.Fragment`` instead of serialising the payload again;
* records go straight into aiokafka's record-batch builder, skipping the producer's
  per-record wrapper (:func:`fill_batches`; the wrapper's record count is set once at
  the end, which is all it keeps besides the builder: aiokafka 0.11-0.14);
* a decoded event is built once with its offset (no second Event to set it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import orjson

from streams.backends.kafka_client import BatchTooLargeError
from streams.codec import DecodeError, decode_record, encode
from streams.events import Event, build_event
from streams.log import LogError

Record = Any  # aiokafka's ConsumerRecord (aiokafka ships no type information)

#: sets an Event's offset slot on an Event nobody else holds yet (a freshly decoded one)
_set_offset = vars(Event)["offset"].__set__


def record_value(event: Event, payload: bytes | None = None) -> bytes:
    """The record value of ``event``: its canonical line.

    ``payload`` is ``event.data`` already serialised canonically (sorted keys), or None.
    """
    if payload is None:
        return encode(event)
    data = cast(dict[str, Any], orjson.Fragment(payload))
    # the fast constructor: dataclasses.replace costs more than the rest of the encode
    return encode(
        build_event(event.type, event.at, event.id, data, event.cause, -1, event.v, event.prev)
    )


def fill_batches(
    new_batch: Callable[[], Any],
    events: Sequence[Event],
    values: Sequence[bytes],
    *,
    max_bytes: int,
    split: bool,
) -> list[tuple[Any, int]]:
    """Record batches holding ``events`` (with ``values``), in order: ``(batch, count)``.

    One batch, or with ``split`` as many as ``max_bytes`` needs.

    Raises:
        BatchTooLargeError: one event does not fit in a batch, or (without ``split``) the
            events do not fit in one.
    """
    batches: list[tuple[Any, int]] = []
    batch = new_batch()
    builder, count = batch._builder, 0  # aiokafka's DefaultRecordBatchBuilder
    for event, value in zip(events, values, strict=True):
        timestamp = int(event.at.timestamp() * 1000)
        headers = [("id", event.id.encode()), ("type", event.type.encode())]
        if builder.append(count, timestamp, None, value, headers) is not None:
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
        builder, count = batch._builder, 0
        if builder.append(count, timestamp, None, value, headers) is None:
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
