"""Synchronous, paged reads of a log: what the reading commands iterate.

The commands that answer from a log (replay, audit, state, report) are synchronous
folds. Reading the whole log into a list first made their memory grow with the log
(~5 KB per record), so a week cost seven times a day. A :class:`LogReader` keeps one
event loop open (``asyncio.Runner``) for the life of the read and pulls the log a page
at a time: only the page being handed out is in memory, and a SQLite page stays encoded
until each row's event is handed out (decoded one at a time, as
:meth:`streams.backends.sqlite.SQLiteLog.read` does, for the same reason).

A backend with :class:`RowPages` (SQLite) is paged through its stored rows, and a narrow
read of a few types (:meth:`LogReader.of_types`: the decisions of a day) walks its type
index instead of the whole log; one with :class:`SubjectPages` (SQLite, once a writer has
indexed it) hands out the records about a pod or node (:meth:`LogReader.about`). Any
other backend is paged through its ``read``.

A log whose coroutines never suspend (``streams.backends.sqlite_reader``: a query on the
caller's thread) is read ``synchronous``: its pages are taken without an event loop, and
``asyncio`` is imported only if a caller runs a coroutine of its own (:meth:`LogReader.run`:
a checkpoint store, say). Start-up of a reading command (issue 26, item 4).
"""

from __future__ import annotations

import heapq
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from streams.codec import StoredRow, stored_events
from streams.events import Event
from streams.log import EventLog

if TYPE_CHECKING:
    import asyncio

PAGE = 1_000
T = TypeVar("T")


@runtime_checkable
class RowPages(Protocol):
    """A log that hands out pages of stored, still encoded rows."""

    async def read_page(
        self, offset: int, limit: int, *, type_: str | None = None
    ) -> list[StoredRow]:
        """Up to ``limit`` rows from ``offset`` on, of one type if given."""


@runtime_checkable
class SubjectPages(Protocol):
    """A log that hands out the stored rows filed under some subjects (streams/subjects.py)."""

    async def read_about(
        self, subjects: Sequence[str], offset: int, limit: int
    ) -> list[StoredRow] | None:
        """Up to ``limit`` rows from ``offset`` on under any of ``subjects``; None when
        the log keeps no such index."""


