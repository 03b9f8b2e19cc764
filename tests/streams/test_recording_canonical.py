"""``read_batches(canonical=True)`` keeps a payload's bytes only for a canonical line."""

from __future__ import annotations

import io

import orjson

from streams.codec import encode, encode_payload
from streams.recording import read_batches
from tests.builders import build_pod, node_metrics, watch


def _payloads(lines: list[bytes]) -> list[bytes | None]:
    batches = read_batches(io.BytesIO(b"".join(lines)), canonical=True)
    return [p for batch in batches for p in batch.payloads]


def test_canonical_lines_keep_their_payload_bytes() -> None:
    event = watch("pods", build_pod("ns", "p", labels={"z": "1", "a": "2"}))
    with_id = encode(event)
    without_id = orjson.dumps(
        {"at": "2026-11-21T20:00:00Z", "data": event.data, "type": event.type},
        option=orjson.OPT_SORT_KEYS,
    )
    assert _payloads([with_id + b"\n", without_id + b"\n"]) == [encode_payload(event.data)] * 2


def test_other_lines_keep_none_but_watch_payloads_in_order() -> None:
    for event in (node_metrics("n1", cpu="1", memory="1Gi"), watch("pods", build_pod("ns", "p"))):
        record = {"type": event.type, "data": event.data, "at": "2026-11-21T20:00:00Z"}
        unsorted = orjson.dumps(record)  # keys in the given order: not canonical
        assert unsorted != orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
        spaced = orjson.dumps(record, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
        at = b'"at":"2026-11-21T20:00:00Z"'
        other_time = encode(event).replace(at, b'"at":"2026-11-21T20:00:00+00:00"')
        no_newline = encode(event)  # the last line without its newline
        lines = [unsorted + b"\n", spaced.replace(b"\n", b" ") + b"\n", other_time + b"\n"]
        lines.append(no_newline)
        canonical = encode_payload(event.data)
        # a watch payload decoded in sorted order keeps its bytes however the line looked
        kept = [None, canonical, canonical, canonical] if event.type == "k8s.watch" else [None] * 4
        assert _payloads(lines) == kept
        # without the flag every line keeps its payload's canonical bytes
        batches = read_batches(io.BytesIO(b"".join(lines)))
        assert [p for b in batches for p in b.payloads] == [canonical] * 4


def test_a_stripped_watch_object_keeps_its_bytes_when_in_order() -> None:
    pod = build_pod("ns", "p")
    pod["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    line = encode(watch("pods", pod)) + b"\n"  # canonical, then stripped by the reader
    (batch,) = read_batches(io.BytesIO(line), canonical=True)
    assert "managedFields" not in batch.events[0].data["object"]["metadata"]
    assert batch.payloads == [encode_payload(batch.events[0].data)]
    unsorted = orjson.dumps(
        {"at": "2026-11-21T20:00:00Z", "data": watch("pods", pod).data, "type": "k8s.watch"}
    )
    (batch,) = read_batches(io.BytesIO(unsorted + b"\n"), canonical=True)
    assert batch.payloads == [None]
