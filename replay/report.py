"""`tide report`: one self-contained HTML page an operator prints for an incident review.

The page opens with what was decided, where and when (a cluster summary and a contents
list whose node entries are linkable anchors, :mod:`replay.report_sections`), then the
decisions per reason per hour, the binds with the evidence the scheduler recorded and,
per bind, every node's verdict derived from the log (:mod:`replay.bindview`), and one
section per node, the nodes ordered by what happened on them. A node's chart draws
CPU and memory pressure (% of capacity) against the eviction thresholds, the revocable
zone's open windows (from the log's own window-start/window-end triggers) and a marker
per decision whose hover text is its ``audit why`` headline; the table under it lists
the same decisions (:mod:`replay.report_charts`).

The charts are inline SVG written here rather than a vendored chart library: the page
must open with no network, the pictures are simple (lines, rectangles, shapes), and
SVG keeps the file small, printable and free of scripts, so a browser shows it the same
everywhere. The page is a pure function of the log: the same log gives the same bytes.
:func:`series` gives the samples as rows for ``tide audit series --csv``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from controller.policy.loader import load_policy
from projections.parsing import milli, units
from replay.bindview import BindFold, BindView
from replay.explain import headline
from replay.overcommit import OvercommitFold
from replay.report_axes import Frame
from replay.report_charts import NODE_HEIGHT, TimeScale, node_panel, reason_panel
from replay.report_sections import (
    NodeEntry,
    anchors,
    binds,
    contents,
    decision_table,
    node_link,
    node_stats,
    summary,
)
from replay.report_style import CSS
from streams.events import DECISION_TYPES, Event, format_time
from streams.payloads import (
    WatchPayload,
    as_config,
    as_decision,
    as_node_sample,
    as_trigger,
    as_watch,
)


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


def collect(
    events: Iterable[Event],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    only: Sequence[str] = (),
    binds: BindFold | None = None,
) -> Day:
    """Fold ``events`` into a :class:`Day` (nodes in ``only``, or all; times in range).

    ``binds`` derives each bind's per-node view in the same pass (a
    :class:`~replay.bindview.BindFold` given the log's decisions); when ``events`` is a
    list it is made from the list's own decisions. Otherwise the day has no bind views.
    """
    if binds is None and isinstance(events, list):
        binds = BindFold(events)
    nodes: dict[str, NodeSeries] = {}
    zone_open: dict[str, datetime | None] = {}
    zone_windows: dict[str, list[tuple[datetime | None, datetime | None]]] = {}
    decisions: list[Event] = []
    config = None
    first = last = None
    overcommit = OvercommitFold()
    for event in events:
        overcommit.apply(event)  # the whole log: a node's room depends on all before
        if binds is not None:
            binds.feed(event)
        if until and event.at > until:
            continue
        # state before the range holds in it: the nodes and their capacity, the
        # configuration, the windows already open when the range starts
        if event.type == "config.applied":
            config = as_config(event).get("config")
        elif event.type == "k8s.watch":
            _node(nodes, as_watch(event))
        elif event.type == "trigger.fired":
            t = as_trigger(event)
            zone = str(t.get("zone") or "")
            if t.get("kind") == "window-start":
                zone_open[zone] = event.at
            elif t.get("kind") == "window-end":
                opened = zone_open.pop(zone, None)
                if not since or event.at >= since:
                    window = (max(opened, since) if opened and since else opened, event.at)
                    zone_windows.setdefault(zone, []).append(window)
        if since and event.at < since:
            continue
        first = first or event.at
        last = event.at
        if event.type == "metrics.node":
            sample = as_node_sample(event)
            name = str((sample.get("metadata") or {}).get("name"))
            sampled = nodes.get(name)
            usage = sample.get("usage") or {}
            if sampled is not None and sampled.cpu_cap and sampled.mem_cap:
                cpu, mem = milli(usage.get("cpu") or 0), units(usage.get("memory") or 0)
                sampled.rows.append(
                    (event.at, 100 * cpu / sampled.cpu_cap, 100 * mem / sampled.mem_cap, cpu, mem)
                )
        elif event.type in DECISION_TYPES:
            decisions.append(event)
    for zone, opened in zone_open.items():
        start_at = max(opened, since) if opened and since else opened
        zone_windows.setdefault(zone, []).append((start_at, None))
    for event in decisions:
        where = nodes.get(str(as_decision(event).get("node") or ""))
        if where is not None:
            where.decisions.append(event)
    for node in nodes.values():
        node.windows = zone_windows.get(node.zone, []) if node.zone else []
    thresholds = {}
    eviction = load_policy(config or {}).eviction if isinstance(config, dict) else None
    if eviction is not None:
        thresholds = {r: eviction.resource(r).evict_threshold for r in ("cpu", "memory")}
    chosen = {n: nodes[n] for n in sorted(nodes) if not only or n in only}
    start = first or datetime(1970, 1, 1, tzinfo=UTC)
    views = {v.decision.id: v for v in binds.views()} if binds is not None else None
    return Day(chosen, decisions, thresholds, start, last or start, overcommit.lines(), views)


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


def series(day: Day, node: str) -> list[list[str]]:
    """``node``'s samples as CSV rows (with a header row)."""
    out = [["time", "cpu_percent", "memory_percent", "cpu_cores", "memory_gib"]]
    for at, cpu_p, mem_p, cpu, mem in day.nodes[node].rows if node in day.nodes else []:
        out.append(
            [
                format_time(at),
                f"{cpu_p:.3f}",
                f"{mem_p:.3f}",
                f"{cpu / 1000:.3f}",
                f"{mem / (1 << 30):.3f}",
            ]
        )
    return out


