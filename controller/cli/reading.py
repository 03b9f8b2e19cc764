"""How the reading commands read a log: a page at a time, with the collector paced.

``tide replay``, ``tide state``, ``tide report`` and ``tide audit
why|timeline|decisions|metrics|summary`` read a log URL or ``.db`` path through a
:class:`streams.paging.LogReader` instead of a list of every record, so their memory is
what their answer needs (the folded cluster, the recorded decisions), not the log's
length. A ``.jsonl`` recording is still read whole (it is an input file, and its
offsets are its line order). Folds run under :func:`streams.gcpause.paced`.
"""

from __future__ import annotations

import heapq
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from controller.cli.common import read_log_events, require_log
from controller.cli.progress import Progress, tracked
from streams.backends import open_reader
from streams.events import DECISION_TYPES, Event
from streams.gcpause import paced
from streams.log import EventLog
from streams.paging import LogReader
from streams.urls import is_recording_path, parse_log_url

if TYPE_CHECKING:  # the replay's parts are imported by replay_log, which needs them
    from concurrent.futures import Executor

    from projections.world import World
    from replay.segments import Cut, Segment
    from replay.verify import ReplayReport
    from streams.chain import ChainReport


def is_recording(source: str) -> bool:
    """A plain ``.jsonl`` path (read whole), not a log (:func:`streams.urls.is_recording_path`)."""
    return is_recording_path(source)


@contextmanager
def reader(source: str) -> Iterator[LogReader]:
    """The log at ``source`` (URL or ``.db`` path; never created, never written) opened
    for paging: a SQLite file without an event loop (``streams.backends.sqlite_reader``)."""
    require_log(source)
    synchronous = parse_log_url(source).scheme == "sqlite"
    with LogReader(lambda: open_reader(source), synchronous=synchronous) as opened:
        yield opened


def records(source: str) -> Iterator[Event]:
    """Every record of ``source`` in offset order: paged from a log, whole from a
    ``.jsonl`` recording."""
    if is_recording(source):
        yield from read_log_events(source)
        return
    with reader(source) as log:
        yield from log.records()


def decisions(source: str) -> Iterator[Event]:
    """The decision records of ``source`` in offset order (a narrow query on SQLite)."""
    if is_recording(source):
        yield from (e for e in read_log_events(source) if e.type in DECISION_TYPES)
        return
    with reader(source) as log:
        yield from log.of_types(DECISION_TYPES)


def about(
    source: str,
    keys: Sequence[str],
    *,
    then: Callable[[list[Event]], Sequence[str]] | None = None,
) -> Iterator[Event]:
    """The records of ``source`` filed under any of ``keys`` (:mod:`streams.subjects`), in
    offset order, through the log's subject index (a SQLite log's own; a Kafka topic's
    local one in its ``checkpoints=`` file, its tail past the index scanned:
    ``streams.backends.kafka_index``); every record when it has none (a ``.jsonl``
    recording, a Kafka log without the file, a SQLite log no writer has opened since the
    index came): the caller filters them either way, and answers the same.

    ``then``: more keys, worked out from the records found (a node's zones), whose records
    are merged in."""
    if is_recording(source):
        yield from read_log_events(source)
        return
    with reader(source) as log:
        found = _indexed(log, keys)
        if found is None:
            yield from log.records()
            return
        if then is None:
            yield from found
            return
        first = list(found)
        more = [k for k in then(first) if k not in keys]
        second = _indexed(log, more) if more else None
        last = -1
        for event in heapq.merge(first, second or (), key=lambda e: e.offset):
            if event.offset != last:
                yield event
            last = event.offset


@runtime_checkable
class IndexedPages(Protocol):
    """A log whose subject index is kept outside it (Kafka: ``KafkaLog.indexed_about``)."""

    async def indexed_about(self, subjects: Sequence[str]) -> AsyncIterator[list[Event]] | None:
        """Pages of the records under any of ``subjects``; None without a usable index."""


def _indexed(log: LogReader, keys: Sequence[str]) -> Iterator[Event] | None:
    """:meth:`LogReader.about`, or the pages of an :class:`IndexedPages` log; None
    when the log has no usable index."""
    found = log.about(keys)
    if found is not None or not isinstance(log.log, IndexedPages):
        return found
    pages = log.run(log.log.indexed_about(list(keys)))
    return None if pages is None else _drained(log, pages)


