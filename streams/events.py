"""The record on the log and the table of event types.

Every record carries a log-assigned ``offset``, an ``at`` (timezone-aware UTC), a
``type``, a unique ``id``, an optional ``cause`` (the id of the record that led to it)
and ``data``: the payload as plain JSON (Kubernetes objects stay raw JSON; no client
models are ever built from them). ``prev``, when set, is the record's link in the log's
hash chain (see ``streams/chain.py``); it is not part of the content id.

Ids are content-derived when not given (a hash of the canonical encoding), so the same
input appended twice is the same record, and appends are idempotent by id.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

try:  # hashlib's own blake2b; hashlib itself loads OpenSSL, which start-up need not
    from _blake2 import blake2b
except ImportError:  # not CPython
    from hashlib import blake2b

JSON = dict[str, Any]

#: type -> current payload schema version. Older versions are upcast on read
#: (see ``streams.codec.UPCASTERS``); stored records are never rewritten.
EVENT_TYPES: dict[str, int] = {
    "k8s.watch": 1,
    "metrics.node": 1,
    "metrics.pod": 1,
    "config.applied": 1,
    "trigger.fired": 1,
    "decision.evict": 1,
    "decision.bind": 1,
    "decision.taint": 1,
    "decision.untaint": 1,
    "effect.applied": 1,
    "effect.failed": 1,
    "effect.skipped": 1,
    "log.sealed": 1,
}

DECISION_TYPES = frozenset(
    {"decision.evict", "decision.bind", "decision.taint", "decision.untaint"}
)
EFFECT_TYPES = frozenset({"effect.applied", "effect.failed", "effect.skipped"})


@dataclass(frozen=True, slots=True)
class Event:
    """One record of the log. ``offset`` is -1 until the log assigns one."""

    type: str
    at: datetime
    id: str
    data: JSON
    cause: str | None = None
    offset: int = -1
    v: int = 1
    prev: str | None = None

    def with_offset(self, offset: int) -> Event:
        # direct construction: dataclasses.replace costs ~3x as much, once per appended record
        return build_event(
            self.type, self.at, self.id, self.data, self.cause, offset, self.v, self.prev
        )

    def with_prev(self, prev: str | None) -> Event:
        """This record carrying ``prev`` as its hash-chain link."""
        return build_event(
            self.type, self.at, self.id, self.data, self.cause, self.offset, self.v, prev
        )


# A frozen dataclass's __init__ sets each field through object.__setattr__ (~0.85 µs for an
# Event); setting the slots through their descriptors does the same in ~0.45 µs. Decoding
# builds one Event per record, so the hot paths use build_event; it checks nothing.
_SLOT_SETTERS = tuple(
    vars(Event)[name].__set__
    for name in ("type", "at", "id", "data", "cause", "offset", "v", "prev")
)


def build_event(
    type_: str,
    at: datetime,
    id_: str,
    data: JSON,
    cause: str | None = None,
    offset: int = -1,
    v: int = 1,
    prev: str | None = None,
) -> Event:
    """``Event(type_, at, id_, data, cause, offset, v, prev)``, built faster (no checks:
    the caller has validated the values, as :func:`streams.codec.decode` has)."""
    event: Event = _new(Event)
    s_type, s_at, s_id, s_data, s_cause, s_offset, s_v, s_prev = _SLOT_SETTERS
    s_type(event, type_)
    s_at(event, at)
    s_id(event, id_)
    s_data(event, data)
    s_cause(event, cause)
    s_offset(event, offset)
    s_v(event, v)
    s_prev(event, prev)
    return event


_new = object.__new__


def parse_time(value: str) -> datetime:
    """Parse an RFC 3339 time; a time without zone is rejected (tide never guesses zones).

    Raises ``ValueError`` for anything else, including a time that has no UTC equivalent
    (``0001-01-01T00:00:00+01:00``) and non-ASCII digits.
    """
    if not isinstance(value, str) or not value.isascii():
        raise ValueError(f"time {value!r} is not an ASCII RFC 3339 string")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        raise ValueError(f"time {value!r} has no timezone")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError(f"time {value!r} is out of range") from None


def format_time(at: datetime) -> str:
    """Canonical UTC text: ``2026-11-21T21:00:00Z`` (microseconds only when non-zero)."""
    if at.tzinfo is not UTC:
        at = at.astimezone(UTC)
    # isoformat() is about twice as fast as strftime and gives the same text: seconds,
    # ".ffffff" only when microseconds are non-zero, then "+00:00", replaced by "Z"
    return at.isoformat()[:-6] + "Z"


def content_id(type_: str, at: datetime, data: JSON, cause: str | None = None) -> str:
    """A deterministic id: the hash of the canonical encoding of the record's content."""
    body = orjson.dumps(
        {"at": format_time(at), "type": type_, "cause": cause, "data": data},
        option=orjson.OPT_SORT_KEYS,
    )
    return blake2b(body, digest_size=12).hexdigest()


def make_event(
    type_: str,
    at: datetime,
    data: JSON,
    *,
    cause: str | None = None,
    id: str | None = None,  # the record's field is called id
) -> Event:
    """Build an event, deriving the id from its content when none is given."""
    if type_ not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type_!r}")
    if at.tzinfo is None:
        raise ValueError("event time must be timezone-aware")
    at = at.astimezone(UTC)
    return Event(
        type=type_,
        at=at,
        id=id or content_id(type_, at, data, cause),
        data=data,
        cause=cause,
        v=EVENT_TYPES[type_],
    )
