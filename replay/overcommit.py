"""Which nodes a log shows over their allocatable, and when: the over-commit invariant read back.

Why: the cluster fold watches the invariant (:mod:`projections.overcommit`) but knows a
record only by its offset; ``tide audit summary`` and ``tide report`` read a log once and
want times. :class:`OvercommitFold` folds the cluster alongside their own pass and keeps the
time of each record where an episode began or ended (two comparisons a record).
"""

from __future__ import annotations

from datetime import datetime

from projections.cluster import ClusterState
from projections.overcommit import Episode, amount
from streams.events import Event, format_time


class OvercommitFold:
    """The cluster folded record by record, for its over-commit episodes (:meth:`lines`)."""

    def __init__(self) -> None:
        self.cluster = ClusterState()
        self.times: dict[int, datetime] = {}

    def apply(self, event: Event) -> None:
        """Fold one record (in log order, with its offset)."""
        watch = self.cluster.overcommit
        ever, ended = watch.ever, len(watch.closed) + watch.dropped
        self.cluster.apply(event)
        if watch.ever != ever or len(watch.closed) + watch.dropped != ended:
            self.times[event.offset] = event.at

    @property
    def episodes(self) -> list[Episode]:
        """Every episode kept (see :meth:`projections.overcommit.OvercommitWatch.episodes`)."""
        return self.cluster.overcommit.episodes()

    def when(self, offset: int | None) -> str:
        """The time of the record at ``offset`` (and its offset), or ``still over``."""
        if offset is None:
            return "the end (still over)"
        at = self.times.get(offset)
        return f"{format_time(at)} (offset {offset})" if at is not None else f"offset {offset}"

    def lines(self) -> list[str]:
        """One headline and a line per episode; nothing when no node was ever over."""
        watch = self.cluster.overcommit
        if not watch.ever:
            return []
        nodes = {e.node for e in self.episodes}
        head = (
            f"over-committed: {watch.ever} time(s) a node's bound requests exceeded its "
            f"allocatable, on {len(nodes)} node(s); {len(watch.open)} still over at the end"
        )
        if watch.dropped:
            head += f" ({watch.dropped} earliest not listed)"
        rows = [
            f"  {e.node}: from {self.when(e.since)} to {self.when(e.until)}; "
            f"at worst {amount(e.worst)} over, {e.tasks} tasks"
            for e in self.episodes
        ]
        return [head, *rows]