def _drained(log: LogReader, pages: AsyncIterator[list[Event]]) -> Iterator[Event]:
    async def step() -> list[Event] | None:
        return await anext(pages, None)

    while (page := log.run(step())) is not None:
        yield from page


def folded(source: str, label: str) -> Iterator[Event]:
    """Every record of ``source`` in offset order for a fold: paged (as :func:`records`),
    with the collector paced and the progress line of
    :class:`controller.cli.progress.Progress` labelled ``label``."""
    if is_recording(source):
        yield from paced(tracked(read_log_events(source), label))
        return
    with reader(source) as log, Progress(label, log.head()) as bar:
        if not bar.on:
            yield from paced(log.records())
            return
        for event in paced(log.records()):
            if not event.offset & 1023:
                bar.update(event.offset)
            yield event


def replay_log(
    source: str,
    *,
    start: int | None,
    stop_at_first: bool = True,
    chain: bool = False,
) -> tuple[ReplayReport, ChainReport | None]:
    """:func:`replay.verify.replay` of the log at ``source``, streamed: the recorded
    decisions first (narrow query), then every record a page at a time from the
    checkpoint nearest before ``start`` (when ``start`` is given and one is usable),
    with the progress line of :class:`controller.cli.progress.Progress`.

    With ``chain`` (a whole log: no ``start``), also the log's hash chain
    (:func:`streams.chain.check_log`), checked on the records as the replay reads them;
    read once more only when the replay stopped before the end (at its first
    difference)."""
    from replay.verify import RecordedDecisions, replay
    from streams.chain import check_log
    from streams.chain_check import ChainChecker

    with reader(source) as log:
        world: World | None = None
        if start is not None:
            world = log.run(_resume(log, source, start))
        begin = world.position if world is not None else 0
        recorded = RecordedDecisions.read(
            log.of_types(DECISION_TYPES, start or 0),
            start=start or 0,
            fetch=lambda offset: next(log.records(offset, offset + 1)),
        )
        # closed here, not whenever the generator is collected: a replay that stops at
        # its first difference leaves it suspended, with the collector paused and frozen
        checker = ChainChecker() if chain and begin == 0 else None
        seal = log.run(_seal_of(log.log)) if checker is not None else None
        whole = False

        def checked(rows: Iterator[tuple[Event, bytes | None]]) -> Iterator[Event]:
            nonlocal whole
            assert checker is not None
            for event, payload in rows:
                checker.feed(event, seal, payload)  # once broken it only says so
                yield event
            whole = True

        with (
            Progress("replay", log.head() - begin) as bar,
            closing(
                paced(checked(log.stored(begin)) if checker is not None else log.records(begin))
            ) as feed,
        ):
            report = replay(
                feed,
                stop_at_first=stop_at_first,
                start=start or 0,
                world=world,
                progress=bar.callback(),
                recorded=recorded,
            )
        if not chain:
            return report, None
        if checker is not None and whole:
            return report, checker.finish(seal)
        return report, log.run(check_log(log.log))


async def _seal_of(log: EventLog) -> tuple[int, str] | None:
    from streams.chain import Sealable

    return await log.sealed() if isinstance(log, Sealable) else None


async def _resume(log: LogReader, source: str, start: int) -> World | None:
    from projections.store import resume_at
    from streams.backends.checkpoints import open_log_store

    store = await open_log_store(log.log.url or source, create=False)
    if store is None:
        return None
    async with store:
        return await resume_at(store, log.log, upto=start)


