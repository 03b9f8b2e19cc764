"""The log port: one ordered, append-only sequence of events.

Contract (tested once in ``tests/streams/log_contract.py`` for every backend):

* ``append(batch)`` is atomic and idempotent by event id: ids already on the log (or
  repeated inside the batch) are skipped; the appended records come back with offsets.
* offsets start at 0 and grow by one per record; ``head()`` is the next offset.
* ``read(start, stop)`` yields records with ``start <= offset < stop`` in offset order.
* ``subscribe(start)`` yields from ``start`` and then waits for new records, forever.
* the quarantine keeps input that could not be parsed or validated, with its reason.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from streams.events import Event


@dataclass(frozen=True, slots=True)
class Quarantined:
    """Input set aside: where it came from, why, and the raw text (nothing is lost)."""

    source: str
    line: int
    reason: str
    raw: str


class LogError(Exception):
    """Root of the log's errors."""


class BackendUnavailableError(LogError):
    """The backend cannot be reached; retrying may help."""

    retriable = True


class EventLog(abc.ABC):
    """An ordered event log (see the module docstring for the contract)."""

    url: str = ""

    @abc.abstractmethod
    async def append(self, events: Sequence[Event]) -> list[Event]:
        """Append a batch atomically; return the records actually added, with offsets."""

    @abc.abstractmethod
    def read(self, start: int = 0, stop: int | None = None) -> AsyncIterator[Event]:
        """Yield records ``start <= offset < stop`` in offset order."""

    @abc.abstractmethod
    def subscribe(self, start: int = 0) -> AsyncIterator[Event]:
        """Yield records from ``start`` on, waiting for new ones."""

    @abc.abstractmethod
    async def head(self) -> int:
        """The offset the next record will get."""

    @abc.abstractmethod
    async def contains(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids are already on the log."""

    @abc.abstractmethod
    async def set_aside(self, items: Sequence[Quarantined]) -> None:
        """Keep bad input in the quarantine."""

    @abc.abstractmethod
    async def quarantine(self) -> list[Quarantined]:
        """Everything set aside, in the order it was set aside."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""

    async def __aenter__(self) -> EventLog:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def read_all(self, start: int = 0, stop: int | None = None) -> list[Event]:
        return [event async for event in self.read(start, stop)]
