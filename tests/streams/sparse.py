"""A log with sparse offsets, for proving that nothing counts on dense ones.

:class:`SparseLog` wraps a :class:`~streams.backends.memory.MemoryLog` and multiplies its
offsets by :data:`STRIDE` (records at 10, 20, 30, ...; ``head()`` is one past the last),
as a Kafka partition may skip offsets. It keeps the memory log's capabilities.
``open_url("sparse://name")`` opens the sparse view of a memory log kept under ``name``
in :data:`LOGS`, so a test can register the scheme with ``streams.backends.OPENERS`` and
run CLI commands against it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from streams.backends.memory import MemoryLog
from streams.events import Event
from streams.log import EventLog, Quarantined

STRIDE = 10
#: the memory logs behind ``sparse://name`` URLs
LOGS: dict[str, MemoryLog] = {}


def _inner(offset: int) -> int:
    """The first inner offset whose outer offset is ``>= offset``."""
    return max(-(-(offset - STRIDE) // STRIDE), 0)


def _outer(event: Event) -> Event:
    return event.with_offset((event.offset + 1) * STRIDE)


class SparseLog(EventLog):
    """A memory log whose record ``n`` has offset ``(n + 1) * STRIDE``."""

    def __init__(self, inner: MemoryLog | None = None, *, url: str = "sparse://") -> None:
        self.inner = inner if inner is not None else MemoryLog()
        self.url = url

    async def append(self, events: Sequence[Event]) -> list[Event]:
        return [_outer(e) for e in await self.inner.append(events)]

    async def read(self, start: int = 0, stop: int | None = None) -> AsyncIterator[Event]:
        async for event in self.inner.read(_inner(start), None if stop is None else _inner(stop)):
            yield _outer(event)

    async def subscribe(self, start: int = 0) -> AsyncIterator[Event]:
        async for event in self.inner.subscribe(_inner(start)):
            yield _outer(event)

    async def head(self) -> int:
        return await self.inner.head() * STRIDE + 1

    async def contains(self, ids: Sequence[str]) -> set[str]:
        return await self.inner.contains(ids)

    async def set_aside(self, items: Sequence[Quarantined]) -> None:
        await self.inner.set_aside(items)

    async def quarantine(self) -> list[Quarantined]:
        return await self.inner.quarantine()


async def open_url(url: str) -> SparseLog:
    """The sparse view of the memory log named by ``sparse://name`` (created if new)."""
    name = url.split("://", 1)[1]
    return SparseLog(LOGS.setdefault(name, MemoryLog()), url=url)
