"""Which nodes a log shows over their allocatable, and when: the over-commit invariant read back.

Why: the cluster fold watches the invariant (:mod:`projections.overcommit`) but knows a
record only by its offset; ``tide audit summary`` and ``tide report`` read a log once and
want times. :class:`OvercommitFold` folds the cluster alongside their own pass and keeps the
time of each record where an episode began or ended (two comparisons a record).

A report of a time range lists the episodes of the range (:meth:`OvercommitFold.restart` at
its first record): the nodes already over then, and those that went over after. The
watch is not in checkpoints, but the nodes over at a record are a function of the cluster
there, so a report folded from a checkpoint before the range lists the same episodes as
one folded from offset 0.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from projections.cluster import ClusterState
from projections.overcommit import Episode, amount, excess
from streams.events import Event, format_time


class OvercommitFold:
    """The cluster folded record by record, for its over-commit episodes (:meth:`lines`)."""

    def __init__(self, cluster: ClusterState | None = None) -> None:
        #: the cluster watched: an own one, or a World's (folded by the caller's ``fold``)
        self.cluster = cluster if cluster is not None else ClusterState()
        self.times: dict[int, datetime] = {}
        #: the episodes open when :meth:`restart` began the watch again (their nodes were
        #: over before it)
        self.carried: list[Episode] = []

    def apply(self, event: Event, fold: Callable[[Event], None] | None = None) -> None:
        """Fold one record (in log order, with its offset); ``fold``: the call that folds
        it into :attr:`cluster` (a World's ``apply``), the cluster's own by default."""
        watch = self.cluster.overcommit
        ever, ended = watch.ever, len(watch.closed) + watch.dropped
        (fold or self.cluster.apply)(event)
        if watch.ever != ever or len(watch.closed) + watch.dropped != ended:
            self.times[event.offset] = event.at

    def restart(self, offset: int, at: datetime) -> None:
        """Begin the watch again at the record at ``offset`` (not folded yet, at ``at``):
        forget every episode so far, and open one for each node over now, at worst by what
        it is over by now (:func:`projections.overcommit.excess` of the cluster)."""
        watch = self.cluster.overcommit
        watch.open.clear()
        watch.closed.clear()
        watch.dropped = 0
        self.times = {offset: at}
        self.carried = []
        nodes = self.cluster.nodes
        for name in sorted(nodes):
            over = excess(nodes[name])
            if over:
                episode = Episode(name, offset, worst=over, tasks=len(nodes[name].tasks))
                watch.open[name] = episode
                self.carried.append(episode)

    def _since(self, episode: Episode) -> str:
        said = self.when(episode.since)
        if any(episode is held for held in self.carried):
            return f"before the range (over at its first record, {said})"
        return said

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
        if self.carried:
            head += f"; {len(self.carried)} already over when the range began"
        rows = [
            f"  {e.node}: from {self._since(e)} to {self.when(e.until)}; "
            f"at worst {amount(e.worst)} over, {e.tasks} tasks"
            for e in self.episodes
        ]
        return [head, *rows]
