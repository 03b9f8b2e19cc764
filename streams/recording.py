"""JSON Lines recordings: reading them onto a log and writing logs back out.

A recording is one event per line (an object with ``at``, ``type``, ``data`` and an
optional ``id``). Reading never stops at
a bad line: a line that is not JSON, not an object, lacks ``at`` or ``type``, has a bad
``at``, an unknown type or a payload that fails :func:`streams.validation.validate` is
set aside as a :class:`~streams.log.Quarantined` with its line number and reason, and
everything else goes on. So is a line beyond the bounds of :mod:`streams.limits` (too
long, nested too deep, an ``at`` outside the sane range). Blank lines are ignored. A
line without ``id`` gets the content id, so importing the same recording twice adds
nothing the second time; a line whose id is on the log with other content is a conflict,
set aside naming both contents' hashes.

Reading is batched (recordings hold hundreds of thousands of ~6 KB pods) and
:func:`import_recording` overlaps parsing the next batch with storing the previous one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Generator, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

import orjson

from streams.chain import ChainWriter
from streams.codec import (
    DecodeError,
    content_id_encoded,
    decode_record_encoded,
    encode,
    encode_around,
    json_kind,
)
from streams.conflicts import find_conflicts
from streams.events import EVENT_TYPES, JSON, Event, build_event
from streams.gcpause import paused_gc
from streams.limits import (
    MAX_DEPTH,
    MAX_LINE_BYTES,
    LimitError,
    bounded_payload,
    check_nesting,
    check_time,
)
from streams.log import EventLog, Quarantined, quarantine_of
from streams.redact import redact_raw, strip_watch
from streams.validation import Extra, ValidationError, validate

Source = str | Path | IO[bytes]

BATCH_SIZE = 2_000
_BOM = b"\xef\xbb\xbf"
#: lines of this payload version take :func:`_parse_stripped` (older ones are upcast first)
_WATCH_V = EVENT_TYPES["k8s.watch"]


@dataclass(frozen=True, slots=True)
class Batch:
    """Consecutive lines of a recording: the events read, and the lines set aside."""

    events: list[Event]
    lines: list[int]  # the line number of each event
    bad: list[Quarantined]
    position: int  # bytes of the recording consumed so far
    #: per event, its payload's canonical bytes when they were computed (lines without
    #: an id), for :meth:`streams.chain.EncodedAppend.append_encoded`
    payloads: list[bytes | None] = field(default_factory=list)


@dataclass(slots=True)
class ImportSummary:
    """What :func:`import_recording` did."""

    imported: int = 0
    duplicates: int = 0
    set_aside: list[Quarantined] = field(default_factory=list)
    #: of ``set_aside``: lines whose id is on the log with other content
    conflicts: int = 0


def parse_line(raw: bytes, *, source: str, line: int) -> Event | Quarantined:
    """One line of a recording: the event, or why it was set aside."""
    parsed = _parse(raw, source, line)
    return parsed if isinstance(parsed, Quarantined) else parsed[0]


def _parse(
    raw: bytes, source: str, line: int, extra: Extra | None = None
) -> tuple[Event, bytes | None] | Quarantined:
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc) or "recursion" in str(exc):  # deeper than orjson reads
            return _aside(source, line, f"nested deeper than {MAX_DEPTH} levels", raw)
        return _aside(source, line, f"not JSON: {exc}", raw)
    if not isinstance(record, dict):
        return _aside(source, line, f"not a JSON object but {json_kind(record)}", raw)
    data = record.get("data")
    if record.get("type") == "k8s.watch" and type(data) is dict and record.get("v", 1) == _WATCH_V:
        return _parse_stripped(record, data, raw, source, line, extra)
    try:
        bounded = bounded_payload(data) if isinstance(data, dict) else None
    except LimitError as exc:
        return _aside(source, line, f"'data' is {exc.reason}", raw)
    try:
        event, payload = decode_record_encoded(record, encoded=bounded)
        check_time(event.at)
        validate(event.type, event.data, extra=extra)
    except (DecodeError, ValidationError, LimitError) as exc:
        return _aside(source, line, exc.reason, raw)
    if payload is None and event.data is data:  # not upcast: the bytes describe it
        payload = bounded
    if event.type == "k8s.watch":
        stripped = strip_watch(event.data)
        if stripped is not event.data:  # secrets dropped: the id is of what is kept
            # serialised once, for the id and for the log (the store would otherwise
            # serialise the payload again)
            payload = orjson.dumps(stripped, option=orjson.OPT_SORT_KEYS)
            given = record.get("id")
            id_ = (
                given
                if isinstance(given, str)
                else content_id_encoded(event.type, event.at, payload, event.cause)
            )
            event = build_event(event.type, event.at, id_, stripped, event.cause, -1, event.v)
    return event, payload


def _parse_stripped(
    record: JSON, data: JSON, raw: bytes, source: str, line: int, extra: Extra | None
) -> tuple[Event, bytes | None] | Quarantined:
    """:func:`_parse` of a current-version ``k8s.watch`` line (nearly every line of a
    recording): its object stripped before the payload is serialised, so the stored
    bytes and the content id are computed once, of what is kept. (The general path
    serialises and hashes the whole payload, then the stripped one again: ~0.1 s per
    thousand pods.) Checks and reasons are the general path's, in its order."""
    try:
        check_nesting(data, raw)  # before stripping, which recurses into pod templates
    except LimitError as exc:
        return _aside(source, line, f"'data' is {exc.reason}", raw)
    kept = strip_watch(data)
    payload = orjson.dumps(kept, option=orjson.OPT_SORT_KEYS)
    try:
        event, _ = decode_record_encoded({**record, "data": kept}, encoded=payload)
        check_time(event.at)
        validate(event.type, data, extra=extra)  # the object as recorded
    except (DecodeError, ValidationError, LimitError) as exc:
        return _aside(source, line, exc.reason, raw)
    return event, payload


