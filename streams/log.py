"""The log port: one ordered, append-only sequence of events.

Contract (tested once in ``tests/streams/log_contract.py`` for every backend):

* ``append(batch)`` is atomic and idempotent by event id: ids already on the log (or
  repeated inside the batch) are skipped; the appended records come back with offsets.
* offsets are strictly increasing in log order, and nothing more: they need not start at
  0 nor grow by one (a Kafka partition skips offsets for transaction markers and after
  compaction). ``head()`` is greater than every offset on the log and no greater than the
  offset of any record appended later; ``head() - 1`` need not be a record.
* ``read(start, stop)`` yields the records with ``start <= offset < stop`` (half-open) in
  offset order. The record after offset ``n`` is the first that ``read(n + 1)`` yields;
  ``n + 1`` itself need not be a record.
* ``subscribe(start)`` yields from ``start`` and then waits for new records, forever.

A position in the log is therefore "the last folded offset + 1": it says where to read
next, not how many records lie before it. The memory and SQLite backends happen to give
dense offsets (0, 1, 2, ...; ``head()`` is the record count) and their own tests say so;
no other code may count on it.

Capabilities a backend may have, each a small protocol with its own contract test
(``tests/streams/capability_contracts.py``), checked with ``isinstance`` by the callers
that need them (:func:`quarantine_of`, :func:`id_index_of`): :class:`Quarantine` keeps
input that could not be parsed or validated, with its reason; :class:`IdIndex` answers
which event ids are already on the log.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

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


class NotALogError(LogError):
    """The path names something that is not a log of this kind (a user's own SQLite file,
    an empty file, a directory): nothing was read from it or written to it."""


class CapabilityError(LogError):
    """The backend lacks a capability the caller needs (a quarantine, an id index)."""


class EventLog(abc.ABC):
    """An ordered event log (see the module docstring for the contract)."""

    url: str = ""

    @abc.abstractmethod
    async def append(self, events: Sequence[Event]) -> list[Event]:
        """Append a batch atomically; return the records actually added, with offsets."""

    @abc.abstractmethod
    def read(self, start: int = 0, stop: int | None = None) -> AsyncIterator[Event]:
        """Yield records ``start <= offset < stop`` in offset order (half-open)."""

    @abc.abstractmethod
    def subscribe(self, start: int = 0) -> AsyncIterator[Event]:
        """Yield records from ``start`` on, waiting for new ones."""

    @abc.abstractmethod
    async def head(self) -> int:
        """A bound above every offset on the log, at most the next record's offset."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""

    async def __aenter__(self) -> EventLog:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def read_all(self, start: int = 0, stop: int | None = None) -> list[Event]:
        return [event async for event in self.read(start, stop)]


@runtime_checkable
class Quarantine(Protocol):
    """A log that keeps bad input aside (idempotent: the same item is kept once)."""

    async def set_aside(self, items: Sequence[Quarantined]) -> None:
        """Keep bad input in the quarantine."""

    async def quarantine(self) -> list[Quarantined]:
        """Everything set aside, in the order it was first set aside."""


@runtime_checkable
class IdIndex(Protocol):
    """A log that can say which event ids it holds."""

    async def contains(self, ids: Sequence[str]) -> set[str]:
        """Which of these ids are already on the log."""


def quarantine_of(log: EventLog) -> Quarantine:
    """``log`` as a :class:`Quarantine`, or a :class:`CapabilityError` naming the log."""
    if not isinstance(log, Quarantine):
        raise CapabilityError(f"the log {log.url or type(log).__name__} keeps no quarantine")
    return log


def id_index_of(log: EventLog) -> IdIndex:
    """``log`` as an :class:`IdIndex`, or a :class:`CapabilityError` naming the log."""
    if not isinstance(log, IdIndex):
        raise CapabilityError(f"the log {log.url or type(log).__name__} has no id index")
    return log
