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
from datetime import datetime

from replay.bindview import BindFold
from replay.explain import headline
from replay.report_axes import Frame
from replay.report_charts import NODE_HEIGHT, TimeScale, node_panel, reason_panel
from replay.report_pass import Before, Day, NodeSeries, PagePass
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
from streams.events import Event, format_time

__all__ = ["Before", "Day", "NodeSeries", "collect", "headlines", "ordered", "render", "series"]


def collect(
    events: Iterable[Event],
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    only: Sequence[str] = (),
    binds: BindFold | None = None,
    before: Before | None = None,
) -> Day:
    """Fold ``events`` into a :class:`Day` (nodes in ``only``, or all; times in range).

    ``binds`` derives each bind's per-node view in the same pass (a
    :class:`~replay.bindview.BindFold` given the log's decisions); when ``events`` is a
    list it is made from the list's own decisions. Otherwise the day has no bind views.
    ``before``: ``events`` start at its World's position, not at offset 0
    (:mod:`replay.report_pass`: the page is the same).
    """
    if binds is None and isinstance(events, list):
        binds = BindFold(events)
    page = PagePass(since=since, until=until, only=only, binds=binds, before=before)
    for event in events:
        page.feed(event)
    return page.day()


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
