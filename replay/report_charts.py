"""The two charts of ``tide report``: a node's pressure panel and the decisions per reason.

A node's panel draws CPU and memory use (% of capacity) on a continuous time axis with
both axes numbered, the eviction thresholds dotted in their resource's colour, the
revocable windows shaded and one marker per decision inside the plot at its instant, in
a lane per kind. Decisions of a kind too close to draw apart share one marker that shows
their count; its hover text lists each one's ``audit why`` headline, and the table under
the chart lists them all (so a print loses nothing). Each panel has its own legend.

The reason chart stacks decisions per slot (one hour, wider on long logs) with every
slot drawn, empty or not, numbers on the value axis and each bar's count written on it;
a kind keeps its colour and its reasons are told apart by hatching.

Inline SVG, no script (see :mod:`replay.report`); :mod:`replay.report_style` holds the
palette and shapes.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime

from replay.report_axes import WIDTH, Frame, Slots, bar_axes, slots, time_ticks, value_ticks
from replay.report_axes import zone_name as zone_of
from replay.report_style import (
    HATCHES,
    KIND_NAMES,
    RESOURCE_COLOURS,
    RESOURCE_DASHES,
    THRESHOLD_DASH,
    kind_colour,
    kind_ink,
    kind_rank,
    marker_path,
)
from streams.events import Event, format_time
from streams.payloads import as_decision

NODE_HEIGHT, REASON_HEIGHT = 270, 250
#: the y of each kind's marker lane, below the plot's top
_LANES = {"evict": 12, "taint": 30, "untaint": 48, "bind": 66}
#: markers of one kind closer than this (px) share one marker with their count
MIN_GAP = 18.0
_PCT_TOP = 110.0


class TimeScale:
    """Instants to x and percentages to y in a node panel's :class:`Frame`."""

    def __init__(self, start: datetime, end: datetime, *, frame: Frame) -> None:
        self.start, self.end, self.frame = start, end, frame
        self.t0 = start.timestamp()
        self.span = max(end.timestamp() - self.t0, 1.0)

    def x(self, at: datetime) -> float:
        """The x of instant ``at``."""
        f = self.frame
        return f.left + (f.right - f.left) * (at.timestamp() - self.t0) / self.span

    def y(self, percent: float) -> float:
        """The y of ``percent`` (clamped to 0–110 %)."""
        f = self.frame
        value = min(max(percent, 0.0), _PCT_TOP)
        return f.bottom - (f.bottom - f.top) * value / _PCT_TOP


def _time_axes(scale: TimeScale) -> list[str]:
    f = scale.frame
    out = []
    for pct in (0, 25, 50, 75, 100):
        y = scale.y(pct)
        out.append(
            f'<line x1="{f.left}" x2="{f.right}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
            f'<text x="{f.left - 6}" y="{y + 4:.1f}" class="tick y">{pct}%</text>'
        )
    for at, label in time_ticks(scale.start, scale.end):
        x = scale.x(at)
        out.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{f.top}" y2="{f.bottom}" class="grid"/>'
            f'<text x="{x:.1f}" y="{f.bottom + 16}" class="tick x">{label}</text>'
        )
    middle = (f.top + f.bottom) / 2
    out.append(
        f'<line x1="{f.left}" x2="{f.left}" y1="{f.top}" y2="{f.bottom}" class="axis"/>'
        f'<line x1="{f.left}" x2="{f.right}" y1="{f.bottom}" y2="{f.bottom}" class="axis"/>'
        f'<text x="{(f.left + f.right) / 2:.0f}" y="{f.bottom + 34}" class="axis-title">'
        f"time ({zone_of(scale.start)})</text>"
        f'<text x="14" y="{middle:.0f}" class="axis-title" transform="rotate(-90 14 '
        f'{middle:.0f})">% of capacity</text>'
    )
    return out


