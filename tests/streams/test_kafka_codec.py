"""The Kafka record value is the canonical line, byte for byte, however it is put together.

``record_value`` builds the line around the payload's bytes (held by the caller, or
serialised there) instead of calling :func:`streams.codec.encode`; these tests hold the
two to the same bytes on seeded events of every shape, and show that a payload handed
in is what the value carries.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import cast

import orjson
import pytest
from aiokafka.producer.message_accumulator import BatchBuilder
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.backends import kafka_codec
from streams.backends.kafka_client import BatchTooLargeError
from streams.backends.kafka_codec import encode_batches, record_timestamp, record_value
from streams.codec import encode
from streams.events import Event, make_event
from tests.streams.test_codec import EVENTS

T = datetime(2026, 11, 21, 20, 0, 0, tzinfo=UTC)


def canonical_payload(event: Event) -> bytes:
    return orjson.dumps(event.data, option=orjson.OPT_SORT_KEYS)


BASE = make_event("k8s.watch", T, {"resource": "pods", "event": "ADDED", "object": {"b": 1}})

SHAPES = [
    pytest.param(BASE, id="plain"),
    pytest.param(replace(BASE, cause='d\u00e9cision "1"\n'), id="cause with escapes"),
    pytest.param(replace(BASE, prev="@w.1/run:abc"), id="prev"),
    pytest.param(replace(BASE, v=3), id="version"),
    pytest.param(replace(BASE, cause="c", prev="p", v=2), id="every optional field"),
    pytest.param(replace(BASE, id='odd "id" \u2028 \\'), id="id with escapes"),
    pytest.param(replace(BASE, at=T.replace(microsecond=5000)), id="microseconds"),
    pytest.param(
        replace(BASE, at=datetime(2026, 11, 21, 21, 0, tzinfo=timezone(timedelta(hours=1)))),
        id="another zone, same instant",
    ),
    pytest.param(
        replace(BASE, data={"z": {"y": 1, "x": [{"b": 0, "a": 1}]}, "a": "\u00e9"}),
        id="nested unsorted",
    ),
    pytest.param(replace(BASE, type="log.sealed"), id="another type"),
]


@pytest.mark.parametrize("event", SHAPES)
@pytest.mark.parametrize("held", [False, True], ids=["serialised here", "payload held"])
def test_the_value_is_the_canonical_line(event: Event, held: bool) -> None:
    payload = canonical_payload(event) if held else None
    assert record_value(event, payload) == encode(event)


@pytest.mark.parametrize("event", SHAPES)
def test_the_timestamp_is_the_events_time_in_milliseconds(event: Event) -> None:
    assert record_timestamp(event) == int(event.at.timestamp() * 1000)


@settings(max_examples=300, derandomize=True)
@given(EVENTS, st.sampled_from([None, "c1"]), st.sampled_from([None, "run:x"]), st.integers(1, 3))
def test_seeded_events_give_the_canonical_line(
    event: Event, cause: str | None, prev: str | None, v: int
) -> None:
    event = replace(event, cause=cause or event.cause, prev=prev, v=v)
    assert record_value(event) == encode(event)
    assert record_value(event, canonical_payload(event)) == encode(event)
    assert record_timestamp(event) == int(event.at.timestamp() * 1000)


def test_a_held_payload_is_what_the_value_carries() -> None:
    """The bytes handed in are spliced, not re-serialised: a caller's wrong bytes would
    show (which is why the recorder's are proven canonical in its own tests)."""
    assert b'"data":{"other":1}' in record_value(BASE, b'{"other":1}')


def test_the_time_cache_stays_bounded() -> None:
    for n in range(kafka_codec._STAMPS_MAX + 10):
        event = replace(BASE, at=T + timedelta(microseconds=n))
        assert record_value(event) == encode(event)
    assert len(kafka_codec._STAMPS) <= kafka_codec._STAMPS_MAX


# -- the record batch ---------------------------------------------------------------------


def aiokafka_batches(
    events: list[Event], max_bytes: int, payloads: list[bytes | None] | None = None
) -> list[bytes]:
    """What aiokafka's own builder makes of the same records (value, headers, time),
    a new batch each time it says the last one is full."""
    held = payloads or [None] * len(events)
    built: list[bytes] = []
    batch = BatchBuilder(max_bytes, 0, is_transactional=False)
    for event, payload in zip(events, held, strict=True):
        record = {
            "timestamp": record_timestamp(event),
            "key": None,
            "value": record_value(event, payload),
            "headers": [("id", event.id.encode()), ("type", event.type.encode())],
        }
        if batch.append(**record) is None:
            built.append(bytes(batch._build()))
            batch = BatchBuilder(max_bytes, 0, is_transactional=False)
            assert batch.append(**record) is not None
    built.append(bytes(batch._build()))
    return built


def batches_of(events: list[Event], max_bytes: int) -> list[bytes]:
    made = encode_batches(events, [], max_bytes=max_bytes, split=True)
    assert sum(count for _, count in made) == len(events)
    return [batch for batch, _ in made]


BATCH: list[Event] = [
    *(cast(Event, param.values[0]) for param in SHAPES),
    replace(BASE, id="earlier", at=T - timedelta(seconds=5)),  # a negative time delta
    replace(BASE, id="later", at=T + timedelta(days=400)),  # a delta past the varint table
    replace(BASE, id="big", data={"blob": "x" * 70_000}),  # lengths past the table
    replace(BASE, id="\u00e9t\u00e9 " * 40),  # a long id, not ASCII
]


def test_a_batch_is_the_one_aiokafka_builds_byte_for_byte() -> None:
    events = [replace(event, id=f"{k}-{event.id}") for k, event in enumerate(BATCH)]
    assert batches_of(events, 16 << 20) == aiokafka_batches(events, 16 << 20)


def test_held_payloads_give_the_same_batch() -> None:
    events = [replace(event, id=f"{k}-{event.id}") for k, event in enumerate(BATCH)]
    payloads: list[bytes | None] = [canonical_payload(e) for e in events]
    payloads[3] = None  # serialised here
    made = encode_batches(events, payloads[:-2], max_bytes=16 << 20, split=False)
    assert [batch for batch, _ in made] == aiokafka_batches(events, 16 << 20, payloads)


@pytest.mark.parametrize("max_bytes", [600, 2_000, 5_000, 100_000])
def test_batches_are_split_where_aiokafka_would_split_them(max_bytes: int) -> None:
    events = [
        replace(
            BASE,
            id=f"e{k}",
            data={"n": k, "pad": "y" * (k * 37 % 900)},
            at=T + timedelta(milliseconds=k * 250),
        )
        for k in range(60)
    ]
    made = batches_of(events, max_bytes)
    assert made == aiokafka_batches(events, max_bytes)
    assert (len(made) > 1) == (max_bytes < 100_000)
    if len(made) > 1:  # without split, the append is refused whole
        with pytest.raises(BatchTooLargeError, match=f"max_batch_bytes={max_bytes}"):
            encode_batches(events, [], max_bytes=max_bytes, split=False)


@pytest.mark.parametrize(
    ("broken", "reason"),
    [
        (replace(BASE, type="no.such.type"), "unknown event type"),
        (replace(BASE, at=datetime(2026, 11, 21, 20, 0, 0)), "has no timezone"),
    ],
)
def test_an_event_no_log_could_read_is_refused(broken: Event, reason: str) -> None:
    record_value(BASE)  # BASE's time and type are known: the cache lets nothing else by
    with pytest.raises(ValueError, match=reason):
        encode_batches([BASE, broken], [], max_bytes=16 << 20, split=False)


def test_both_crc32c_functions_agree() -> None:
    rest, records = b"\x00\x01" * 20, [bytes(range(256)) * 300, b"", b"tail"]
    assert kafka_codec._crc32c_hardware(rest, records) == kafka_codec._crc32c_joined(rest, records)
    assert kafka_codec._crc32c is kafka_codec._crc32c_hardware  # the wheel's C extension
