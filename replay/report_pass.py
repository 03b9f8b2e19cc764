"""The page pass of ``tide report``: the log's records folded into what the page draws.

Why a module of its own: the pass may start past offset 0, at a checkpoint before the
range (``tide report --from``), and must then give the page a fold from offset 0 gives.
So what the page takes from before the range is read where a checkpoint holds it:

* the nodes (name, zone, capacity) and the configuration in force come from the World at
  the range's first record (the first whose time is at or after ``since``: every record
  before it is earlier than the range), whichever way that World was reached; records
  after it add to them as they come (a node watched later, a configuration applied later);
* the over-commit episodes are those of the range (:meth:`OvercommitFold.restart` there);
* the revocable zones' windows are folded from the zones' window triggers, those before
  the pass's start given by :attr:`Before.windows` (the subject index's ``zone:`` keys);
* the decisions, samples and times are the range's, all at or after its first record.

A bind view needs the World at its cause (:mod:`replay.bindview`); a decision's headline
needs its cause: when a cause lies before the pass's start the caller finds it
(``controller.cli.report_read``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from controller.policy.loader import load_policy
from projections.parsing import milli, units
from projections.world import World
from replay.bindview import BindFold, BindView
from replay.overcommit import OvercommitFold
from streams.events import DECISION_TYPES, Event
from streams.payloads import WatchPayload, as_config, as_decision, as_node_sample, as_watch

#: the window triggers of a revocable zone
WINDOW_KINDS = ("window-start", "window-end")


@dataclass
class NodeSeries:
    """One node's samples (time, cpu %, memory %), its zone, windows and decisions."""

    name: str
    zone: str = ""
    cpu_cap: float = 0.0
    mem_cap: float = 0.0
    rows: list[tuple[datetime, float, float, float, float]] = field(default_factory=list)
    windows: list[tuple[datetime | None, datetime | None]] = field(default_factory=list)
    decisions: list[Event] = field(default_factory=list)


@dataclass
class Day:
    """Everything the page draws, folded from the log in one pass."""

    nodes: dict[str, NodeSeries]
    decisions: list[Event]
    thresholds: dict[str, float]
    start: datetime
    end: datetime
    #: the over-commit invariant's findings (:meth:`replay.overcommit.OvercommitFold.lines`)
    overcommit: list[str] = field(default_factory=list)
    #: each bind's per-node view by the bind's id (:mod:`replay.bindview`); None when the
    #: page is built without them (:func:`collect` of a one-pass stream, no decisions given)
    binds: dict[str, BindView] | None = None


@dataclass(frozen=True)
class Before:
    """Where a pass starts past offset 0: ``world``, folded to its position (a
    checkpoint's, at or before the range's first record), and ``windows``, the window
    triggers (in offset order) of the given zones before that position."""

    world: World
    windows: Callable[[Sequence[str]], Iterable[Event]]


def is_window(event: Event) -> bool:
    """A revocable zone's window trigger (the records :attr:`Before.windows` gives)."""
    data = event.data if isinstance(event.data, dict) else {}
    return event.type == "trigger.fired" and data.get("kind") in WINDOW_KINDS


