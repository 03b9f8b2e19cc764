"""`tide report`: one self-contained HTML page that shows a day of decisions.

What an on-call engineer wants to see first is pressure against thresholds against
windows against evictions. Per node, this page draws CPU and memory pressure (% of
capacity) over time, the eviction thresholds as dashed lines, the revocable zone's open
windows shaded (from the log's own window-start/window-end triggers), and a marker per
eviction, bind and taint whose hover text is the ``audit why`` headline; a table under
each chart lists the same decisions. A bar chart shows decisions per reason per hour.

The charts are inline SVG written here rather than a vendored chart library: the page
must open with no network, the pictures are simple (lines, rectangles, circles), and
SVG keeps the file small, printable and free of scripts, so a browser shows it the same
everywhere. :func:`series` gives the samples as rows for ``tide audit series --csv``.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from controller.policy.loader import load_policy
from projections.parsing import milli, units
from replay.explain import answer_for
from replay.overcommit import OvercommitFold
from streams.events import DECISION_TYPES, Event, format_time
from streams.payloads import as_config, as_decision, as_node_sample, as_trigger, as_watch

WIDTH, HEIGHT, PAD = 960, 220, 40
COLOURS = {"evict": "#d62728", "bind": "#2ca02c", "taint": "#ff7f0e", "untaint": "#9467bd"}


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


def collect(
    events: Iterable[Event],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    only: Sequence[str] = (),
) -> Day:
    """Fold ``events`` into a :class:`Day` (nodes in ``only``, or all; times in range)."""
    nodes: dict[str, NodeSeries] = {}
    zone_open: dict[str, datetime | None] = {}
    zone_windows: dict[str, list[tuple[datetime | None, datetime | None]]] = {}
    decisions: list[Event] = []
    config = None
    first = last = None
    overcommit = OvercommitFold()
    for event in events:
        overcommit.apply(event)  # the whole log: a node's room depends on all before
        if (since and event.at < since) or (until and event.at > until):
            if event.type == "config.applied":
                config = as_config(event).get("config")
            continue
        first = first or event.at
        last = event.at
        if event.type == "config.applied":
            config = as_config(event).get("config")
        elif event.type == "k8s.watch":
            watch = as_watch(event)
            if watch.get("resource") != "nodes":
                continue
            obj = watch.get("object") or {}
            meta = obj.get("metadata") or {}
            cap = (obj.get("status") or {}).get("capacity") or {}
            node = nodes.setdefault(str(meta.get("name")), NodeSeries(str(meta.get("name"))))
            node.zone = str((meta.get("labels") or {}).get("volcano.sh/revocable-zone") or "")
            node.cpu_cap, node.mem_cap = milli(cap.get("cpu") or 0), units(cap.get("memory") or 0)
        elif event.type == "metrics.node":
            sample = as_node_sample(event)
            name = str((sample.get("metadata") or {}).get("name"))
            sampled = nodes.get(name)
            usage = sample.get("usage") or {}
            if sampled is not None and sampled.cpu_cap and sampled.mem_cap:
                cpu, mem = milli(usage.get("cpu") or 0), units(usage.get("memory") or 0)
                sampled.rows.append(
                    (event.at, 100 * cpu / sampled.cpu_cap, 100 * mem / sampled.mem_cap, cpu, mem)
                )
        elif event.type == "trigger.fired":
            t = as_trigger(event)
            zone = str(t.get("zone") or "")
            if t.get("kind") == "window-start":
                zone_open[zone] = event.at
            elif t.get("kind") == "window-end":
                zone_windows.setdefault(zone, []).append((zone_open.pop(zone, None), event.at))
        elif event.type in DECISION_TYPES:
            decisions.append(event)
    for zone, opened in zone_open.items():
        zone_windows.setdefault(zone, []).append((opened, None))
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
    return Day(chosen, decisions, thresholds, start, last or start, overcommit.lines())


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


class _Scale:
    def __init__(self, day: Day) -> None:
        self.t0 = day.start.timestamp()
        self.span = max(day.end.timestamp() - self.t0, 1.0)

    def x(self, at: datetime) -> float:
        return PAD + (WIDTH - 2 * PAD) * (at.timestamp() - self.t0) / self.span

    @staticmethod
    def y(percent: float) -> float:
        return HEIGHT - PAD + (2 * PAD - HEIGHT) * min(max(percent, 0.0), 110.0) / 110.0


def _axes(day: Day, scale: _Scale) -> list[str]:
    out = []
    for pct in (0, 25, 50, 75, 100):
        y = scale.y(pct)
        out.append(
            f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="18" y="{y + 4:.1f}" class="tick">{pct}%</text>'
        )
    hours = int((day.end.timestamp() - scale.t0) // 3600) + 1
    step = max(1, hours // 12)
    for h in range(0, hours + 1, step):
        x = PAD + (WIDTH - 2 * PAD) * h * 3600 / scale.span
        if x > WIDTH - PAD:
            break
        label = datetime.fromtimestamp(scale.t0 + h * 3600, day.start.tzinfo).strftime("%H:%M")
        out.append(f'<text x="{x:.1f}" y="{HEIGHT - 8}" class="tick">{label}</text>')
    return out


def _node_chart(day: Day, node: NodeSeries, records: list[Event], scale: _Scale) -> str:
    parts = [f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" class="chart" data-node="{node.name}">']
    for opened, closed in node.windows:
        x1 = scale.x(opened or day.start)
        x2 = scale.x(closed or day.end)
        parts.append(
            f'<rect x="{x1:.1f}" y="{PAD}" width="{max(x2 - x1, 0):.1f}" '
            f'height="{HEIGHT - 2 * PAD}" class="window"><title>zone {node.zone} window open'
            "</title></rect>"
        )
    parts += _axes(day, scale)
    for resource, cls in (("cpu", "cpu"), ("memory", "mem")):
        if resource in day.thresholds:
            y = scale.y(day.thresholds[resource])
            parts.append(
                f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y:.1f}" y2="{y:.1f}" '
                f'class="threshold {cls}"><title>{resource} threshold '
                f"{day.thresholds[resource]:g}%</title></line>"
            )
    for index, cls in ((1, "cpu"), (2, "mem")):
        values = [(r[0], r[1] if index == 1 else r[2]) for r in node.rows]
        points = " ".join(f"{scale.x(at):.1f},{scale.y(v):.1f}" for at, v in values)
        parts.append(f'<polyline points="{points}" class="line {cls}"/>')
    for event in node.decisions:
        d = as_decision(event)
        kind = str(d.get("kind"))
        title = html.escape(answer_for(event, records).headline)
        y = {"evict": PAD - 12, "bind": PAD - 4, "taint": PAD - 20, "untaint": PAD - 20}[kind]
        parts.append(
            f'<a href="#d-{event.id}"><circle cx="{scale.x(event.at):.1f}" cy="{y}" r="4" '
            f'fill="{COLOURS.get(kind, "#555")}" class="marker {kind}-marker">'
            f"<title>{title}</title></circle></a>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _reason_chart(day: Day) -> str:
    hours: Counter[tuple[str, str]] = Counter()
    for event in day.decisions:
        d = as_decision(event)
        hours[(event.at.strftime("%Y-%m-%d %H:00"), f"{d.get('kind')} {d.get('reason')}")] += 1
    if not hours:
        return "<p>No decisions in this range.</p>"
    slots = sorted({h for h, _ in hours})
    reasons = sorted({r for _, r in hours})
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"]
    top = max(sum(hours[(h, r)] for r in reasons) for h in slots)
    bar = (WIDTH - 2 * PAD) / len(slots)
    parts = [f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" class="chart" id="reasons">']
    for i, slot in enumerate(slots):
        base = float(HEIGHT - PAD)
        for j, reason in enumerate(reasons):
            count = hours[(slot, reason)]
            if not count:
                continue
            h = (HEIGHT - 2 * PAD) * count / top
            base -= h
            parts.append(
                f'<rect x="{PAD + i * bar:.1f}" y="{base:.1f}" width="{bar * 0.8:.1f}" '
                f'height="{h:.1f}" fill="{palette[j % len(palette)]}" class="bar">'
                f"<title>{slot}: {count} × {html.escape(reason)}</title></rect>"
            )
        parts.append(
            f'<text x="{PAD + i * bar:.1f}" y="{HEIGHT - 8}" class="tick">{slot[11:16]}</text>'
        )
    legend = " ".join(
        f'<span style="color:{palette[j % len(palette)]}">■</span> {html.escape(r)}'
        for j, r in enumerate(reasons)
    )
    return "".join(parts) + f"</svg><p class='legend'>{legend}</p>"


_CSS = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222}
.chart{width:100%;max-width:960px;background:#fff;border:1px solid #ddd}
.grid{stroke:#eee}.tick{font-size:10px;fill:#666;text-anchor:middle}
.window{fill:#4a90d9;opacity:.12}.line{fill:none;stroke-width:1.5}
.line.cpu{stroke:#1f77b4}.line.mem{stroke:#17becf}
.threshold{stroke-dasharray:6 4;stroke-width:1}.threshold.cpu{stroke:#1f77b4}
.threshold.mem{stroke:#17becf}table{border-collapse:collapse;margin:8px 0 24px}
td,th{border-bottom:1px solid #eee;padding:3px 8px;text-align:left;vertical-align:top}
.legend span{font-size:16px}.over{color:#b00020}
"""