def read_batches(
    source: Source,
    *,
    size: int = BATCH_SIZE,
    extra: Extra | None = None,
    canonical: bool = False,
) -> Generator[Batch, None, None]:
    """Read a recording (a path or a binary stream) in batches of up to ``size`` events.

    ``extra`` adds a caller's validation rule per event type (a failing line is set aside).
    ``canonical``: an event's payload bytes are kept only when they are also the decoded
    payload's own key order (its line is canonical, :func:`is_canonical`, or, for a watch
    event the reader stripped, its payload encodes to them unsorted).
    """
    with ExitStack() as stack:
        name = _name(source)
        if isinstance(source, str | Path):
            stream: IO[bytes] = stack.enter_context(Path(source).open("rb", buffering=1 << 20))
        else:
            stream = source
        batch = Batch([], [], [], 0)
        position = 0
        for line_no, (raw, length) in enumerate(_bounded_lines(stream), 1):
            position += length
            if line_no == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            if length > MAX_LINE_BYTES + 1:  # cut by _bounded_lines
                reason = f"line is longer than {MAX_LINE_BYTES} bytes"
                parsed: tuple[Event, bytes | None] | Quarantined = _aside(
                    name, line_no, reason, raw[:200]
                )
            elif not raw or raw.isspace():
                continue
            else:
                parsed = _parse(raw, name, line_no, extra)
            if isinstance(parsed, Quarantined):
                batch.bad.append(parsed)
                continue
            event, payload = parsed
            if canonical and payload is not None and not _in_order(raw, event, payload):
                parsed = event, None
            batch.events.append(parsed[0])
            batch.payloads.append(parsed[1])
            batch.lines.append(line_no)
            if len(batch.events) >= size:
                yield replace(batch, position=position)
                batch = Batch([], [], [], 0)
        if batch.events or batch.bad:
            yield replace(batch, position=position)


def is_canonical(raw: bytes, event: Event, payload: bytes) -> bool:
    """Whether the line ``raw`` (its newline included) is ``event``'s canonical encoding
    (:func:`streams.codec.encode`, its id there or not) around ``payload``.

    Why: such a line's payload was decoded from exactly ``payload``, the sorted-key bytes,
    so the decoded dicts hold their keys in that order at every level, and a consumer
    may keep or store ``payload`` instead of serialising the dict again (the simulation's
    read-ahead, spool and simulated cluster) and decode an equal dict, keys in the same
    order, from it.
    """
    line = encode_around(event, payload) + b"\n"
    if raw == line:
        return True
    # without its id: the id's part is the last one of the line that names it
    id_part = b',"id":' + orjson.dumps(event.id)
    at = line.rfind(id_part)
    return raw == line[:at] + line[at + len(id_part) :]


def _in_order(raw: bytes, event: Event, payload: bytes) -> bool:
    """Whether ``payload``, ``event``'s canonical payload bytes, is also its own key order.
    A watch event whose object was stripped (:func:`streams.redact.strip_watch`) is no
    longer its line's: proven by encoding it unsorted, once, which its consumers' reuse
    of the bytes repays (only watch payloads are reused)."""
    if is_canonical(raw, event, payload):
        return True
    return event.type == "k8s.watch" and orjson.dumps(event.data) == payload


def _bounded_lines(stream: IO[bytes]) -> Iterator[tuple[bytes, int]]:
    """Each line and its size in bytes; a line over :data:`MAX_LINE_BYTES` is cut there
    (the rest is read and dropped in pieces, never held whole)."""
    while raw := stream.readline(MAX_LINE_BYTES + 1):
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw, len(raw)
            continue
        size = len(raw)
        while rest := stream.readline(MAX_LINE_BYTES):
            size += len(rest)
            if rest.endswith(b"\n"):
                break
        yield raw[:MAX_LINE_BYTES], max(size, MAX_LINE_BYTES + 2)


