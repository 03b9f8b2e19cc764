"""The canonical encoding of a record, and the upcasting of old payload versions.

Recordings, ``tide log export`` and decision files must be byte-for-byte reproducible,
so there is exactly one way to write a record: a JSON object with sorted keys (nested
ones too), ``at`` in :func:`streams.events.format_time` form, ``cause`` only when set,
``v`` only when it is not 1 and ``prev`` (the hash-chain link) only when set. The same
event always gives the same bytes.

Payload schemas change by bumping ``EVENT_TYPES[type]``; stored records are never
rewritten. Instead an upcaster registered in :data:`UPCASTERS` under
``(type, from_version)`` turns a ``from_version`` payload into a ``from_version + 1``
payload, and :func:`decode` / :func:`from_stored` chain them on read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

import orjson

try:  # hashlib's own blake2b; hashlib itself loads OpenSSL, which start-up need not
    from _blake2 import blake2b
except ImportError:  # not CPython
    from hashlib import blake2b

from streams.events import EVENT_TYPES, JSON, Event, build_event, format_time, parse_time

Upcaster = Callable[[JSON], JSON]
#: a stored row, as the SQLite backend selects it: offset, id, at, type, cause, v, data
#: (the payload, encoded), prev
StoredRow = tuple[int, str, str, str, str | None, int, bytes, str | None]

#: ``(type, from_version) -> upcaster`` returning the payload at ``from_version + 1``.
UPCASTERS: dict[tuple[str, int], Upcaster] = {}

_SORTED = orjson.OPT_SORT_KEYS


class DecodeError(ValueError):
    """A line or stored record that is not a valid event; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def check_appendable(events: Iterable[Event]) -> None:
    """Refuse, before anything is stored, events no log could read back.

    Raises ``ValueError`` for an unknown type or a naive ``at`` (which
    :func:`~streams.events.format_time` would silently read as local time).
    """
    for event in events:
        if event.type not in EVENT_TYPES:
            raise ValueError(f"event {event.id}: unknown event type {event.type!r}")
        if event.at.tzinfo is None:
            raise ValueError(f"event {event.id}: 'at' has no timezone")


def encode(event: Event) -> bytes:
    """The canonical line for ``event`` (no trailing newline)."""
    record: JSON = {
        "at": format_time(event.at),
        "type": event.type,
        "id": event.id,
        "data": event.data,
    }
    if event.cause is not None:
        record["cause"] = event.cause
    if event.v != 1:
        record["v"] = event.v
    if event.prev is not None:
        record["prev"] = event.prev
    return orjson.dumps(record, option=_SORTED)


def encode_payload(data: JSON) -> bytes:
    """A payload's canonical bytes: exactly what :func:`encode` puts after ``"data":``."""
    return orjson.dumps(data, option=_SORTED)


def encode_around(event: Event, payload: bytes) -> bytes:
    """:func:`encode` of ``event``, put together around ``payload`` (its
    :func:`encode_payload`) instead of serialising the payload again.

    A write path that stores the payload's bytes (SQLite, Kafka) serialises each payload
    once this way; ``tests/streams/test_codec_around.py`` holds it to ``encode``.
    """
    before, after = envelope(event)
    return b"".join((before, payload, after))


def line_around(event: Event, payload: bytes, head: bytes, tail: bytes) -> bytes:
    """The canonical line of ``event`` from its parts: ``head`` =
    ``'{"at":"<at>","data":'``, ``payload`` (:func:`encode_payload`), ``tail`` =
    ``',"type":"<type>"}'`` (shared with the Kafka codec's record values,
    ``streams/backends/kafka_codec.py``)."""
    before, after = envelope(event, head, tail)
    return b"".join((before, payload, after))


def envelope(
    event: Event, head: bytes | None = None, tail: bytes | None = None
) -> tuple[bytes, bytes]:
    """The canonical line of ``event`` without its payload: the bytes before and after it.

    A canonical line is a JSON object with sorted keys (``at``, ``cause``, ``data``,
    ``id``, ``prev``, ``type``, ``v``) and no spaces, so its bytes are the fields' own
    serialisations between fixed keys. ``head`` (``'{"at":"<at>","data":'``) and ``tail``
    (``',"type":"<type>"}'``) are computed once per distinct time and type when not
    given (a log's records share few of each). The chain's digest
    (:func:`streams.seal.digest`) hashes the two parts and the stored payload in turn,
    never copying the payload into a line.
    """
    if head is None:
        head = _HEADS.get(event.at) or _head(event.at)
    if tail is None:
        tail = _TAILS.get(event.type) or _tail(event.type)
    cause, prev = event.cause, event.prev
    if cause is not None:  # '{"at":"…"', the cause, then ',"data":'
        head = b"".join((head[:-8], b',"cause":', orjson.dumps(cause), b',"data":'))
    if event.v != 1:  # ',"type":"…"', the version, then '}'
        tail = b"".join((tail[:-1], b',"v":', orjson.dumps(event.v), b"}"))
    if prev is None:
        return head, b"".join((_ID, orjson.dumps(event.id), tail))
    return head, b"".join((_ID, orjson.dumps(event.id), _PREV, orjson.dumps(prev), tail))