def _overcommit(day: Day) -> list[str]:
    """The over-commit section, only when a node was over its allocatable."""
    if not day.overcommit:
        return []
    head, *rows = day.overcommit
    items = "".join(f"<li>{html.escape(row.strip())}</li>" for row in rows)
    return [
        "<h2 class='over'>Nodes over their allocatable</h2>",
        f"<p class='over'>{html.escape(head)}</p><ul>{items}</ul>",
    ]


def render(
    day: Day, records: list[Event], *, title: str = "tide report", extra: Sequence[str] = ()
) -> str:
    """The page: decisions per reason, ``extra`` sections (HTML: the what-if view), then
    one chart and one table per node."""
    scale = _Scale(day)
    body = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{format_time(day.start)} → {format_time(day.end)}; {len(day.decisions)} "
        "decisions. Lines: <b style='color:#1f77b4'>CPU</b> and <b style='color:#17becf'>"
        "memory</b> use as % of capacity; dashed: eviction thresholds; shaded: revocable "
        "window open; dots: <b style='color:#d62728'>evictions</b>, <b style='color:#2ca02c'>"
        "binds</b>, <b style='color:#ff7f0e'>taints</b> (hover for why).</p>",
        "<h2>Decisions per reason per hour</h2>",
        _reason_chart(day),
        *_overcommit(day),
        *extra,
    ]
    for node in day.nodes.values():
        zone = f" (zone {html.escape(node.zone)})" if node.zone else ""
        body.append(f"<h2>{html.escape(node.name)}{zone}</h2>")
        body.append(_node_chart(day, node, records, scale))
        if node.decisions:
            rows = "".join(
                f"<tr id='d-{e.id}'><td>{format_time(e.at)}</td><td>{as_decision(e).get('kind')}"
                f"</td><td>{html.escape(answer_for(e, records).headline)}</td></tr>"
                for e in node.decisions
            )
            body.append(f"<table><tr><th>at</th><th>kind</th><th>why</th></tr>{rows}</table>")
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )
