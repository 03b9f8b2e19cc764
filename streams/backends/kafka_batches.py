"""Reading the record batches a Fetch answer holds, without aiokafka's consumer.

A Fetch answer's record set is a run of record batches (message format v2: a 61-byte
header, then the records). aiokafka's consumer turns every record of every batch into a
``ConsumerRecord``, in Python, even when the reader wants a few of them (an index
lookup, a catch-up that needs only ids). Here a batch is checked once (its CRC-32C, by
``google-crc32c``, over everything from its attributes on) and its records are walked by
their lengths: a record not wanted costs a varint or two, not a decode.

* :func:`records` -- every record of ``[start, stop)`` (offset, value, headers: what
  ``kafka_codec.decode_value`` and ``record_id`` read), by aiokafka's C batch reader once
  the CRC is checked here;
* :func:`picked` -- only the records at some offsets, as :class:`Raw`, each decoded
  here and the others walked over;
* each returns where the next fetch starts (one past the last batch read whole: a batch's
  last offset is in its header, so records compacted away at its end are stepped over).

A batch that is compressed, a control batch's markers, or one of an older message
format (magic 0/1: never written by tide, but a topic can hold them) are read through
aiokafka's own batch reader; a control batch's records are never handed out. A batch
cut short at the end of the answer (the broker fills ``max_bytes``) is left for the
next fetch.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import google_crc32c
from aiokafka.record.default_records import DefaultRecordBatch
from aiokafka.record.memory_records import MemoryRecords

from streams.log import LogError

#: base offset, batch length, leader epoch, magic, CRC, attributes, last offset delta,
#: first and max timestamp, producer id, epoch, base sequence, record count
_HEADER = struct.Struct(">qiibIhiqqqhii")
_HEADER_SIZE = _HEADER.size  # 61
_LEAD = struct.Struct(">qi")  # base offset and batch length: what says where it ends
_CRC_FROM = 21  # the CRC covers the batch from its attributes on
_COMPRESSED = 0x07
_CONTROL = 0x20


class CorruptBatchError(LogError):
    """A record batch whose CRC-32C does not match its bytes (or that cannot be read)."""

    retriable = False


class Raw:
    """One record of a batch: its offset, value and headers (``(key, value)`` pairs), the
    attributes of aiokafka's ``ConsumerRecord`` the log reads."""

    __slots__ = ("headers", "offset", "value")

    def __init__(
        self, offset: int, value: bytes | None, headers: list[tuple[str, bytes | None]]
    ) -> None:
        self.offset = offset
        self.value = value
        self.headers = headers

    def __repr__(self) -> str:
        return f"Raw(offset={self.offset}, headers={self.headers!r})"


class Batch:
    """A whole record batch of an answer: where it starts and ends (one past its last
    offset) and its bytes (``buffer[start:end]``)."""

    __slots__ = ("attributes", "base", "buffer", "count", "end", "last", "magic", "start")

    def __init__(self, data: Any, start: int, end: int) -> None:
        self.buffer, self.start, self.end = data, start, end
        self.magic = data[start + 16]
        if self.magic < 2:
            self.base, self.last, self.count, self.attributes = -1, -1, 0, _COMPRESSED
            return
        fields = _HEADER.unpack_from(data, start)
        self.base, self.attributes = fields[0], fields[5]
        self.last = self.base + fields[6] + 1
        self.count = fields[12]
        if google_crc32c.value(bytes(data[start + _CRC_FROM : end])) != fields[4]:
            raise CorruptBatchError(
                f"record batch at offset {self.base}: CRC-32C mismatch (corrupt batch)"
            )

    @property
    def plain(self) -> bool:
        """Whether its records are read here (v2, not compressed, not a control batch)."""
        return self.magic >= 2 and not self.attributes & (_COMPRESSED | _CONTROL)

    def through_aiokafka(self) -> tuple[list[Raw], int]:
        """Its records (none of a control batch) and where the next batch starts, read
        by aiokafka's batch reader (compressed and old-format batches)."""
        found: list[Raw] = []
        end = -1
        reader = MemoryRecords(bytes(self.buffer[self.start : self.end]))
        while (batch := reader.next_batch()) is not None:
            control = bool(getattr(batch, "is_control_batch", False))
            for record in batch:
                end = max(end, int(record.offset) + 1)
                if not control:
                    headers = list(getattr(record, "headers", ()))
                    found.append(Raw(int(record.offset), record.value, headers))
            if self.magic >= 2:
                end = max(end, self.last)
        return found, end


def batches(data: Any) -> Iterator[Batch]:
    """The whole record batches of a Fetch answer's record set, in order (one cut short
    at its end is left out: the next fetch starts there).

    Raises:
        CorruptBatchError: a batch's CRC-32C does not match.
    """
    size, at = len(data), 0
    while at + 12 <= size:
        length = _LEAD.unpack_from(data, at)[1]
        end = at + 12 + length
        if length < _HEADER_SIZE - 12 or end > size:
            return  # cut short by the answer's size: fetched again from its start
        yield Batch(data, at, end)
        at = end