class LogReader:
    """A log opened for synchronous paged reading (a context manager).

    ``opener`` opens the log (e.g. ``lambda: streams.backends.open_log(url)``); the log
    is closed and the event loop ended on exit. ``synchronous``: the opener and the log's
    own coroutines finish without suspending (see the module docstring), so the log is
    opened, paged and closed without an event loop; one is started only for what
    :meth:`run` is given.
    """

    def __init__(
        self, opener: Callable[[], Coroutine[Any, Any, EventLog]], *, synchronous: bool = False
    ) -> None:
        self._opener = opener
        self._synchronous = synchronous
        self._runner: asyncio.Runner | None = None
        self._log: EventLog | None = None
        self._open = False

    def __enter__(self) -> LogReader:
        self._open = True
        try:
            self._log = self._call(self._opener())
        except BaseException:
            self._end()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._log is not None:
                self._call(self._log.close())
        finally:
            self._end()

    def _end(self) -> None:
        if self._runner is not None:
            self._runner.close()
        self._log, self._runner, self._open = None, None, False

    @property
    def log(self) -> EventLog:
        """The open log."""
        if self._log is None:
            raise RuntimeError("LogReader used outside its with block")
        return self._log

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on the reader's event loop (the log's own; started now if the
        reader is ``synchronous`` and had none)."""
        if not self._open:
            coro.close()
            raise RuntimeError("LogReader used outside its with block")
        if self._runner is None:
            import asyncio

            self._runner = asyncio.Runner()
        return self._runner.run(coro)

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        """One of the log's own coroutines: without an event loop when ``synchronous``."""
        if not self._synchronous or self._runner is not None:
            return self.run(coro)
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        coro.close()
        raise RuntimeError("a synchronous log's coroutine waited: it needs an event loop")

    def head(self) -> int:
        """The log's head (:meth:`streams.log.EventLog.head`)."""
        return self._call(self.log.head())

    def records(self, start: int = 0, stop: int | None = None) -> Iterator[Event]:
        """The records ``start <= offset < stop`` in offset order, a page at a time."""
        log = self.log
        if isinstance(log, RowPages):
            yield from self._rows(log, start, stop, None)
            return
        pages = _pages(log.read(start, stop), PAGE)
        while (page := self._call(_next(pages))) is not None:
            yield from page

    def of_types(self, types: Iterable[str], start: int = 0) -> Iterator[Event]:
        """The records of these types from ``start`` on, in offset order."""
        log = self.log
        wanted = frozenset(types)
        if not isinstance(log, RowPages):
            yield from (e for e in self.records(start) if e.type in wanted)
            return
        streams = [self._rows(log, start, None, t) for t in sorted(wanted)]
        yield from heapq.merge(*streams, key=lambda e: e.offset)

    def about(self, subjects: Sequence[str], start: int = 0) -> Iterator[Event] | None:
        """The records filed under any of ``subjects`` (:mod:`streams.subjects`) from
        ``start`` on, in offset order, a page at a time; None when the log keeps no subject
        index (read :meth:`records` and filter them instead: the same answer, at a scan's
        cost)."""
        log = self.log
        if not isinstance(log, SubjectPages):
            return None
        keys = list(subjects)
        first = self._call(log.read_about(keys, start, PAGE))
        if first is None:
            return None
        return self._about(log, keys, first)

    def _about(self, log: SubjectPages, keys: list[str], rows: list[StoredRow]) -> Iterator[Event]:
        while True:
            yield from stored_events(rows)
            if len(rows) < PAGE:
                return
            more = self._call(log.read_about(keys, rows[-1][0] + 1, PAGE))
            rows = more if more is not None else []

    def stored(self, start: int = 0) -> Iterator[tuple[Event, bytes | None]]:
        """:meth:`records` from ``start`` on, each with its payload's stored bytes when the
        backend keeps them (:class:`RowPages`) and they are the decoded event's (not
        upcast since); None otherwise. A chain check hashes a record's line around them
        (:class:`streams.chain_check.ChainChecker`) instead of encoding the payload again."""
        log = self.log
        if not isinstance(log, RowPages):
            for event in self.records(start):
                yield event, None
            return
        for page in self._pages_of(log, start, None, None):
            for (_, _, _, _, _, v, data, _), event in zip(page, stored_events(page), strict=True):
                yield event, data if event.v == v and isinstance(data, bytes) else None

    def _rows(
        self, log: RowPages, start: int, stop: int | None, type_: str | None
    ) -> Iterator[Event]:
        for page in self._pages_of(log, start, stop, type_):
            yield from stored_events(page)

    def _pages_of(
        self, log: RowPages, start: int, stop: int | None, type_: str | None
    ) -> Iterator[list[StoredRow]]:
        """The stored rows ``start <= offset < stop`` (of one type if given), a page at a
        time, still encoded."""
        offset = max(start, 0)
        while stop is None or offset < stop:
            limit = PAGE if stop is None or type_ is not None else min(PAGE, stop - offset)
            rows = self._call(log.read_page(offset, limit, type_=type_))
            if stop is not None and rows and rows[-1][0] >= stop:  # a type's page, past stop
                yield [row for row in rows if row[0] < stop]
                return
            yield rows
            if len(rows) < limit:
                return
            offset = rows[-1][0] + 1


async def _pages(events: AsyncIterator[Event], size: int) -> AsyncIterator[list[Event]]:
    page: list[Event] = []
    async for event in events:
        page.append(event)
        if len(page) >= size:
            yield page
            page = []
    if page:
        yield page


async def _next(pages: AsyncIterator[list[Event]]) -> list[Event] | None:
    return await anext(pages, None)
