"""The Kafka log's subject index: who builds it, and how a reader answers from it.

On SQLite the log's own tables index what each record is about
(``streams.backends.sqlite_subjects``); a Kafka topic cannot, so without this module
``tide audit timeline`` and ``tide audit decisions --node/--namespace`` scan the topic.
The index lives in the local SQLite file the ``checkpoints=`` option names
(``streams.backends.sqlite_kafka_index``: subject → offsets, and the offset it is
complete up to).

* **Who builds it: the writers.** Every :class:`~streams.backends.kafka.KafkaLog`
  opened to write (``tide record``, ``tide run``, ``tide log import``, ``tide simulate
  --log``) with a ``checkpoints=`` file extends the index after each append, under the
  append lock (:class:`SubjectIndexer`): the records it appended right where the index
  ends are indexed from the events in hand; when another writer's records (or a gap: an
  index absent or behind) lie between the index's end and the batch, that range is read
  back from the topic and indexed first. Only the first record of each id is indexed —
  the one every reader hands out. A failure to write the file costs one warning line
  and the index of that handle, never the append.
* **A reader never writes.** :func:`pages_about` fetches the indexed offsets (a fetch at
  the first not found yet: it returns the whole record batch holding it, and the rest of
  the answer serves the next offsets; only the records wanted are decoded) and then
  reads the topic's *tail* beyond the index's mark, filtering it by
  :func:`streams.subjects.subjects_of`: an index behind the head (or one no writer has
  touched since) still gives the full scan's answer, at the tail's cost.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from itertools import pairwise
from typing import Any

from streams.backends.kafka_batches import picked
from streams.backends.kafka_codec import Record, decode_value
from streams.backends.kafka_fetch import Fetcher
from streams.backends.kafka_reader import DATA_WAIT_MS, STUCK
from streams.backends.kafka_url import KafkaTarget
from streams.backends.sqlite_kafka_index import IndexFile, IndexWriteError, Warn
from streams.events import Event
from streams.log import BackendUnavailableError
from streams.subjects import subjects_of

#: indexed records decoded and handed out at once
PAGE = 1_000
#: what one fetch of a lookup asks for (the broker sends at least the batch asked into)
LOOKUP_BYTES = 1024 * 1024


def stderr_line(line: str) -> None:
    """Print one warning line on stderr."""
    print(line, file=sys.stderr)


def once(warn: Warn) -> Warn:
    """``warn``, saying each distinct line only once (a reader asks the index twice for a
    node and its zones, and warns once)."""
    said: set[str] = set()

    def say(line: str) -> None:
        if line not in said:
            said.add(line)
            warn(line)

    return say


def rows_of(events: Sequence[Event]) -> list[tuple[str, int]]:
    """The index rows ``(subject, offset)`` of events that carry their offsets."""
    return [(subject, event.offset) for event in events for subject in subjects_of(event)]


class SubjectIndexer:
    """A writer's side of the index (see the module docstring)."""

    def __init__(self, file: IndexFile, warn: Warn) -> None:
        self._file: IndexFile | None = file
        self._warn = warn

    @classmethod
    def open(cls, target: KafkaTarget, *, warn: Warn) -> SubjectIndexer | None:
        """The index in the ``checkpoints=`` file of ``target`` (created if missing), or
        None when the URL names no such file or it cannot be used (one warning line)."""
        if target.checkpoints is None:
            return None
        file = IndexFile.open(target.checkpoints, target.topic, warn=warn)
        return None if file is None else cls(file, warn)

    @property
    def upto(self) -> int | None:
        """Where the index is complete up to, as this handle knows; None once disabled."""
        return None if self._file is None else self._file.upto

    async def extend(
        self,
        added: Sequence[Event],
        spans: Sequence[tuple[int, int]],
        *,
        scan: Callable[[int, int], Awaitable[list[Event]]],
    ) -> None:
        """Index up to the end of the last of ``spans`` (the ``[base, end)`` of each record
        batch just appended, whose first records are ``added``). ``scan(start, stop)``
        reads back the first records of ``[start, stop)`` from the topic: used when the
        batches do not start where the index ends."""
        file = self._file
        if file is None or not spans:
            return
        start, end = file.upto, spans[-1][1]
        if end <= start:
            return
        contiguous = spans[0][0] == start and all(a[1] == b[0] for a, b in pairwise(spans))
        try:
            events = list(added) if contiguous else await scan(start, end)
            file.extend(rows_of(events), start=start, end=end)
        except IndexWriteError as exc:
            self._warn(f"warning: {exc}; appending without the subject index")
            self.close()

    def close(self) -> None:
        """Close the file (the index stays as written)."""
        if self._file is not None:
            self._file.close()
            self._file = None


async def first_records(
    pages: AsyncIterator[list[Record]], topic: str, first: Callable[[Record], bool]
) -> list[Event]:
    """The decoded records of ``pages`` that ``first`` takes (the first of their id)."""
    found: list[Event] = []
    async for page in pages:
        found += [decode_value(topic, record) for record in page if first(record)]
    return found


async def fetch_offsets(fetcher: Fetcher, tp: Any, offsets: Sequence[int]) -> list[Record]:
    """The records at ``offsets`` (ascending) of ``tp``: a fetch at the first one not
    found yet, whose answer (whole record batches, :data:`LOOKUP_BYTES` or the one batch
    holding it) serves every later offset it holds; only those records are decoded
    (``kafka_batches.picked``). An offset no longer on the partition is skipped.

    Raises:
        BackendUnavailableError: the broker's answers move the lookup no further.
    """
    wanted = list(offsets)
    got: list[Record] = []
    i, count, stuck = 0, len(wanted), 0
    while i < count:
        # below the head: the records are there, the broker answers once it has them
        answer = await fetcher.fetch(tp, wanted[i], wait_ms=DATA_WAIT_MS, max_bytes=LOOKUP_BYTES)
        if answer.start > wanted[i]:  # deleted (retention)
            while i < count and wanted[i] < answer.start:
                i += 1
            continue
        found, after, end = picked(answer.data, wanted, i)
        got += found
        if end >= 0:
            i, stuck = after, 0
            continue
        if 0 <= answer.high <= wanted[i]:
            break  # past the end of the partition: gone
        stuck += 1
        if stuck >= STUCK:
            raise BackendUnavailableError(f"read {tp.topic} at {wanted[i]}: no records come")
    return got


async def pages_about(
    *,
    offsets: list[int],
    upto: int,
    head: int,
    subjects: Sequence[str],
    fetch: Callable[[Sequence[int]], Awaitable[list[Record]]],
    topic: str,
    tail: Callable[[int, int], AsyncIterator[Event]],
) -> AsyncIterator[list[Event]]:
    """The records below ``head`` filed under any of ``subjects``, in offset order, a
    page at a time: those at the indexed ``offsets`` (all below ``upto``, fetched by
    ``fetch``), then those of the topic's tail ``[upto, head)`` (``tail(upto, head)``:
    the log's own read, which drops a repeated id) whose
    :func:`~streams.subjects.subjects_of` meet ``subjects``."""
    for k in range(0, len(offsets), PAGE):
        records = await fetch([o for o in offsets[k : k + PAGE] if o < head])
        yield [decode_value(topic, record) for record in records]
    if upto >= head:
        return
    wanted = frozenset(subjects)
    page: list[Event] = []
    async for event in tail(upto, head):
        if not wanted.isdisjoint(subjects_of(event)):
            page.append(event)
            if len(page) >= PAGE:
                yield page
                page = []
    if page:
        yield page
