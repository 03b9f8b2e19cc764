"""Id collisions: a record whose id is already on the log with different content.

Appends are idempotent by id, so the same record imported twice is a duplicate and adds
nothing. A *different* record under an id the log already holds is not a duplicate but a
conflict: it is set aside with both contents' hashes named (the stored record stays).
The content hash covers everything but the id and the offset: type, ``at``, cause,
payload version and payload, canonically encoded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import orjson

from streams.codec import encode
from streams.events import Event, format_time
from streams.log import EventLog, Quarantined


@runtime_checkable
class RecordLookup(Protocol):
    """A log that can hand back stored records by id (the SQLite and memory backends)."""

    async def records(self, ids: Sequence[str]) -> dict[str, Event]:
        """The stored records among ``ids``, by id."""
        ...


def content_hash(event: Event) -> str:
    """A short hash of what ``event`` says (not its id or offset)."""
    body = orjson.dumps(
        {
            "at": format_time(event.at),
            "type": event.type,
            "cause": event.cause,
            "v": event.v,
            "data": event.data,
        },
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.blake2b(body, digest_size=8).hexdigest()


async def find_conflicts(
    log: EventLog,
    events: Sequence[Event],
    lines: Sequence[int],
    added: Sequence[Event],
    *,
    source: str,
) -> list[Quarantined]:
    """Among ``events`` (read from ``lines`` of ``source``) that ``log`` did not add, the
    ones whose id it holds with other content, set aside with both hashes. A log that
    cannot look records up by id reports none."""
    if len(added) == len(events) or not isinstance(log, RecordLookup):
        return []
    new = {event.id for event in added}
    rest = []
    for line, event in zip(lines, events, strict=True):
        if event.id in new:  # the first of its id in this batch is the one added
            new.discard(event.id)
        else:
            rest.append((line, event))
    stored = await log.records(sorted({event.id for _, event in rest}))
    found = []
    for line, event in rest:
        kept = stored.get(event.id)
        if kept is None:
            continue
        ours, theirs = content_hash(event), content_hash(kept)
        if ours != theirs:
            reason = (
                f"id {event.id} conflicts with offset {kept.offset}: "
                f"content {ours} differs from the stored {theirs}"
            )
            found.append(Quarantined(source, line, reason, encode(event).decode()))
    return found
