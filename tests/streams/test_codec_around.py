"""The write path serialises each payload once (issue 15, issue 13).

:func:`streams.codec.encode_around` builds the canonical line around the payload's
canonical bytes; the chain's digest hashes that line and the same bytes are what the
backend stores (``append_encoded``). These tests hold the line to :func:`encode` on
events of every shape, and show that the chain writer hands its backend the canonical
bytes it hashed, so SQLite stores what ``tide log import`` of the export would.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.backends.memory import MemoryLog
from streams.backends.sqlite import SQLiteLog
from streams.chain import ChainWriter, EncodedAppend, check_log
from streams.codec import encode, encode_around, encode_payload
from streams.events import Event, make_event
from streams.seal import digest
from tests.streams.test_codec import EVENTS
from tests.streams.test_kafka_codec import SHAPES

T0 = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
UNSORTED = {"z": {"y": 1, "x": [{"b": 0, "a": 1}]}, "a": "\u00e9", "m": None}


@pytest.mark.parametrize("event", SHAPES)
def test_the_line_around_the_payload_is_the_canonical_line(event: Event) -> None:
    payload = encode_payload(event.data)
    assert encode_around(event, payload) == encode(event)
    assert encode_around(event, payload) == encode(event)  # its envelope kept, the same
    assert digest(event, payload) == digest(event)


@settings(max_examples=300, derandomize=True)
@given(EVENTS, st.sampled_from([None, "c1"]), st.sampled_from([None, "run:x"]), st.integers(1, 3))
def test_seeded_events_give_the_canonical_line(
    event: Event, cause: str | None, prev: str | None, v: int
) -> None:
    event = replace(event, cause=cause or event.cause, prev=prev, v=v)
    assert encode_around(event, encode_payload(event.data)) == encode(event)


class EncodedMemoryLog(MemoryLog):
    """A memory log that takes payload bytes, and keeps what it was handed."""

    def __init__(self) -> None:
        super().__init__()
        self.handed: list[bytes | None] = []

    async def append_encoded(
        self, events: Sequence[Event], payloads: Sequence[bytes | None]
    ) -> list[Event]:
        self.handed.extend(payloads)
        return await self.append(events)


def records(n: int) -> list[Event]:
    return [
        make_event("trigger.fired", T0 + timedelta(seconds=i), {"n": i, "kind": "tick", **UNSORTED})
        for i in range(n)
    ]


def test_the_chain_writer_hands_the_backend_the_bytes_it_hashed() -> None:
    async def go() -> EncodedMemoryLog:
        log = EncodedMemoryLog()
        assert isinstance(log, EncodedAppend)
        async with ChainWriter(log, run="r1") as writer:
            await writer.append(records(3))
            await writer.append(records(5)[3:])
        assert (await check_log(log)).ok
        return log

    log = asyncio.run(go())
    assert log.handed == [encode_payload(e.data) for e in log.events]
    for before, after in zip(log.events, log.events[1:], strict=False):
        assert after.prev == digest(before)


def test_a_chained_sqlite_log_stores_the_canonical_payload(tmp_path: Path) -> None:
    """The row holds the sorted-key bytes (the ones an import of the export stores), not
    a second, unsorted serialisation of the payload."""

    async def go() -> list[Event]:
        async with await SQLiteLog.open(tmp_path / "a.db") as log:
            async with ChainWriter(log, run="r1") as writer:
                await writer.append(records(4))
            return await log.read_all()

    events = asyncio.run(go())
    with sqlite3.connect(tmp_path / "a.db") as conn:
        stored = [row[0] for row in conn.execute("SELECT data FROM events ORDER BY offset")]
    assert stored == [encode_payload(e.data) for e in events]
    assert [e.prev for e in events[1:]] == [digest(e) for e in events[:-1]]