class PagePass:
    """The records from ``before``'s position (offset 0 without it) :meth:`feed` in
    offset order, then :meth:`day`. ``binds`` folds into the pass's World (its own
    ``world``, or ``before.world``)."""

    def __init__(
        self,
        *,
        since: datetime | None,
        until: datetime | None,
        only: Sequence[str],
        binds: BindFold | None,
        before: Before | None = None,
    ) -> None:
        self.since, self.until, self.only = since, until, only
        self.binds, self.before = binds, before
        if before is not None:
            self.world = before.world
            if binds is not None:
                binds.world = before.world
        else:
            self.world = binds.world if binds is not None else World()
        self.overcommit = OvercommitFold(self.world.cluster)
        self.nodes: dict[str, NodeSeries] = {}
        self.config: object = None
        self.decisions: list[Event] = []
        self.windows: list[Event] = []
        self.begun = False
        self.first: datetime | None = None
        self.last: datetime | None = None

    def _begin(self, event: Event | None) -> None:
        """The range's first record (None: there is none): the state before it."""
        self.begun = True
        cluster = self.world.cluster.nodes
        for name in sorted(cluster):
            node = cluster[name]
            if not node.placeholder:
                cap = node.capacity
                self.nodes[name] = NodeSeries(name, node.revocable_zone, cap.milli_cpu, cap.memory)
        self.config = self.world.config
        if self.since is not None:  # no record in range: the nodes over at the log's end
            where = (
                (event.offset, event.at) if event is not None else (self.world.position, self.since)
            )
            self.overcommit.restart(*where)

    def feed(self, event: Event) -> None:
        """One record, in offset order."""
        since, until = self.since, self.until
        if not self.begun and (since is None or event.at >= since):
            self._begin(event)
        if self.binds is not None:
            self.binds.before(event)
        self.overcommit.apply(event, self.world.apply)  # a node's room depends on all before
        if until and event.at > until:
            return
        if is_window(event):
            self.windows.append(event)
        if not self.begun:
            return
        # records after the range's first that are earlier than it still hold in it
        if event.type == "config.applied":
            self.config = as_config(event).get("config")
        elif event.type == "k8s.watch":
            _node(self.nodes, as_watch(event))
        if since and event.at < since:
            return
        self.first = self.first or event.at
        self.last = event.at
        if event.type == "metrics.node":
            sample = as_node_sample(event)
            name = str((sample.get("metadata") or {}).get("name"))
            sampled = self.nodes.get(name)
            usage = sample.get("usage") or {}
            if sampled is not None and sampled.cpu_cap and sampled.mem_cap:
                cpu, mem = milli(usage.get("cpu") or 0), units(usage.get("memory") or 0)
                sampled.rows.append(
                    (event.at, 100 * cpu / sampled.cpu_cap, 100 * mem / sampled.mem_cap, cpu, mem)
                )
        elif event.type in DECISION_TYPES:
            self.decisions.append(event)

    def _zone_windows(self) -> dict[str, list[tuple[datetime | None, datetime | None]]]:
        """Each node zone's windows in the range, clipped to it (open ones end at None)."""
        since = self.since
        zones = sorted({n.zone for n in self.nodes.values() if n.zone})
        earlier = list(self.before.windows(zones)) if self.before is not None and zones else []
        if self.until:
            earlier = [e for e in earlier if e.at <= self.until]
        zone_open: dict[str, datetime | None] = {}
        out: dict[str, list[tuple[datetime | None, datetime | None]]] = {}
        for event in [*earlier, *self.windows]:
            data = event.data if isinstance(event.data, dict) else {}
            zone = str(data.get("zone") or "")
            if zone not in zones or not is_window(event):
                continue
            if data.get("kind") == "window-start":
                zone_open[zone] = event.at
                continue
            opened = zone_open.pop(zone, None)
            if not since or event.at >= since:
                out.setdefault(zone, []).append(
                    (max(opened, since) if opened and since else opened, event.at)
                )
        for zone, opened in zone_open.items():
            start_at = max(opened, since) if opened and since else opened
            out.setdefault(zone, []).append((start_at, None))
        return out

    def day(self) -> Day:
        """The :class:`Day` of the records fed."""
        if not self.begun:
            self._begin(None)
        nodes = self.nodes
        for event in self.decisions:
            where = nodes.get(str(as_decision(event).get("node") or ""))
            if where is not None:
                where.decisions.append(event)
        windows = self._zone_windows()
        for node in nodes.values():
            node.windows = windows.get(node.zone, []) if node.zone else []
        thresholds = {}
        config = self.config
        eviction = load_policy(config).eviction if isinstance(config, dict) else None
        if eviction is not None:
            thresholds = {r: eviction.resource(r).evict_threshold for r in ("cpu", "memory")}
        only = self.only
        chosen = {n: nodes[n] for n in sorted(nodes) if not only or n in only}
        start = self.first or datetime(1970, 1, 1, tzinfo=UTC)
        binds = self.binds
        views = {v.decision.id: v for v in binds.views()} if binds is not None else None
        over = self.overcommit.lines()
        return Day(chosen, self.decisions, thresholds, start, self.last or start, over, views)


def _node(nodes: dict[str, NodeSeries], watch: WatchPayload) -> None:
    """Keep a node watch event's name, zone and capacity (other resources are not drawn)."""
    if watch.get("resource") != "nodes":
        return
    obj = watch.get("object") or {}
    meta = obj.get("metadata") or {}
    cap = (obj.get("status") or {}).get("capacity") or {}
    node = nodes.setdefault(str(meta.get("name")), NodeSeries(str(meta.get("name"))))
    node.zone = str((meta.get("labels") or {}).get("volcano.sh/revocable-zone") or "")
    node.cpu_cap, node.mem_cap = milli(cap.get("cpu") or 0), units(cap.get("memory") or 0)
