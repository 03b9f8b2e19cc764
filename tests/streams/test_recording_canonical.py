"""``read_batches(canonical=True)`` keeps a payload's bytes only for a canonical line."""

from __future__ import annotations

import io

import orjson

from streams.codec import encode, encode_payload
from streams.recording import read_batches
from tests.builders import build_pod, watch


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


def test_other_lines_keep_none() -> None:
    event = watch("pods", build_pod("ns", "p", labels={"z": "1", "a": "2"}))
    record = {"type": event.type, "data": event.data, "at": "2026-11-21T20:00:00Z"}
    unsorted = orjson.dumps(record)  # keys in the line's own order: not canonical
    spaced = orjson.dumps(record, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).replace(
        b"\n", b" "
    )
    other_time = encode(event).replace(
        b'"at":"2026-11-21T20:00:00Z"', b'"at":"2026-11-21T20:00:00+00:00"'
    )
    no_newline = encode(event)  # the last line without its newline
    lines = [unsorted + b"\n", spaced + b"\n", other_time + b"\n", no_newline]
    assert _payloads(lines) == [None] * 4
    # without the flag every line keeps its payload's canonical bytes
    batches = read_batches(io.BytesIO(b"".join(lines)))
    assert [p for b in batches for p in b.payloads] == [encode_payload(event.data)] * 4
