"""Record batches read by ``kafka_batches`` give what aiokafka's own reader gives.

No broker: batches are built by aiokafka's builder (every record shape: keys, null
values, headers with null values, offsets with gaps as compaction leaves them,
compressed batches, several batches in one answer, one cut short at its end), read by
:func:`kafka_batches.records` and :func:`kafka_batches.picked`, and compared with
aiokafka's ``MemoryRecords``; a flipped byte is a CRC-32C mismatch.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.backends import kafka_batches
from streams.backends.kafka_batches import CorruptBatchError

RecordSpec = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

records_st = st.lists(
    st.tuples(
        st.integers(1, 3),  # the gap to the previous offset (1: dense)
        st.none() | st.binary(max_size=8),  # key
        st.none() | st.binary(max_size=300),  # value (long ones: 2-byte varints)
        st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=6)), max_size=3),
    ),
    min_size=1,
    max_size=12,
)


def build(base: int, specs: list[RecordSpec], *, compression: int = 0) -> bytes:
    """One v2 record batch at ``base`` holding ``specs`` (offset gaps, key, value, headers)."""
    builder = DefaultRecordBatchBuilder(2, compression, 0, -1, -1, -1, 1 << 30)
    delta = -1
    for gap, key, value, headers in specs:
        delta += gap
        builder.append(delta, 1_700_000_000_000 + delta, key, value, headers)
    batch = bytearray(builder.build())
    struct.pack_into(">q", batch, 0, base)  # the base offset is outside the CRC
    return bytes(batch)


def reference(data: bytes) -> list[tuple[int, bytes | None, list[tuple[str, Any]]]]:
    found = []
    reader = MemoryRecords(data)
    while (batch := reader.next_batch()) is not None:
        assert batch.validate_crc()
        for record in batch:
            found.append((record.offset, record.value, list(record.headers)))
    return found


def ours(raws: list[kafka_batches.Raw]) -> list[tuple[int, bytes | None, list[tuple[str, Any]]]]:
    return [(r.offset, r.value, r.headers) for r in raws]


def answer(batches: list[list[RecordSpec]], *, compressed: set[int] = frozenset()) -> bytes:  # type: ignore[assignment]
    data, base = b"", 5
    for k, specs in enumerate(batches):
        data += build(base, specs, compression=1 if k in compressed else 0)
        base += sum(gap for gap, *_ in specs) + 1
    return data


@settings(max_examples=60, deadline=None)
@given(
    st.lists(records_st, min_size=1, max_size=4),
    st.integers(0, 60),
    st.none() | st.integers(0, 60),
    st.sets(st.integers(0, 3)),
)
def test_records_are_aiokafkas_within_the_bounds(
    batches: list[list[RecordSpec]], start: int, stop: int | None, compressed: set[int]
) -> None:
    if stop is not None:
        stop += start + 1  # a read asks for at least one offset
    data = answer(batches, compressed=compressed)
    expected = [r for r in reference(data) if r[0] >= start and (stop is None or r[0] < stop)]
    found, position = kafka_batches.records(data, start, stop)
    assert ours(found) == expected
    ends = [batch.last for batch in kafka_batches.batches(data)]
    if stop is None or stop > ends[-1]:
        assert position == max(start, ends[-1])
    else:  # it stops after the batch holding stop - 1
        assert position == max(start, min(e for e in ends if e >= stop))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(records_st, min_size=1, max_size=4),
    st.lists(st.integers(0, 70), unique=True, min_size=1),
    st.sets(st.integers(0, 3)),
)
def test_picked_offsets_are_the_records_there(
    batches: list[list[RecordSpec]], offsets: list[int], compressed: set[int]
) -> None:
    data = answer(batches, compressed=compressed)
    wanted = sorted(offsets)
    expected = [r for r in reference(data) if r[0] in set(wanted)]
    found, left, end = kafka_batches.picked(data, wanted, 0)
    assert ours(found) == expected
    ends = [batch.last for batch in kafka_batches.batches(data)]
    # read up to the batch past the last offset wanted (or the answer's end), no further
    assert end == min([e for e in ends if e > wanted[-1]] or ends[-1:])
    assert left == sum(1 for o in wanted if o < end)  # the rest is for the next fetch


def test_a_batch_cut_short_at_the_end_is_left_for_the_next_fetch() -> None:
    first = build(0, [(1, None, b"a", []), (1, None, b"b", [])])
    second = build(2, [(1, None, b"c", [("id", b"x")])])
    found, position = kafka_batches.records(first + second[:-3], 0, None)
    assert [r.value for r in found] == [b"a", b"b"] and position == 2
    assert kafka_batches.records(second[:30], 2, None) == ([], 2)


@pytest.mark.parametrize("at", [21, 40, 61, -1], ids=["attributes", "header", "record", "last"])
def test_a_flipped_byte_is_a_crc_mismatch(at: int) -> None:
    batch = bytearray(build(7, [(1, b"k", b"value", [("id", b"e1")]), (1, None, b"v2", [])]))
    batch[at] ^= 0x40
    with pytest.raises(CorruptBatchError, match="record batch at offset 7: CRC-32C mismatch"):
        kafka_batches.records(bytes(batch), 0, None)
    with pytest.raises(CorruptBatchError):
        kafka_batches.picked(bytes(batch), [8], 0)