def groups(decisions: Sequence[Event], scale: TimeScale) -> list[tuple[str, list[Event]]]:
    """``decisions`` as (kind, decisions) marker groups: per kind in time order, a group
    takes the decisions less than :data:`MIN_GAP` px after its first."""
    out: list[tuple[str, list[Event]]] = []
    by_kind: dict[str, list[Event]] = {}
    for event in decisions:
        by_kind.setdefault(str(as_decision(event).get("kind")), []).append(event)
    for kind in sorted(by_kind, key=kind_rank):
        current: list[Event] = []
        for event in sorted(by_kind[kind], key=lambda e: (e.at, e.offset)):
            if current and scale.x(event.at) - scale.x(current[0].at) >= MIN_GAP:
                out.append((kind, current))
                current = []
            current.append(event)
        if current:
            out.append((kind, current))
    return out


def _marker(kind: str, group: list[Event], *, scale: TimeScale, why: Mapping[str, str]) -> str:
    x = scale.x(group[0].at)
    y = scale.frame.top + _LANES.get(kind, _LANES["bind"])
    count = len(group)
    size = 7.0 if count > 1 else 5.0
    colour = kind_colour(kind)
    when = format_time(group[0].at)
    if count > 1:
        when = f"{count} {KIND_NAMES.get(kind, kind)}s, {when} to {format_time(group[-1].at)}"
    title = html.escape("\n".join([when, *(why.get(e.id, "") for e in group)]))
    label = (
        f'<text x="{x:.1f}" y="{y + 3:.1f}" class="count" fill="{kind_ink(kind)}">{count}</text>'
        if count > 1
        else ""
    )
    safe = html.escape(kind, quote=True)
    return (
        f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y:.1f}" y2="{scale.frame.bottom}" '
        f'class="guide" stroke="{colour}"/>'
        f'<a href="#d-{group[0].id}" class="marker-link"><g class="marker-group" '
        f'data-count="{count}" data-kind="{safe}"><title>{title}</title>'
        f'{marker_path(kind, x=x, y=y, size=size)} fill="{colour}" class="marker {safe}-marker"/>'
        f"{label}</g></a>"
    )


def _swatch(body: str) -> str:
    return f'<svg viewBox="0 0 30 14" aria-hidden="true">{body}</svg>'


def _line_swatch(colour: str, dash: str, *, width: float = 2.0) -> str:
    return _swatch(
        f'<line x1="1" x2="29" y1="7" y2="7" stroke="{colour}" stroke-width="{width}" '
        f'stroke-dasharray="{dash or "none"}"/>'
    )


def _legend(items: list[tuple[str, str]]) -> str:
    rows = "".join(f"<li>{swatch}<span>{text}</span></li>" for swatch, text in items)
    return f"<ul class='legend'>{rows}</ul>"


