"""In-process log: the test double and the replay substrate."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from streams.codec import check_appendable
from streams.events import Event
from streams.log import EventLog, Quarantined


class MemoryLog(EventLog):
    """A list of events with an id index and a condition for subscribers."""

    url = "memory://"

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._ids: set[str] = set()
        self._quarantine: dict[Quarantined, None] = {}  # ordered, and idempotent
        self._grew = asyncio.Event()
        self._seal: tuple[int, str] | None = None

    async def append(self, events: Sequence[Event]) -> list[Event]:
        return self.append_now(events)

    def append_now(self, events: Sequence[Event]) -> list[Event]:
        """Synchronous append (the simulation and replay drive the log without awaiting)."""
        check_appendable(events)
        added: list[Event] = []
        for event in events:
            if event.id in self._ids:
                continue
            self._ids.add(event.id)
            stored = event.with_offset(len(self._events))
            self._events.append(stored)
            added.append(stored)
        if added:
            self._grew.set()
            self._grew = asyncio.Event()
        return added

    @property
    def events(self) -> list[Event]:
        return self._events

    async def read(self, start: int = 0, stop: int | None = None) -> AsyncIterator[Event]:
        end = len(self._events) if stop is None else min(stop, len(self._events))
        for offset in range(max(start, 0), end):
            yield self._events[offset]

    async def subscribe(self, start: int = 0) -> AsyncIterator[Event]:
        offset = max(start, 0)
        while True:
            while offset < len(self._events):
                yield self._events[offset]
                offset += 1
            await self._grew.wait()

    async def head(self) -> int:
        return len(self._events)

    async def contains(self, ids: Sequence[str]) -> set[str]:
        return {i for i in ids if i in self._ids}

    async def records(self, ids: Sequence[str]) -> dict[str, Event]:
        """The stored records with these ids (:class:`streams.conflicts.RecordLookup`)."""
        wanted = {i for i in ids if i in self._ids}
        return {e.id: e for e in self._events if e.id in wanted} if wanted else {}

    async def set_aside(self, items: Sequence[Quarantined]) -> None:
        self._quarantine.update(dict.fromkeys(items))

    async def quarantine(self) -> list[Quarantined]:
        return list(self._quarantine)

    async def seal(self, offset: int, head: str) -> None:
        self._seal = (offset, head)

    async def sealed(self) -> tuple[int, str] | None:
        return self._seal


async def open_url(url: str) -> MemoryLog:
    """A fresh, empty in-process log (``memory://``; every call gives a new one)."""
    return MemoryLog()
