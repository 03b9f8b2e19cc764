"""The seal: a record on the log itself saying its writer ended cleanly there.

Why: a seal kept beside the records (the SQLite ``seal`` table) is lost when the records
travel, so an exported recording or a log on Kafka could not tell a cut tail from an
intact one. A ``log.sealed`` record travels with them instead: a writer that ends cleanly
appends one after its last record (``at`` = that record's ``at``, ``data.head`` = its
hash), linked into the chain like any record, so export, import and every backend carry
it, and whoever cuts the tail cuts the seal too.

Which logs must end in a seal is stated by their first record: a chain started by a
writer that seals its logs begins with ``run:<id>`` + :data:`SEALING`. Chains started
before (``run:<id>`` alone, the golden logs' exports among them) are reported "not
sealed" and never failed for it; for a sealing chain a missing final seal names the last
offset the tail may have been cut after.

Several writers sharing one log with no lock to take turns by (replicas of ``tide run``
on Kafka) each chain their own records, a batch at a time: every record of a writer's
batch carries ``@<writer>/<anchor>``, the first batch's anchor a first link and each
next one :func:`group_anchor` of the previous anchor and the records that carried it.
A record another writer already stored is dropped from the batch by the backend without
breaking anything (the next anchor covers only what was stored), and each writer seals
its own chain; such a log is complete when every writer's last record is its seal.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from streams.codec import encode, envelope
from streams.events import Event, make_event

SEAL_TYPE = "log.sealed"
#: what the first record's link ends with when its chain is one that is sealed
SEALING = "+sealed"
RUN_PREFIX = "run:"


def genesis(run: str | None) -> str:
    """The first record's link for a new, sealing chain of run ``run``."""
    return RUN_PREFIX + (run or "unnamed") + SEALING


def parse_genesis(link: str | None) -> tuple[str | None, bool]:
    """``(run id, sealing)`` from a first record's link (``(None, False)`` if none)."""
    if link is None or not link.startswith(RUN_PREFIX):
        return None, False
    body = link.removeprefix(RUN_PREFIX)
    sealing = body.endswith(SEALING)
    run = body.removesuffix(SEALING) if sealing else body
    return run or None, sealing


def seal_record(at: datetime, head: str) -> Event:
    """The seal after a record at time ``at`` whose hash is ``head`` (unlinked yet)."""
    return make_event(SEAL_TYPE, at, {"head": head})


def is_seal(event: Event | None) -> bool:
    """Whether ``event`` is a seal record."""
    return event is not None and event.type == SEAL_TYPE


#: how a writer's own link starts when several writers share a log (``streams/chain.py``)
WRITER_PREFIX = "@"


def digest(event: Event, payload: bytes | None = None) -> str:
    """The hash of a record's canonical encoding (its ``prev`` included); ``payload``,
    when given, is ``event.data``'s canonical bytes (:func:`streams.codec.encode_payload`),
    which are then hashed between the line's other parts (:func:`streams.codec.envelope`)
    instead of serialising the payload again or copying it into a line."""
    if payload is None:
        return digest_line(encode(event))
    before, after = envelope(event)
    h = _blake2b(before, digest_size=16)
    h.update(payload)
    h.update(after)
    return h.hexdigest()


def digest_line(line: bytes) -> str:
    """The hash of a record whose canonical line is ``line``."""
    return _blake2b(line, digest_size=16).hexdigest()


_blake2b = hashlib.blake2b


def writer_link(writer: str, link: str) -> str:
    """``link`` (a hash or a first link) as writer ``writer``'s own chain link."""
    return f"{WRITER_PREFIX}{writer}/{link}"


def split_writer_link(prev: str | None) -> tuple[str, str] | None:
    """``(writer, link)`` of a writer's own chain link, or None for any other link."""
    if prev is None or not prev.startswith(WRITER_PREFIX) or "/" not in prev:
        return None
    writer, _, link = prev[len(WRITER_PREFIX) :].partition("/")
    return writer, link


def group_anchor(anchor: str, digests: list[str]) -> str:
    """The link a writer's next batch carries: the hash of its previous link and of the
    records that carried it (their digests, in log order)."""
    h = hashlib.blake2b(anchor.encode(), digest_size=16)
    for value in digests:
        h.update(value.encode())
    return h.hexdigest()
