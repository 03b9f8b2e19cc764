"""The Kafka record value is the canonical line, byte for byte, however it is put together.

``record_value`` builds the line around the payload's bytes (held by the caller, or
serialised there) instead of calling :func:`streams.codec.encode`; these tests hold the
two to the same bytes on seeded events of every shape, and show that a payload handed
in is what the value carries.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.backends import kafka_codec
from streams.backends.kafka_codec import record_timestamp, record_value
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