def read_recording(source: Source, *, extra: Extra | None = None) -> Iterator[Event | Quarantined]:
    """Read a recording line by line: each event, or a ``Quarantined``, in line order.

    (An event's line number is in :attr:`Batch.lines` when :func:`read_batches` is used.)
    """
    for batch in read_batches(source, extra=extra):
        if not batch.bad:
            yield from batch.events
            continue
        bad = iter(batch.bad)
        pending = next(bad, None)
        for line, event in zip(batch.lines, batch.events, strict=True):
            while pending is not None and pending.line < line:
                yield pending
                pending = next(bad, None)
            yield event
        if pending is not None:
            yield pending
        yield from bad


def write_recording(events: Iterable[Event], dest: str | Path | IO[bytes]) -> int:
    """Write events as canonical lines to a path or binary stream; return how many."""
    with ExitStack() as stack:
        if isinstance(dest, str | Path):
            stream: IO[bytes] = stack.enter_context(Path(dest).open("wb"))
        else:
            stream = dest
        count = 0
        chunk: list[bytes] = []
        for event in events:
            chunk.append(encode(event))
            if len(chunk) >= BATCH_SIZE:
                count += _write_chunk(stream, chunk)
                chunk = []
        count += _write_chunk(stream, chunk)
        return count


async def import_recording(
    source: Source,
    log: EventLog,
    *,
    batch_size: int = BATCH_SIZE,
    on_progress: Callable[[int], None] | None = None,
    extra: Extra | None = None,
    summary: ImportSummary | None = None,
) -> ImportSummary:
    """Append a recording to ``log``, setting bad lines aside there too.

    ``summary``: filled in as the import goes (and returned), so that a caller whose
    import failed half-way (the broker went away) can say what was written before.

    Bad lines need a log with a :class:`~streams.log.Quarantine`; on one without, the
    first bad line stops the import with a :class:`~streams.log.CapabilityError` (the
    batches before it are on the log; importing again skips them).

    Each batch is one atomic, idempotent append, linked into the log's hash chain
    (:class:`~streams.chain.ChainWriter`, which also holds the writer lock). The next
    batch is parsed in a worker thread while this coroutine stores the current one, so
    the event loop stays free to drive the backend (whose driver releases the GIL while
    it writes). ``on_progress``
    is called with the bytes of the recording consumed after each batch.

    The cyclic garbage collector is paused meanwhile: parsed JSON holds no cycles, and
    rescanning the ~200,000 containers of a batch of pods halves the parse rate.
    """
    summary = ImportSummary() if summary is None else summary
    batches = read_batches(source, size=batch_size, extra=extra)
    sent = 0
    async with ChainWriter(log, adopt=True) as writer:
        sent = await _import(batches, log, writer, summary, on_progress, name=_name(source))
    summary.duplicates = sent - summary.imported - summary.conflicts
    return summary


async def _import(
    batches: Generator[Batch, None, None],
    log: EventLog,
    writer: ChainWriter,
    summary: ImportSummary,
    on_progress: Callable[[int], None] | None,
    *,
    name: str,
) -> int:
    sent = 0
    with paused_gc():
        ahead = asyncio.ensure_future(asyncio.to_thread(next, batches, None))
        try:
            while (batch := await ahead) is not None:
                ahead = asyncio.ensure_future(asyncio.to_thread(next, batches, None))
                if batch.bad:
                    await quarantine_of(log).set_aside(batch.bad)
                    summary.set_aside.extend(batch.bad)
                if batch.events:
                    sent += len(batch.events)
                    added = await writer.append(batch.events, batch.payloads)
                    summary.imported += len(added)
                    clashes = await find_conflicts(
                        log, batch.events, batch.lines, added, source=name
                    )
                    if clashes:
                        await quarantine_of(log).set_aside(clashes)
                        summary.set_aside.extend(clashes)
                        summary.conflicts += len(clashes)
                if on_progress is not None:
                    on_progress(batch.position)
        finally:
            # never close the generator while the worker thread may still be inside it
            await asyncio.gather(ahead, return_exceptions=True)
            batches.close()
    return sent


def _name(source: Source) -> str:
    if isinstance(source, str | Path):
        return str(source)
    return str(getattr(source, "name", "<stream>"))


async def export_log(
    log: EventLog,
    dest: IO[bytes],
    *,
    start: int = 0,
    stop: int | None = None,
    types: Collection[str] = (),
) -> int:
    """Write records ``start <= offset < stop`` (of ``types``, if given) as canonical
    lines to a binary stream; return how many were written."""
    count = 0
    chunk: list[bytes] = []
    async for event in log.read(start, stop):
        if types and event.type not in types:
            continue
        chunk.append(encode(event))
        if len(chunk) >= BATCH_SIZE:
            count += _write_chunk(dest, chunk)
            chunk = []
    return count + _write_chunk(dest, chunk)


def _write_chunk(stream: IO[bytes], chunk: list[bytes]) -> int:
    if chunk:
        stream.write(b"\n".join(chunk) + b"\n")
    return len(chunk)


def _aside(source: str, line: int, reason: str, raw: bytes) -> Quarantined:
    text = raw.decode("utf-8", "backslashreplace").rstrip("\r\n")
    return Quarantined(source=source, line=line, reason=reason, raw=redact_raw(text))