def ordered(day: Day) -> list[NodeSeries]:
    """The nodes in page order: those with decisions (most first), then those with
    samples, then the rest; by name within each."""
    return sorted(
        day.nodes.values(),
        key=lambda n: (0 if n.decisions else 1 if n.rows else 2, -len(n.decisions), n.name),
    )


def headlines(decisions: Sequence[Event], records: Iterable[Event]) -> dict[str, str]:
    """Each decision's ``audit why`` headline by id (``records`` hold their causes)."""
    by_id = {e.id: e for e in records}
    return {e.id: headline(e, by_id.get(e.cause) if e.cause else None) for e in decisions}


def _overcommit(day: Day) -> list[str]:
    """The over-commit section, only when a node was over its allocatable."""
    if not day.overcommit:
        return []
    head, *rows = day.overcommit
    items = "".join(f"<li>{html.escape(row.strip())}</li>" for row in rows)
    return [
        "<section id='overcommit'><h2 class='over'>Nodes over their allocatable</h2>",
        f"<p class='over'>{html.escape(head)}</p><ul>{items}</ul></section>",
    ]


def render(
    day: Day, records: list[Event], *, title: str = "tide report", extra: Sequence[str] = ()
) -> str:
    """The page: the cluster summary, the contents, decisions per reason per hour,
    ``extra`` sections (HTML: the what-if view), the binds, then one section per node
    (chart, legend, decisions) in :func:`ordered` order."""
    nodes = ordered(day)
    links = anchors([n.name for n in nodes])
    entries = [NodeEntry(n.name, links[n.name], n.zone, len(n.rows), n.decisions) for n in nodes]
    link_html = {e.name: node_link(e) for e in entries}
    why = headlines(day.decisions, records)
    scale = TimeScale(day.start, day.end, frame=Frame(NODE_HEIGHT))
    over = _overcommit(day)
    bound = binds(day.decisions, link_html, day.binds)
    sections = [("summary", "Summary"), ("reasons", "Decisions per reason per hour")]
    sections += [("overcommit", "Nodes over their allocatable")] if over else []
    sections += [("whatif", "What if")] if extra else []
    sections += [("binds", "Binds")] if bound else []
    note = (
        [
            "<p class='over'>Some nodes were over their allocatable: see "
            "<a href='#overcommit'>below</a>.</p>"
        ]
        if over
        else []
    )
    body = [
        f"<h1>{html.escape(title)}</h1>",
        summary(
            start=format_time(day.start),
            end=format_time(day.end),
            seconds=(day.end - day.start).total_seconds(),
            decisions=day.decisions,
            nodes=entries,
            extra=note,
        ),
        contents(sections, entries),
        "<section id='reasons'><h2>Decisions per reason per hour</h2>",
        reason_panel(day.decisions, start=day.start, end=day.end),
        "</section>",
        *over,
        *(
            f"<section{' id=whatif' if not i else ''}>{part}</section>"
            for i, part in enumerate(extra)
        ),
        bound,
    ]
    for node, entry in zip(nodes, entries, strict=True):
        zone = f" (zone {html.escape(node.zone)})" if node.zone else ""
        body.append(
            f"<section class='node' id='{entry.anchor}'><h2>{html.escape(node.name)}{zone} "
            f"<span class='node-stats'>{node_stats(entry)}</span>"
            "<a class='top' href='#contents'>contents ↑</a></h2>"
        )
        body.append(
            node_panel(
                node.name,
                rows=node.rows,
                windows=node.windows,
                zone=node.zone,
                decisions=node.decisions,
                thresholds=day.thresholds,
                scale=scale,
                why=why,
            )
        )
        body.append(decision_table(node.decisions, why))
        body.append("</section>")
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        + "\n".join(part for part in body if part)
        + "</body></html>\n"
    )