def _head(at: datetime) -> bytes:
    """``'{"at":"<at>","data":'`` for time ``at``, kept for the next record at that time
    (equal times give the same text: :func:`~streams.events.format_time` is in UTC, and a
    naive time equals no aware one)."""
    if len(_HEADS) >= _ENVELOPE_MAX:
        _HEADS.clear()
    head = _HEADS[at] = b'{"at":' + orjson.dumps(format_time(at)) + b',"data":'
    return head


def _tail(type_: str) -> bytes:
    """``',"type":"<type>"}'`` for type ``type_``, kept for the next record of it."""
    if len(_TAILS) >= _ENVELOPE_MAX:
        _TAILS.clear()
    tail = _TAILS[type_] = b',"type":' + orjson.dumps(type_) + b"}"
    return tail


_ID = b',"id":'
_PREV = b',"prev":'
#: the envelope parts of :func:`encode_around` by time and by type (results never depend
#: on them; bounded, cleared when full)
_HEADS: dict[datetime, bytes] = {}
_TAILS: dict[str, bytes] = {}
_ENVELOPE_MAX = 4096


def decision_line(event: Event) -> bytes:
    """One line of a decision output file: ``{"at": ..., **data}``, canonical."""
    return orjson.dumps({"at": format_time(event.at), **event.data}, option=_SORTED)


def decode(line: bytes | str) -> Event:
    """Parse one canonical (or hand-written) line back into an event.

    A line without ``id`` gets the content id :func:`streams.events.make_event` would
    give it, hashed over the payload as written (before upcasting), so the same line
    always gets the same id. Raises :class:`DecodeError` naming what is wrong.
    """
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"not JSON: {exc}") from None
    if type(record) is not dict:
        raise DecodeError(f"not a JSON object but {json_kind(record)}")
    return decode_record(record)


def decode_record(record: JSON) -> Event:
    """Build an event from an already parsed line (see :func:`decode`)."""
    # Fast path: a well-formed record with an id, of a current payload version (every
    # record exported from a log). Anything else takes the checking path below.
    get = record.get
    raw_at = get("at")
    type_ = get("type")
    id_ = get("id")
    data = get("data")
    cause = get("cause")
    v = get("v", 1)
    prev = get("prev")
    if (
        type(type_) is str
        and type(id_) is str
        and id_
        and type(data) is dict
        and type(raw_at) is str
        and (cause is None or type(cause) is str)
        and type(v) is int
        and EVENT_TYPES.get(type_) == v
        and (prev is None or type(prev) is str)
    ):
        at = _AT_CACHE.get(raw_at)
        if at is not None:
            return build_event(type_, at, id_, data, cause, -1, v, prev)
    return decode_record_encoded(record)[0]


def decode_record_encoded(
    record: JSON, line: bytes | None = None, *, encoded: bytes | None = None
) -> tuple[Event, bytes | None]:
    """:func:`decode_record`, plus the payload's canonical bytes when they were computed.

    A line without ``id`` has its payload serialised for the content id anyway; a bulk
    import hands those bytes to the log instead of serialising the payload twice. They
    are ``None`` when the line had an id, or when its payload was upcast (they would
    describe the old version). ``encoded``, when given, is the payload's canonical bytes
    already computed by the caller (:func:`streams.limits.bounded_payload`).
    """
    raw_at = record.get("at")
    if raw_at is None:
        raise DecodeError("missing 'at'")
    type_ = record.get("type")
    if type_ is None:
        raise DecodeError("missing 'type'")
    if not isinstance(type_, str):
        raise DecodeError(f"'type' is {json_kind(type_)}, not a string")
    if type_ not in EVENT_TYPES:
        raise DecodeError(f"unknown event type {type_!r}")
    if not isinstance(raw_at, str):
        raise DecodeError(f"'at' is {json_kind(raw_at)}, not an RFC 3339 string")
    try:
        at = parse_at(raw_at)
    except ValueError:
        raise DecodeError(f"'at' {raw_at!r} is not an RFC 3339 time with a zone") from None
    data = record.get("data")
    if not isinstance(data, dict):
        raise DecodeError(f"'data' is {json_kind(data)}, not an object")
    cause = record.get("cause")
    if cause is not None and not isinstance(cause, str):
        raise DecodeError(f"'cause' is {json_kind(cause)}, not a string")
    v = record.get("v", 1)
    if type(v) is not int or v < 1:
        raise DecodeError(f"'v' {v!r} is not a positive integer")
    prev = record.get("prev")
    if prev is not None and not isinstance(prev, str):
        raise DecodeError(f"'prev' is {json_kind(prev)}, not a string")
    id_ = record.get("id")
    payload: bytes | None = None
    if id_ is None:
        payload = encoded if encoded is not None else orjson.dumps(data, option=_SORTED)
        id_ = content_id_encoded(type_, at, payload, cause)
    elif not isinstance(id_, str) or not id_:
        raise DecodeError(f"'id' {id_!r} is not a non-empty string")
    if v != EVENT_TYPES[type_]:
        v, data = upcast(type_, v, data)
        payload = None
    return build_event(type_, at, id_, data, cause, -1, v, prev), payload