def replay_jobs(
    source: str,
    *,
    jobs: int,
    executor: str | None = None,
    stop_at_first: bool = True,
    chain: bool = False,
) -> tuple[ReplayReport, ChainReport | None, list[str]]:
    """:func:`replay_log` of a whole log in segments cut at its checkpoints, each in a
    process of its own (:mod:`replay.segments`; ``executor`` ``dask://HOST:PORT``: on a
    Dask cluster). The report is the serial check's: when a segment is not clean or a
    cut does not match, the log is checked once more in one process for the exact report.
    The third item: the segments whose checkpoint does not match the fold before it, when
    the records themselves verify (a forged checkpoint); the caller fails on them."""
    from replay.segments import execute, join
    from replay.verify import ReplayReport

    segments = plan_jobs(source, jobs=jobs, chain=chain)
    if len(segments) < jobs:
        _note(
            f"--jobs {jobs}: the log keeps {len(segments) - 1} checkpoint(s) to cut it at; "
            f"verifying in {len(segments)} segment(s)"
        )
    if len(segments) == 1 and executor is None:
        report, checked = replay_log(source, start=None, stop_at_first=stop_at_first, chain=chain)
        return report, checked, []
    here = executor is None  # a local pool: this process verifies the first segment
    with _executor(executor, len(segments) - here) as pool:
        results = execute(segments, pool, here=here)
    joined = join(segments, results, chain=chain)
    if joined.exact:
        return ReplayReport(checked=joined.checked, decisions=joined.decisions), joined.chain, []
    first = (joined.mismatches or joined.problems)[0]
    _note(f"checking the log in one process for the exact report ({first})")
    report, checked = replay_log(source, start=None, stop_at_first=stop_at_first, chain=chain)
    clean = report.ok and (checked is None or (checked.ok and not checked.cut))
    return report, checked, joined.mismatches if clean else []


def plan_jobs(source: str, *, jobs: int, chain: bool = False) -> list[Segment]:
    """The segments :func:`replay_jobs` verifies (cut where :func:`replay.segments.plan_cuts`
    says; with ``chain`` the last one finishes the chain at the log's seal)."""
    from replay.segments import segments_at

    with reader(source) as log:
        url = log.log.url or source
        cuts = log.run(_cuts(log, url, jobs))
        segments = segments_at(url, cuts, head=log.head())
        if chain:
            seal = log.run(_seal_of(log.log))
            sealed = log.run(_sealed(log, seal, segments[-1].start))
            segments[-1] = segments[-1].finishing(seal, sealed)
    return segments


def _note(line: str) -> None:
    import typer

    typer.echo(line, err=True)


async def _cuts(log: LogReader, url: str, jobs: int) -> list[Cut]:
    from replay.segments import plan_cuts
    from streams.backends.checkpoints import open_log_store

    store = await open_log_store(url, create=False)
    if store is None:
        return []
    async with store:
        return await plan_cuts(log.log, store, jobs=jobs, warn=_note)


async def _sealed(log: LogReader, seal: tuple[int, str] | None, before: int) -> str | None:
    """The encoded record where the log ended cleanly, when it lies before ``before``."""
    from streams.codec import encode

    if seal is None or seal[0] >= before:
        return None
    found = [e async for e in log.log.read(seal[0], seal[0] + 1) if e.offset == seal[0]]
    return encode(found[0]).decode() if found else None


def _start_method() -> str:
    """How the local pool starts its processes: forked on Linux when this process runs
    one thread (a forked worker has every module loaded: it starts in milliseconds, where
    a spawned one imports tide again, ~0.6 s on the critical path of its segment); spawned
    otherwise (a fork beside other threads can inherit a lock one of them held)."""
    import sys
    import threading

    return "fork" if sys.platform == "linux" and threading.active_count() == 1 else "spawn"


@contextmanager
def _executor(url: str | None, workers: int) -> Iterator[Executor]:
    """A pool of ``workers`` processes (:func:`_start_method`), or (``dask://HOST:PORT``) a Dask
    cluster's executor; a URL of another scheme, or Dask not installed, fails with one line."""
    from controller.cli.common import fail

    if url is None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context(_start_method())
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            yield pool
        return
    if not url.startswith("dask://") or len(url) <= len("dask://"):
        fail(f"--executor {url}: not a dask://HOST:PORT address")
    import importlib

    try:  # the optional extra tide[dask]; Any-typed, whether its stubs are there or not
        distributed: Any = importlib.import_module("distributed")
    except ImportError:
        fail(f"--executor {url}: Dask is not installed (pip install 'tide[dask]')")
    try:
        client = distributed.Client(f"tcp://{url.removeprefix('dask://')}", timeout=10)
    except (OSError, TimeoutError) as exc:
        fail(f"--executor {url}: cannot reach the scheduler ({exc})")
    with client:
        yield client.get_executor()