def node_panel(
    node_name: str,
    *,
    rows: Sequence[tuple[datetime, float, float, float, float]],
    windows: Sequence[tuple[datetime | None, datetime | None]],
    zone: str,
    decisions: Sequence[Event],
    thresholds: Mapping[str, float],
    scale: TimeScale,
    why: Mapping[str, str],
) -> str:
    """One node's figure: the chart (pressure, thresholds, windows, markers) and its
    legend (only what the chart shows)."""
    f = scale.frame
    safe = html.escape(node_name, quote=True)
    parts = [f'<svg viewBox="0 0 {WIDTH} {f.height}" class="chart node-chart" data-node="{safe}">']
    for opened, closed in windows:
        x1, x2 = scale.x(opened or scale.start), scale.x(closed or scale.end)
        parts.append(
            f'<rect x="{x1:.1f}" y="{f.top}" width="{max(x2 - x1, 0):.1f}" '
            f'height="{f.bottom - f.top}" class="window"><title>zone {html.escape(zone)} '
            "window open</title></rect>"
        )
    parts += _time_axes(scale)
    legend: list[tuple[str, str]] = []
    for index, resource in ((1, "cpu"), (2, "memory")):
        colour, dash = RESOURCE_COLOURS[resource], RESOURCE_DASHES[resource]
        name = "CPU" if resource == "cpu" else "memory"
        legend.append((_line_swatch(colour, dash), f"{name} use"))
        if rows:
            values = [(r[0], r[1] if index == 1 else r[2]) for r in rows]
            points = " ".join(f"{scale.x(at):.1f},{scale.y(v):.1f}" for at, v in values)
            parts.append(
                f'<polyline points="{points}" class="line {resource}" stroke="{colour}" '
                f'stroke-dasharray="{dash or "none"}"/>'
            )
    levels = sorted(thresholds.items())
    for resource, level in levels:
        colour = RESOURCE_COLOURS.get(resource, "#444")
        name = "CPU" if resource == "cpu" else resource
        y = scale.y(level)
        # a label close to a higher threshold's goes under its line, not over the other
        crowded = any(o > level and abs(scale.y(o) - y) < 12 for _, o in levels)
        label_y = y + 11 if crowded else y - 3
        parts.append(
            f'<line x1="{f.left}" x2="{f.right}" y1="{y:.1f}" y2="{y:.1f}" class="threshold '
            f'{resource}" stroke="{colour}" stroke-dasharray="{THRESHOLD_DASH}"><title>'
            f"{name} eviction threshold {level:g}%</title></line>"
            f'<text x="{f.right - 4}" y="{label_y:.1f}" class="threshold-label" fill="{colour}">'
            f"{name} threshold {level:g}%</text>"
        )
        legend.append(
            (
                _line_swatch(colour, THRESHOLD_DASH, width=1.5),
                f"{name} eviction threshold {level:g}%",
            )
        )
    if windows:
        legend.append(
            (
                _swatch('<rect x="1" y="1" width="28" height="12" class="window"/>'),
                f"revocable window of zone {html.escape(zone)} open",
            )
        )
    if not rows:
        parts.append(
            f'<text x="{(f.left + f.right) / 2:.0f}" y="{(f.top + f.bottom) / 2:.0f}" '
            'class="nosamples">no samples</text>'
        )
    found = groups(decisions, scale)
    parts += [_marker(kind, group, scale=scale, why=why) for kind, group in found]
    kinds = Counter(kind for kind, group in found for _ in group)
    for kind in sorted(kinds, key=kind_rank):
        shape = marker_path(kind, x=15, y=7, size=4.5)
        legend.append(
            (
                _swatch(f'{shape} fill="{kind_colour(kind)}" class="marker"/>'),
                f"{html.escape(KIND_NAMES.get(kind, kind))} ({kinds[kind]})",
            )
        )
    if any(len(group) > 1 for _, group in found):
        legend.append(
            (
                _swatch(
                    f'{marker_path("bind", x=15, y=7, size=6.5)} fill="#fff" class="marker"/>'
                    '<text x="15" y="10" class="count">n</text>'
                ),
                "n decisions too close to draw apart",
            )
        )
    parts.append("</svg>")
    return f"<figure class='panel'>{''.join(parts)}{_legend(legend)}</figure>"


def series_keys(decisions: Sequence[Event]) -> list[tuple[str, str]]:
    """The (kind, reason) pairs of ``decisions``, kinds in the page's order."""
    found = {
        (str(as_decision(e).get("kind")), str(as_decision(e).get("reason"))) for e in decisions
    }
    return sorted(found, key=lambda k: (kind_rank(k[0]), k[1]))


def _fills(keys: list[tuple[str, str]]) -> tuple[dict[tuple[str, str], str], list[str]]:
    """Each series' fill (its kind's colour, hatched from its kind's second reason on)
    and the patterns they use."""
    fills: dict[tuple[str, str], str] = {}
    defs: list[str] = []
    seen: Counter[str] = Counter()
    for kind, reason in keys:
        i = seen[kind]
        seen[kind] += 1
        colour, hatch = kind_colour(kind), HATCHES[i % len(HATCHES)]
        if not hatch:
            fills[(kind, reason)] = colour
            continue
        pid = f"hatch-{len(defs)}"  # the series' own: kinds are any text on imported logs
        defs.append(
            f'<pattern id="{pid}" patternUnits="userSpaceOnUse" width="6" height="6" '
            f'data-colour="{colour}"><rect width="6" height="6" fill="{colour}"/>'
            f'<path d="{hatch}" stroke="{kind_ink(kind)}" stroke-width="1.3" '
            'stroke-linecap="round"/></pattern>'
        )
        fills[(kind, reason)] = f"url(#{pid})"
    return fills, defs


