"""The canonical line: exact bytes, round trips, decoding errors and upcasting."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from streams import codec
from streams.codec import (
    DecodeError,
    decision_line,
    decode,
    encode,
    from_stored,
    stored_events,
)
from streams.events import EVENT_TYPES, Event, content_id, make_event
from tests.builders import T0, build_pod, watch

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
EVENTS = st.builds(
    make_event,
    st.sampled_from(sorted(EVENT_TYPES)),
    st.datetimes(
        min_value=datetime(1970, 1, 2),
        max_value=datetime(9999, 12, 30),
        timezones=st.just(UTC) | st.just(timezone(timedelta(hours=-7))),
    ),
    st.dictionaries(st.text(), JSON_VALUES, max_size=5),
    cause=st.none() | st.text(min_size=1),
)


def test_the_canonical_line_is_exactly_this() -> None:
    event = make_event(
        "effect.failed",
        datetime(2026, 11, 21, 21, 0, 0, 5000, tzinfo=UTC),
        {"target": "default/web-1", "kind": "evict", "decision": "d1", "error": "é"},
        cause="d1",
        id="e1",
    )
    assert encode(event) == (
        b'{"at":"2026-11-21T21:00:00.005000Z","cause":"d1","data":{"decision":"d1",'
        b'"error":"\xc3\xa9","kind":"evict","target":"default/web-1"},"id":"e1",'
        b'"type":"effect.failed"}'
    )


def test_cause_and_v_appear_only_when_they_say_something() -> None:
    plain = make_event("metrics.node", T0, {"b": 1, "a": {"z": 0, "y": [{"d": 1, "c": 2}]}})
    assert encode(plain) == (
        b'{"at":"2026-11-21T20:00:00Z","data":{"a":{"y":[{"c":2,"d":1}],"z":0},"b":1},'
        b'"id":"' + plain.id.encode() + b'","type":"metrics.node"}'
    )
    assert b'"v":3' in encode(replace(plain, v=3))


@given(EVENTS)
def test_decode_inverts_encode(event: Event) -> None:
    line = encode(event)
    assert decode(line) == event
    assert decode(line.decode()) == event
    assert encode(decode(line)) == line


def test_the_same_content_gives_the_same_bytes() -> None:
    pod = build_pod("default", "web-1")
    reordered = orjson.loads(orjson.dumps(dict(reversed(list(pod.items())))))
    assert list(reordered) != list(pod)
    assert encode(watch("pods", pod)) == encode(watch("pods", reordered))


def test_a_line_without_id_gets_the_content_id() -> None:
    data = {"resource": "nodes", "event": "DELETED", "object": {"metadata": {"name": "n1"}}}
    line = b'{"type": "k8s.watch", "at": "2026-11-21T21:00:00+01:00", "cause": "c", "data": %s}'
    event = decode(line % orjson.dumps(data))
    assert event.id == content_id("k8s.watch", T0, data, "c")
    assert event.id == make_event("k8s.watch", T0, data, cause="c").id
    assert event.at == T0


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"{nope", "not JSON"),
        (b"[1]", "not a JSON object but an array"),
        (b'"text"', "not a JSON object but a string"),
        (b'{"type": "k8s.watch", "data": {}}', "missing 'at'"),
        (b'{"at": "2026-11-21T20:00:00Z", "data": {}}', "missing 'type'"),
        (b'{"at": "2026-11-21T20:00:00Z", "type": 7, "data": {}}', "'type' is a number"),
        (b'{"at": "2026-11-21T20:00:00Z", "type": "k8s.tea", "data": {}}', "unknown event type"),
        (b'{"at": 1700000000, "type": "k8s.watch", "data": {}}', "'at' is a number"),
        (b'{"at": "2026-11-21T20:00:00", "type": "k8s.watch", "data": {}}', "with a zone"),
        (b'{"at": "noon", "type": "k8s.watch", "data": {}}', "'at' 'noon' is not"),
        (b'{"at": "2026-11-21T20:00:00Z", "type": "k8s.watch"}', "'data' is null"),
        (b'{"at": "2026-11-21T20:00:00Z", "type": "k8s.watch", "data": []}', "'data' is an"),
        (b'{"at": "2026-11-21T20:00:00Z", "type": "k8s.watch", "data": {}, "cause": 1}', "cause"),
        (b'{"at": "2026-11-21T20:00:00Z", "type": "k8s.watch", "data": {}, "v": 0}', "'v' 0"),
        (b'{"at": "2026-11-21T20:00:00Z", "type": "k8s.watch", "data": {}, "v": true}', "'v'"),
        (b'{"at": "2026-11-21T20:00:00Z", "type": "k8s.watch", "data": {}, "id": ""}', "'id'"),
        (b'{"at": "2026-11-21T20:00:00Z", "type": "k8s.watch", "data": {}, "v": 2}', "newer"),
    ],
)
def test_decode_says_what_is_wrong(line: bytes, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode(line)
    assert reason in caught.value.reason


@pytest.fixture
def metrics_node_v3(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """metrics.node is at v3: v1 -> v2 renames ``usage`` to ``used``, v2 -> v3 adds ``v3``."""
    calls: list[str] = []

    def one_to_two(data: dict[str, Any]) -> dict[str, Any]:
        calls.append("1->2")
        data = dict(data)
        data["used"] = data.pop("usage")
        return data

    def two_to_three(data: dict[str, Any]) -> dict[str, Any]:
        calls.append("2->3")
        return {**data, "v3": True}

    monkeypatch.setitem(EVENT_TYPES, "metrics.node", 3)
    monkeypatch.setitem(codec.UPCASTERS, ("metrics.node", 1), one_to_two)
    monkeypatch.setitem(codec.UPCASTERS, ("metrics.node", 2), two_to_three)
    return calls


def test_old_versions_are_upcast_step_by_step(metrics_node_v3: list[str]) -> None:
    v1 = {"metadata": {"name": "n1"}, "usage": {"cpu": "1"}}
    line = b'{"at":"2026-11-21T20:00:00Z","type":"metrics.node","data":%s}' % orjson.dumps(v1)
    event = decode(line)
    assert (event.v, event.data) == (
        3,
        {"metadata": {"name": "n1"}, "used": {"cpu": "1"}, "v3": True},
    )
    assert metrics_node_v3 == ["1->2", "2->3"]
    assert event.id == content_id("metrics.node", T0, v1)  # hashed as written, not as upcast
    assert b'"v":3' in encode(event)

    v2 = b'{"at":"2026-11-21T20:00:00Z","type":"metrics.node","v":2,"id":"x","data":{"used":{}}}'
    assert decode(v2).data == {"used": {}, "v3": True}
    assert metrics_node_v3[2:] == ["2->3"]

    stored = from_stored(7, "x", "2026-11-21T20:00:00Z", "metrics.node", None, 1, orjson.dumps(v1))
    assert (stored.offset, stored.v, stored.data["v3"]) == (7, 3, True)
    row = (7, "x", "2026-11-21T20:00:00Z", "metrics.node", None, 1, orjson.dumps(v1), None)
    assert list(stored_events([row])) == [stored]  # the one-pass decode upcasts too


def test_stored_events_are_from_stored_of_each_row() -> None:
    rows = [
        (0, "a", "2026-11-21T20:00:00Z", "metrics.node", None, 1, b'{"n":1}', None),
        (1, "b", "2026-11-21T20:00:00Z", "decision.evict", "a", 1, b'{"pod":"p"}', "h1"),
        (5, "c", "2026-11-21T21:00:00.5+01:00", "k8s.watch", None, 1, b"{}", None),
    ]
    assert list(stored_events(rows)) == [from_stored(*row) for row in rows]


def test_a_missing_upcaster_is_a_decode_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(EVENT_TYPES, "metrics.pod", 2)
    with pytest.raises(DecodeError, match=r"no upcaster for metrics\.pod v1 -> v2"):
        decode(b'{"at":"2026-11-21T20:00:00Z","type":"metrics.pod","data":{}}')


def test_the_decision_line_is_at_then_the_payload_sorted() -> None:
    decision = make_event(
        "decision.untaint",
        datetime(2026, 11, 21, 22, 0, tzinfo=timezone(timedelta(hours=1))),
        {
            "kind": "untaint",
            "node": "n1",
            "taint": {"value": "cpu", "key": "k", "effect": "NoSchedule"},
            "reason": "eviction-taint",
            "source": "pressure",
            "evidence": {},
        },
        cause="c",
    )
    assert decision_line(decision) == (
        b'{"at":"2026-11-21T21:00:00Z","evidence":{},"kind":"untaint","node":"n1",'
        b'"reason":"eviction-taint","source":"pressure",'
        b'"taint":{"effect":"NoSchedule","key":"k","value":"cpu"}}'
    )


@given(EVENTS)
def test_content_id_from_encoded_payload_matches_content_id(event: Event) -> None:
    payload = orjson.dumps(event.data, option=orjson.OPT_SORT_KEYS)
    assert codec.content_id_encoded(event.type, event.at, payload, event.cause) == content_id(
        event.type, event.at, event.data, event.cause
    )


def test_check_appendable_refuses_unknown_types_and_naive_times() -> None:
    codec.check_appendable([make_event("metrics.pod", T0, {})])
    with pytest.raises(ValueError, match="unknown event type"):
        codec.check_appendable([Event("nope", T0, "i", {})])
    with pytest.raises(ValueError, match="no timezone"):
        codec.check_appendable([Event("metrics.pod", datetime(2026, 1, 1), "i", {})])


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        (b'"type": 7, "data": {}', "'type' is a number"),
        (b'"type": "k8s.tea", "data": {}', "unknown event type"),
        (b'"type": "k8s.watch", "data": []', "'data' is an"),
        (b'"type": "k8s.watch", "data": {}, "cause": 1', "cause"),
        (b'"type": "k8s.watch", "data": {}, "v": true', "'v'"),
        (b'"type": "k8s.watch", "data": {}, "v": 2', "newer"),
        (b'"type": "k8s.watch", "data": {}, "v": 0', "'v' 0"),
        (b'"type": ["k8s.watch"], "data": {}', "'type' is an"),
    ],
)
def test_lines_with_ids_and_a_known_time_are_still_checked(fields: bytes, reason: str) -> None:
    """The fast path (a line with an id whose ``at`` was seen) refuses what the slow one does."""
    decode(b'{"at": "2026-11-21T20:00:00Z", "type": "k8s.watch", "data": {}, "id": "a"}')
    with pytest.raises(DecodeError) as caught:
        decode(b'{"at": "2026-11-21T20:00:00Z", "id": "x", %s}' % fields)
    assert reason in caught.value.reason


def test_the_fast_path_gives_the_event_the_checking_path_gives() -> None:
    line = b'{"at":"2026-11-21T20:00:00Z","cause":"c","data":{"a":1},"id":"i","type":"k8s.watch"}'
    first, second = decode(line), decode(line)  # the second takes the fast path
    slow = codec.decode_record_encoded(orjson.loads(line))[0]
    assert first == second == slow
    assert second == Event("k8s.watch", T0, "i", {"a": 1}, "c", -1, 1)