def _varint(data: Any, at: int) -> tuple[int, int]:
    """The zigzag varint at ``data[at]`` and where the next field starts."""
    byte = data[at]
    at += 1
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), at
    value, shift = byte & 0x7F, 7
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (value >> 1) ^ -(value & 1), at
        shift += 7


def _skip_varint(data: Any, at: int) -> int:
    while data[at] >= 0x80:
        at += 1
    return at + 1


def _record(data: Any, at: int, offset: int) -> Raw:
    """The record whose attributes byte is at ``data[at]`` (at ``offset``), decoded."""
    at = _skip_varint(data, at + 1)  # attributes, timestamp delta
    at = _skip_varint(data, at)  # offset delta
    length, at = _varint(data, at)  # key
    if length > 0:
        at += length
    length, at = _varint(data, at)
    value = None
    if length >= 0:
        value = bytes(data[at : at + length])
        at += length
    count, at = _varint(data, at)
    headers: list[tuple[str, bytes | None]] = []
    for _ in range(count):
        length, at = _varint(data, at)
        key = bytes(data[at : at + length]).decode()
        at += length
        length, at = _varint(data, at)
        if length < 0:
            headers.append((key, None))
        else:
            headers.append((key, bytes(data[at : at + length])))
            at += length
    return Raw(offset, value, headers)


def _walk(batch: Batch) -> Iterator[tuple[int, int]]:
    """``(offset, where its attributes byte is)`` of each record of a plain batch; a
    batch whose offsets are dense (the usual one) is walked by lengths alone."""
    data, base = batch.buffer, batch.base
    at = batch.start + _HEADER_SIZE
    dense = batch.last - base == batch.count
    for k in range(batch.count):
        length, body = _varint(data, at)
        if dense:
            offset = base + k
        else:
            delta, _ = _varint(data, _skip_varint(data, body + 1))
            offset = base + delta
        yield offset, body
        at = body + length


def records(data: Any, start: int, stop: int | None) -> tuple[list[Any], int]:
    """The records of ``data`` (a Fetch answer's record set) with offsets in ``[start,
    stop)`` (``stop`` None: no bound), and where the next fetch starts (``start`` when
    no whole batch came). A read wants every record of a batch: once its CRC is checked
    here, aiokafka's C batch reader hands them out (objects with ``offset``, ``value`` and
    ``headers``, as :class:`Raw`), without the table-driven CRC and the ``ConsumerRecord``
    of its consumer.

    Raises:
        CorruptBatchError: a batch's CRC-32C does not match.
    """
    found: list[Any] = []
    position = start
    for batch in batches(data):
        if not batch.plain:
            more, end = batch.through_aiokafka()
            found += [r for r in more if r.offset >= start and (stop is None or r.offset < stop)]
        else:
            end = batch.last
            if end <= start:
                continue
            whole = batch.start == 0 and batch.end == len(data)
            chunk = data if whole else data[batch.start : batch.end]
            if batch.base >= start and (stop is None or end <= stop):
                found += DefaultRecordBatch(chunk)
            else:
                found += [
                    r
                    for r in DefaultRecordBatch(chunk)
                    if r.offset >= start and (stop is None or r.offset < stop)
                ]
        position = max(position, end)
        if stop is not None and position >= stop:
            break
    return found, position


def picked(data: Any, offsets: list[int], first: int) -> tuple[list[Raw], int, int]:
    """The records of ``data`` at ``offsets[first:]`` (ascending) that it holds, decoded
    (the others walked over by their lengths); the index in ``offsets`` of the first one
    left to find (past those found and those the answer shows are gone) and where what
    was read of the answer ends (-1: no whole batch): batches past the last offset
    wanted are not read.

    Raises:
        CorruptBatchError: a batch's CRC-32C does not match.
    """
    found: list[Raw] = []
    i, count, position = first, len(offsets), -1
    for batch in batches(data):
        if i == count:
            break
        if not batch.plain:
            more, end = batch.through_aiokafka()
            walked: Iterator[tuple[int, Raw | int]] = ((r.offset, r) for r in more)
        else:
            end = batch.last
            walked = ((o, at) for o, at in _walk(batch))
        if offsets[i] >= end:
            position = end
            continue
        for offset, where in walked:
            while i < count and offsets[i] < offset:  # not on the partition any more
                i += 1
            if i == count:
                break
            if offsets[i] == offset:
                raw = where if isinstance(where, Raw) else _record(batch.buffer, where, offset)
                found.append(raw)
                i += 1
        while i < count and offsets[i] < end:  # compacted away at the batch's end
            i += 1
        position = end
    return found, i, position
