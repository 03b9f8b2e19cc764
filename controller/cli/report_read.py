"""How ``tide report`` reads a log: with ``--from``, from the nearest checkpoint before it.

The page of a range (:mod:`replay.report_pass`) needs from before the range only the World
at its first record, the zones' window triggers and the causes of its decisions. So with
``--from T`` the pass starts at the latest good checkpoint whose records are all earlier
than ``T`` (:func:`projections.checkpoints.nearest`); the window triggers before it are read
through the subject index (``zone:`` keys, :func:`controller.cli.reading.about`), the
causes before it by reading back from it a page at a time, and the bind views whose
causes lie before it from the nearest checkpoint at or before the first of them. The page
is byte for byte the page of a fold from offset 0 (tests/replay/test_report_checkpoints.py).

A ``.jsonl`` recording, a log without checkpoints, a report without ``--from`` are folded
from offset 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from functools import partial

from controller.cli.progress import Progress
from controller.cli.reading import about, decisions, folded, is_recording, reader
from projections.checkpoint_codec import Snapshot
from projections.checkpoints import nearest
from projections.world import World
from replay.report import Before, Day
from replay.report_pass import is_window
from replay.streamed import ReportFold
from streams.backends.checkpoints import open_log_store
from streams.events import DECISION_TYPES, Event
from streams.gcpause import paced
from streams.paging import LogReader

#: how many records each step back from the checkpoint reads, looking for causes
BACK = 4096


def report_day(
    log: str,
    *,
    since: datetime | None,
    until: datetime | None,
    only: tuple[str, ...],
    bind_views: int,
) -> tuple[Day, list[Event]]:
    """The :class:`Day` of ``log``'s range and the records :func:`replay.report.render`
    looks up (the decisions' causes)."""
    if since is None or is_recording(log):
        fold = ReportFold(decisions(log))
        events = folded(log, "report")
        day = fold.day(events, since=since, until=until, only=only, bind_views=bind_views)
        return day, fold.needed()
    with reader(log) as opened:
        url = opened.log.url or log
        # every record before it is earlier than the range: times have microseconds
        found = _nearest(opened, url, upto=None, at=since - timedelta(microseconds=1))
        before = None
        if found is not None:
            before = Before(found.world, partial(_windows, log, found.position))
        begin = found.position if found is not None else 0
        # the range's decisions and the sessions of its binds are all past the checkpoint
        fold = ReportFold(opened.of_types(DECISION_TYPES, begin))
        day = fold.day(
            _paged(opened, begin),
            since=since,
            until=until,
            only=only,
            bind_views=bind_views,
            before=before,
        )
        records = fold.needed()
        if not begin:
            return day, records
        seen = {e.id for e in records}
        missing = {e.cause for e in day.decisions if e.cause and e.cause not in seen}
        earlier = _back(opened, begin, missing)
        _bind_views(opened, url, fold, day, earlier)
    return day, sorted([*records, *earlier.values()], key=lambda e: e.offset)


def _nearest(
    opened: LogReader, url: str, *, upto: int | None, at: datetime | None
) -> Snapshot | None:
    async def find() -> Snapshot | None:
        store = await open_log_store(url, create=False)
        if store is None:
            return None
        async with store:
            return await nearest(store, opened.log, upto=upto, at=at, warn=_warn)

    return opened.run(find())


def _warn(line: str) -> None:
    import typer

    typer.echo(line, err=True)


def _paged(opened: LogReader, begin: int) -> Iterator[Event]:
    """The records from ``begin`` on, paged, with the progress line."""
    with Progress("report", opened.head() - begin) as bar:
        for event in paced(opened.records(begin)):
            if bar.on and not event.offset & 1023:
                bar.update(event.offset - begin)
            yield event


def _windows(log: str, stop: int, zones: Sequence[str]) -> Iterable[Event]:
    """The window triggers of ``zones`` before offset ``stop`` (through the subject index;
    a log without one is scanned)."""
    for event in about(log, [f"zone:{zone}" for zone in zones]):
        if event.offset >= stop:
            return
        if is_window(event):
            yield event


def _back(opened: LogReader, begin: int, ids: set[str]) -> dict[str, Event]:
    """The records with these ids before offset ``begin``, by id: read back from it a page
    at a time (a decision's cause is seldom far before it) until all are found."""
    found: dict[str, Event] = {}
    stop = begin
    while stop > 0 and len(found) < len(ids):
        start = max(0, stop - BACK)
        found.update((e.id, e) for e in opened.records(start, stop) if e.id in ids)
        stop = start
    return found


def _bind_views(
    opened: LogReader, url: str, fold: ReportFold, day: Day, earlier: dict[str, Event]
) -> None:
    """Derive the bind views whose causes lie before the pass's start, from the nearest
    checkpoint at or before the first of them, into ``day``."""
    binds = fold.binds
    causes = [earlier[c] for c in binds.pending() if c in earlier] if binds else []
    if binds is None or not causes or day.binds is None:
        return
    first, last = min(e.offset for e in causes), max(e.offset for e in causes)
    found = _nearest(opened, url, upto=first, at=None)
    world = found.world if found is not None else World()
    again = binds.resumed(world, opened.of_types(DECISION_TYPES, world.position))
    for event in opened.records(again.world.position, last + 1):
        again.feed(event)
    binds.merge(again)
    day.binds = {view.decision.id: view for view in binds.views()}