def reason_panel(decisions: Sequence[Event], *, start: datetime, end: datetime) -> str:
    """The decisions per reason per slot: the stacked bars with their counts, the
    legend, and the same counts as a table (the slots with decisions)."""
    if not decisions:
        return "<p>No decisions in this range.</p>"
    found = slots(start, end)
    counts: Counter[tuple[int, tuple[str, str]]] = Counter()
    for event in decisions:
        d = as_decision(event)
        counts[(found.index(event.at), (str(d.get("kind")), str(d.get("reason"))))] += 1
    keys = series_keys(decisions)
    totals = Counter({i: 0 for i in range(len(found.starts))})
    for (i, _), n in counts.items():
        totals[i] += n
    ticks = value_ticks(max(totals.values()) * 1.08)
    frame = Frame(REASON_HEIGHT)
    fills, defs = _fills(keys)
    parts = [
        f'<svg viewBox="0 0 {WIDTH} {REASON_HEIGHT}" class="chart" id="reasons-chart" '
        f'data-slots="{len(found.starts)}" data-slot-hours="{found.hours}">'
        f"<defs>{''.join(defs)}</defs>",
        *bar_axes(frame, found, ticks=ticks, unit="decisions", zone=zone_of(start)),
    ]
    slot = (frame.right - frame.left) / len(found.starts)
    per_unit = (frame.bottom - frame.top) / ticks[-1]
    for i in range(len(found.starts)):
        x, base = frame.left + slot * (i + 0.1), frame.bottom
        for key in keys:
            n = counts[(i, key)]
            if not n:
                continue
            h = per_unit * n
            base -= h
            label = html.escape(f"{found.label(i)}: {n} × {key[0]} {key[1]}")
            kind = html.escape(key[0], quote=True)
            parts.append(
                f'<rect x="{x:.1f}" y="{base:.1f}" width="{slot * 0.8:.1f}" height="{h:.1f}" '
                f'fill="{fills[key]}" class="bar" data-kind="{kind}" data-slot="{i}" '
                f'data-colour="{kind_colour(key[0])}" data-count="{n}">'
                f"<title>{label}</title></rect>"
            )
            if h >= 13 and slot >= 14:
                parts.append(
                    f'<text x="{x + slot * 0.4:.1f}" y="{base + h / 2 + 4:.1f}" '
                    f'class="bar-count" fill="{kind_ink(key[0])}" stroke="{kind_colour(key[0])}" '
                    f'stroke-width="4" paint-order="stroke">{n}</text>'
                )
        if totals[i]:
            parts.append(
                f'<text x="{x + slot * 0.4:.1f}" y="{base - 4:.1f}" class="bar-total">'
                f"{totals[i]}</text>"
            )
    parts.append("</svg>")
    legend = [
        (
            _swatch(
                f'<rect x="1" y="1" width="28" height="12" fill="{fills[key]}" stroke="#222" '
                'stroke-width=".5"/>'
            ),
            f"{html.escape(key[0])} · {html.escape(key[1])} "
            f"({sum(n for (_, k), n in counts.items() if k == key)})",
        )
        for key in keys
    ]
    return f"<figure class='panel'>{''.join(parts)}{_legend(legend)}</figure>" + _table(
        found, keys=keys, counts=counts
    )


def _table(
    found: Slots, *, keys: list[tuple[str, str]], counts: Counter[tuple[int, tuple[str, str]]]
) -> str:
    head = "".join(f"<th class='n'>{html.escape(k)} {html.escape(r)}</th>" for k, r in keys)
    rows = []
    for i in range(len(found.starts)):
        cells = [counts[(i, key)] for key in keys]
        if any(cells):
            body = "".join(f"<td class='n'>{n or ''}</td>" for n in cells)
            rows.append(f"<tr><td>{found.label(i)}</td>{body}</tr>")
    return (
        f"<table class='reasons-table'><tr><th>{found.heading()}</th>{head}</tr>"
        f"{''.join(rows)}</table>"
    )


__all__ = ["NODE_HEIGHT", "Slots", "TimeScale", "groups", "node_panel", "reason_panel"]