def content_id_encoded(type_: str, at: datetime, payload: bytes, cause: str | None) -> str:
    """:func:`streams.events.content_id` from the payload's canonical bytes.

    The hashed body is ``{"at","cause","data","type"}`` with sorted keys, so it can be
    assembled around ``payload`` (``orjson.dumps(data, OPT_SORT_KEYS)``) without
    serialising the payload again. The time and type parts are :func:`encode_around`'s
    (kept per distinct time and type), and the parts are hashed in turn rather than
    copied into one body first.
    """
    head = _HEADS.get(at) or _head(at)
    digest = blake2b(head[:-8], digest_size=12)  # '{"at":"…"'
    digest.update(_NO_CAUSE if cause is None else b',"cause":' + orjson.dumps(cause) + b',"data":')
    digest.update(payload)
    digest.update(_TAILS.get(type_) or _tail(type_))
    return digest.hexdigest()


_NO_CAUSE = b',"cause":null,"data":'


def from_stored(
    offset: int,
    id_: str,
    at: str,
    type_: str,
    cause: str | None,
    v: int,
    data: bytes | str,
    prev: str | None = None,
) -> Event:
    """Rebuild an event from a storage row (the SQLite backend's column order)."""
    payload = orjson.loads(data)
    if v != EVENT_TYPES.get(type_, v):
        v, payload = upcast(type_, v, payload)
    return build_event(type_, parse_at(at), id_, payload, cause, offset, v, prev)


def stored_events(rows: Iterable[StoredRow]) -> Iterator[Event]:
    """:func:`from_stored` of each row, in one loop: the read path of a whole log (a
    replay decodes every row) without a call and an argument tuple per row for the usual
    record (current payload version, a time seen before); any other takes
    :func:`from_stored`. Rows are decoded one at a time, as they are handed out."""
    loads, versions, times, build = orjson.loads, EVENT_TYPES, _AT_CACHE, build_event
    for offset, id_, at, type_, cause, v, data, prev in rows:
        parsed = times.get(at)
        if parsed is None or versions.get(type_) != v:
            yield from_stored(offset, id_, at, type_, cause, v, data, prev)
        else:
            yield build(type_, parsed, id_, loads(data), cause, offset, v, prev)


def upcast(type_: str, v: int, data: JSON) -> tuple[int, JSON]:
    """Bring a payload of version ``v`` up to the current version of its type."""
    current = EVENT_TYPES.get(type_)
    if current is None:
        raise DecodeError(f"unknown event type {type_!r}")
    if v > current:
        raise DecodeError(f"{type_} v{v} is newer than this tide understands (v{current})")
    while v < current:
        upcaster = UPCASTERS.get((type_, v))
        if upcaster is None:
            raise DecodeError(f"no upcaster for {type_} v{v} -> v{v + 1}")
        data = upcaster(data)
        v += 1
    return v, data


#: ``at`` text -> parsed time, filled by :func:`parse_at` (results never depend on it)
_AT_CACHE: dict[str, datetime] = {}
_AT_CACHE_LIMIT = 1 << 16


def parse_at(text: str) -> datetime:
    """:func:`streams.events.parse_time`, cached: many records share one ``at``."""
    at = _AT_CACHE.get(text)
    if at is None:
        at = parse_time(text)
        if len(_AT_CACHE) >= _AT_CACHE_LIMIT:
            _AT_CACHE.clear()
        _AT_CACHE[text] = at
    return at


def json_kind(value: Any) -> str:
    """How a JSON value is described in error messages (``an object``, ``null``...)."""
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )
