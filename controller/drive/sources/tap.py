"""Where the sources hand over what they saw: validated, deduplicated, in order.

Every source offers raw objects here; the tap decides what reaches the log. A watch event
whose object is already on the log at the same resourceVersion is dropped (a reconnect
replaying its first event, say), and so is a DELETED of an object the log does not hold;
a relist is turned into only the differences against
:class:`~projections.known.KnownObjects`.
Every payload then goes through :func:`streams.validation.validate`: a bad one is set aside
for the quarantine with its reason, and the stream goes on. What passes is stamped with
the time ``now`` tells and queued, in the order offered, for the writer
(:class:`controller.drive.sources.recorder.Recorder`), which appends it in batches.

A record's id is the hash of what was observed (:func:`observed_id`: its type and
payload), not of when: several recorders of one cluster appending to one log (or one
restarted while the others go on) give the same watch event or sample the same id, and
the log's idempotent append by id keeps it once.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import orjson

from projections.known import KnownObjects, identity_of, key_of
from streams.events import JSON, Event, make_event
from streams.gcpause import paused_gc
from streams.log import Quarantined
from streams.payloads import RawObject
from streams.redact import redact_raw, strip_watch
from streams.validation import ValidationError, validate

__all__ = ["Tap", "TapStats", "observed_id", "observed_id_of"]

Item = Event | Quarantined


def observed_id(type_: str, data: JSON) -> str:
    """The id of an observation: a hash of its type and canonical payload, without the
    time it was recorded (the same object version or sample has one id, whoever saw it)."""
    return observed_id_of(type_, orjson.dumps(data, option=orjson.OPT_SORT_KEYS))


def observed_id_of(type_: str, payload: bytes) -> str:
    """:func:`observed_id` from the payload's canonical bytes (``payload``), which the log
    then stores as they are: the hashed body is ``{"data":<payload>,"type":<type>}``
    (sorted keys, no spaces), fed to the hash in pieces instead of serialised again."""
    h = hashlib.blake2b(b'{"data":', digest_size=12)
    h.update(payload)
    h.update(b',"type":' + orjson.dumps(type_) + b"}")
    return h.hexdigest()


@dataclass
class TapStats:
    """Counts for the progress line and the tests."""

    listed: int = 0
    offered: int = 0
    queued: int = 0
    duplicates: int = 0
    set_aside: int = 0
    relists: dict[str, int] = field(default_factory=dict)


class Tap:
    """The sources' way onto the log (see the module docstring).

    Args:
        known: the fold of what the log holds (updated as records are queued).
        now: stamps each record's ``at`` (the wall clock's ``now``, handed down by the
            command: the sources never read a clock themselves).
    """

    def __init__(self, known: KnownObjects, now: Callable[[], datetime]) -> None:
        self.known = known
        self.now = now
        self.queue: asyncio.Queue[Item] = asyncio.Queue()
        #: each queued event's payload as canonical bytes, by id (the id is their hash),
        #: until the writer takes them with the event (:meth:`payloads`)
        self.encoded: dict[str, bytes] = {}
        self.stats = TapStats()

    def payloads(self, events: Sequence[Event]) -> list[bytes | None]:
        """The canonical payload bytes of ``events`` taken from the queue, for
        :meth:`streams.chain.ChainWriter.append`: computed here for the id, the log stores
        them instead of serialising each payload again (None: not queued here)."""
        take = self.encoded.pop
        return [take(event.id, None) for event in events]

    def relisted(self, resource: str, items: Sequence[RawObject]) -> int:
        """Queue the differences between a full list of ``resource`` and the log; returns
        how many records were queued. Order: deletions (by key), then the list's order."""
        with paused_gc():  # a list of a large cluster: many objects, no cycles
            return self._relisted(resource, items)

    def _relisted(self, resource: str, items: Sequence[RawObject]) -> int:
        self.stats.listed += len(items)
        listed = {key_of(item): item for item in items}
        known = self.known.of(resource)
        before = self.stats.queued
        for key in sorted(set(known) - set(listed)):
            self._emit(resource, "DELETED", known[key].stub())
        for key, item in listed.items():
            was = known.get(key)
            now = identity_of(item)
            if was is not None and was.uid and now.uid and was.uid != now.uid:
                # deleted and created again under the same name while we were not watching
                self._emit(resource, "DELETED", was.stub())
                was = None
            if was is not None and was.resource_version == now.resource_version:
                self.stats.duplicates += 1
                continue
            self.offer(resource, "ADDED" if was is None else "MODIFIED", item)
        return self.stats.queued - before

    def bookmark(self, resource: str, version: str) -> None:
        """Queue a BOOKMARK record: everything of ``resource`` up to ``version`` is on the
        log (written after a list, so that a restart can watch on from there)."""
        if version and self.known.versions.get(resource) != version:
            self._emit(resource, "BOOKMARK", {"metadata": {"resourceVersion": version}})

    def offer(self, resource: str, event: str, obj: RawObject) -> bool:
        """Queue one watch event unless the log already says it; returns whether queued."""
        self.stats.offered += 1
        key = key_of(obj)
        was = self.known.of(resource).get(key) if key else None
        if event == "DELETED" and key and was is None:
            self.stats.duplicates += 1
            return False
        same = was is not None and was.resource_version == identity_of(obj).resource_version
        if event in ("ADDED", "MODIFIED") and same:
            self.stats.duplicates += 1
            return False
        return self._emit(resource, event, obj)

    def sample(self, type_: str, sample: RawObject) -> bool:
        """Queue a metric sample unless its ``timestamp`` did not advance."""
        key = key_of(sample)
        stamp = sample.get("timestamp")
        if key and isinstance(stamp, str):
            if self.known.samples.get((type_, key), "") >= stamp:
                self.stats.duplicates += 1
                return False
            self.known.samples[type_, key] = stamp
        return self._queue(type_, sample, f"{type_} {key or '?'}")

    def _emit(self, resource: str, event: str, obj: RawObject) -> bool:
        data = {"resource": resource, "event": event, "object": obj}
        if not self._queue("k8s.watch", data, f"k8s.watch {resource}"):
            return False
        self.known.note(resource, event, obj)
        return True

    def _queue(self, type_: str, data: JSON, source: str) -> bool:
        try:
            validate(type_, data)
        except ValidationError as exc:
            self.stats.set_aside += 1
            raw = redact_raw(orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode())
            self.queue.put_nowait(Quarantined(source, 0, exc.reason, raw))
            return False
        if type_ == "k8s.watch":
            data = strip_watch(data)
        payload = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
        event = make_event(type_, self.now(), data, id=observed_id_of(type_, payload))
        self.encoded[event.id] = payload
        self.queue.put_nowait(event)
        self.stats.queued += 1
        return True
