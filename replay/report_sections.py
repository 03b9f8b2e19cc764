"""The text sections of ``tide report``: the cluster summary, the contents list, the binds
and each node's decision table.

An incident review starts from what was decided, where and when, so the page opens with
a summary (the span, the decisions per kind and reason with the nodes they hit, the
nodes ordered by what happened on them) and a contents list whose entries are the
node anchors (``#node-shared-1``) a colleague can be linked to.

For a bind, kube-scheduler-simulator users look for each node's filter verdict and each
score plugin's score. A tide bind records less: the chosen node, its total score, how
many feasible nodes the search found, the job and queue (``AllocateEvidence``). The
search stops once it has found enough feasible nodes and prunes the scoring, so the
other nodes' scores and the predicates that rejected them were never computed at
decision time; the binds section shows what the record holds (with any further evidence
key a newer or imported record carries), then per bind a table of nodes derived from the
log (:mod:`replay.bindview`): the feasible nodes by total score with each plugin's score
and its weighted parts, then the refused nodes counted by the check that refused them.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from replay.bindview import BindView, PluginScore, failed_what
from replay.report_style import KIND_NAMES, kind_rank
from replay.units import humanize
from streams.events import Event, format_time
from streams.payloads import as_decision, evidence_of

#: how many feasible nodes a bind's node table lists (the rest are counted)
TOP_NODES = 10

#: the bind evidence keys the binds table has a column for
_BIND_KEYS = ("node", "score", "feasible", "gradient", "best_effort", "job", "queue")


@dataclass(frozen=True)
class NodeEntry:
    """What the summary and contents say about one node, in page order."""

    name: str
    anchor: str
    zone: str
    samples: int
    decisions: Sequence[Event]


def anchors(names: Sequence[str]) -> dict[str, str]:
    """Each node's anchor: ``node-`` and its name (characters an id cannot hold become
    ``-``; a second node that would get the same anchor gets a ``-2`` suffix, and so on)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        base = "node-" + re.sub(r"[^A-Za-z0-9_.-]", "-", name)
        anchor, n = base, 1
        while anchor in taken:
            n += 1
            anchor = f"{base}-{n}"
        taken.add(anchor)
        out[name] = anchor
    return out


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    if not minutes:
        return f"{int(seconds)} s"
    if minutes >= 3 * 1440:
        return f"{minutes / 1440:.1f} days"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _kinds_text(decisions: Sequence[Event]) -> str:
    counts = Counter(str(as_decision(e).get("kind")) for e in decisions)
    return ", ".join(
        f"{counts[k]} {html.escape(KIND_NAMES.get(k, k))}" for k in sorted(counts, key=kind_rank)
    )


def node_link(entry: NodeEntry) -> str:
    """A link to ``entry``'s section."""
    return f"<a href='#{entry.anchor}'>{html.escape(entry.name)}</a>"


def node_stats(entry: NodeEntry) -> str:
    """One phrase: the node's decisions by kind, or that it had none; and its samples."""
    said = (
        f"{len(entry.decisions)} decision{'s' if len(entry.decisions) != 1 else ''} "
        f"({_kinds_text(entry.decisions)})"
        if entry.decisions
        else "no decisions"
    )
    return f"{said}; {entry.samples} samples" if entry.samples else f"{said}; no samples"


def summary(
    *,
    start: str,
    end: str,
    seconds: float,
    decisions: Sequence[Event],
    nodes: Sequence[NodeEntry],
    extra: Sequence[str] = (),
) -> str:
    """The cluster summary: span, decisions per kind and reason (where, first and last)
    and the nodes the decisions were on, most first."""
    hit = [n for n in nodes if n.decisions]
    sampled = sum(1 for n in nodes if n.samples)
    lines = [
        "<section id='summary'><h2>Summary</h2>",
        f"<p>From <b>{start}</b> to <b>{end}</b> ({_duration(seconds)}): "
        f"<b>{len(decisions)}</b> decisions"
        + (f" ({_kinds_text(decisions)})" if decisions else "")
        + f", on {len(hit)} of the {len(nodes)} nodes shown ({sampled} with usage samples).</p>",
        *extra,
    ]
    if decisions:
        where: dict[tuple[str, str], list[Event]] = {}
        for event in decisions:
            d = as_decision(event)
            where.setdefault((str(d.get("kind")), str(d.get("reason"))), []).append(event)
        links = {n.name: node_link(n) for n in nodes}
        rows = []
        for key in sorted(where, key=lambda k: (kind_rank(k[0]), k[1])):
            events = where[key]
            per_node = Counter(str(as_decision(e).get("node") or "") for e in events)
            on = ", ".join(
                f"{links.get(name, html.escape(name))} ({n})"
                for name, n in sorted(per_node.items(), key=lambda item: (-item[1], item[0]))
            )
            rows.append(
                f"<tr><td>{html.escape(key[0])}</td><td>{html.escape(key[1])}</td>"
                f"<td class='n'>{len(events)}</td><td>{on}</td>"
                f"<td class='at'>{format_time(events[0].at)}</td>"
                f"<td class='at'>{format_time(events[-1].at)}</td></tr>"
            )
        lines.append(
            "<table class='summary'><tr><th>kind</th><th>reason</th><th class='n'>count</th>"
            f"<th>on nodes</th><th>first</th><th>last</th></tr>{''.join(rows)}</table>"
        )
    if hit:
        items = "".join(f"<li>{node_link(n)}: {node_stats(n)}</li>" for n in hit)
        lines.append(f"<p>Nodes with decisions, most first:</p><ol class='hit'>{items}</ol>")
    lines.append("</section>")
    return "\n".join(lines)


def contents(sections: Sequence[tuple[str, str]], nodes: Sequence[NodeEntry]) -> str:
    """The contents list: the page's sections, then every node (in page order)."""
    items = "".join(f"<li><a href='#{anchor}'>{html.escape(t)}</a></li>" for anchor, t in sections)
    node_items = "".join(f"<li>{node_link(n)} — {node_stats(n)}</li>" for n in nodes)
    return (
        f"<nav id='contents'><h2>Contents</h2><ul>{items}</ul>"
        f"<p>Nodes (decisions first, most first; then those with samples; then the rest):</p>"
        f"<ol>{node_items}</ol></nav>"
    )


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if value is True:
        return "yes"
    return html.escape(str(value)) if value not in (None, "", False) else ""


def binds(
    decisions: Sequence[Event],
    links: Mapping[str, str],
    views: Mapping[str, BindView] | None = None,
) -> str:
    """The binds: per pod, the node chosen and what the scheduler recorded about it; then
    per bind its node table (``views``: bind id → :class:`~replay.bindview.BindView`;
    None when the page was built without them, said in one line)."""
    found = [e for e in decisions if as_decision(e).get("kind") == "bind"]
    if not found:
        return ""
    rows = []
    for event in found:
        d = as_decision(event)
        evidence = evidence_of(d)
        other = {k: v for k, v in sorted(evidence.items()) if k not in _BIND_KEYS}
        more = "; ".join(
            f"{html.escape(k)}: {html.escape(str(humanize(v, key=k)))}" for k, v in other.items()
        )
        node = str(d.get("node") or "")
        cells = [
            f"<a href='#d-{event.id}'>{format_time(event.at)}</a>",
            html.escape(f"{d.get('namespace')}/{d.get('pod')}"),
            links.get(node, html.escape(node)),
            *(_cell(evidence.get(k)) for k in _BIND_KEYS[1:]),
            html.escape(str(d.get("reason"))),
            more,
            f"<a href='#b-{event.id}'>nodes</a>" if views is not None and event.id in views else "",
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "at",
            "pod",
            "node",
            "score",
            "feasible nodes",
            "gradient",
            "best effort",
            "job",
            "queue",
            "reason",
            "other evidence",
            "per node",
        )
    )
    if views is None:
        per_node = ["<p class='note'>The per-node view was not derived for this page.</p>"]
    else:
        per_node = [node_table(views[e.id], links) for e in found if e.id in views]
        if len(per_node) < len(found):  # each view evaluates every node: a page keeps a few
            per_node.append(
                f"<p class='note'>Per-node views for the first {len(per_node)} of the "
                f"{len(found)} binds on this page (<code>tide report --bind-views N</code> "
                "derives more).</p>"
            )
    return (
        "<section id='binds'><h2>Binds: what the scheduler recorded</h2>"
        "<p class='note'>Per bind, tide records the node chosen, its total score (the sum of "
        "the node-order plugins' scores), how many feasible nodes the search had found, the "
        "resources it was placed on (<i>idle</i>, or <i>best effort</i> for backfill) and the "
        "job and queue. It does not record the other nodes' scores, each plugin's share of a "
        "score, or which predicate rejected a node: the search stops once it has found enough "
        "feasible nodes and prunes the scoring, so those were never computed. Any further "
        "evidence a record carries is shown in the other evidence column.</p>"
        f"<table class='binds'><tr>{head}</tr>{''.join(rows)}</table>"
        "<h3>Per bind, every node</h3>"
        "<p class='note'>Derived from the log: at each bind's session, the session is "
        "rebuilt with the configuration in force and every node is asked about the pod "
        "just before it was placed — the feasible nodes by total score (each plugin's "
        f"score, with its parts as raw score × weight; the top {TOP_NODES}), then the nodes "
        "refused, counted by the check that refused them. The chosen node's total is the "
        "recorded score.</p>" + "".join(per_node) + "</section>"
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _score_cell(found: PluginScore | None) -> str:
    if found is None:
        return ""
    parts = "<br>".join(
        html.escape(f"{p.name} {_cell(p.raw)}×{_cell(p.weight)}") for p in found.parts
    )
    return _cell(float(found.score)) + (f"<br><span class='parts'>{parts}</span>" if parts else "")


def node_table(view: BindView, links: Mapping[str, str]) -> str:
    """One bind's nodes: the feasible ones by total score (the top :data:`TOP_NODES`),
    with each plugin's score, then the refused ones counted by check and reason; or the
    one line saying why the view could not be derived."""
    d = as_decision(view.decision)
    title = (
        f"<h4 id='b-{view.decision.id}'>{format_time(view.decision.at)} "
        f"{html.escape(view.pod)} → {links.get(view.node, html.escape(view.node))}</h4>"
    )
    if view.problem:
        return f"<div class='bind'>{title}<p>Not derived: {html.escape(view.problem)}.</p></div>"
    plugins = view.plugins()
    ranked = view.ranked()
    head = "".join(
        f"<th>{h}</th>"
        for h in ("rank", "node", "total", *(html.escape(p) for p in plugins), "verdict")
    )
    rows = []
    for rank, n in enumerate(ranked[:TOP_NODES], 1):
        verdict = "chosen" if n.node == view.node else ""
        verdict += "" if n.fits_idle else (", " if verdict else "") + "fits only future idle"
        if n.score_error:
            verdict += (", " if verdict else "") + f"score zeroed: {n.score_error}"
        cells = [
            str(rank),
            links.get(n.node, html.escape(n.node)),
            _cell(float(n.total)),
            *(_score_cell(next((x for x in n.scores if x.plugin == p), None)) for p in plugins),
            html.escape(verdict),
        ]
        chosen = " class='chosen'" if n.node == view.node else ""
        rows.append(f"<tr{chosen}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    if len(ranked) > TOP_NODES:
        rest = ranked[TOP_NODES:]
        rows.append(
            f"<tr><td colspan='{len(plugins) + 4}'>… {_plural(len(rest), 'more feasible node')}"
            f" (totals {_cell(float(rest[-1].total))} to {_cell(float(rest[0].total))})</td></tr>"
        )
    lines = []
    for check, reasons in view.failed():
        count = sum(len(names) for _, names in reasons)
        said = "; ".join(
            f"{html.escape(reason)} ({_plural(len(names), 'node')}: {_names(names, links)})"
            for reason, names in reasons
        )
        lines.append(
            f"<li>{_plural(count, 'node')} failed {html.escape(failed_what(check))}: {said}</li>"
        )
    warn = (
        ""
        if view.agrees
        else "<p class='over'>The derived total of the chosen node differs from the recorded "
        f"score ({html.escape(str(evidence_of(d).get('score')))}).</p>"
    )
    table = f"<table class='nodes'><tr>{head}</tr>{''.join(rows)}</table>" if rows else ""
    failed = f"<ul class='failed'>{''.join(lines)}</ul>" if lines else ""
    return f"<div class='bind'>{title}{warn}{table}{failed}</div>"


def _names(names: Sequence[str], links: Mapping[str, str], most: int = 5) -> str:
    shown = ", ".join(links.get(n, html.escape(n)) for n in names[:most])
    return shown + (f", … {len(names) - most} more" if len(names) > most else "")


def decision_table(decisions: Sequence[Event], why: Mapping[str, str]) -> str:
    """A node's decisions, one row each (the rows its chart's markers link to)."""
    if not decisions:
        return ""
    rows = "".join(
        f"<tr id='d-{e.id}'><td class='at'>{format_time(e.at)}</td>"
        f"<td>{html.escape(str(as_decision(e).get('kind')))}</td>"
        f"<td>{html.escape(str(as_decision(e).get('reason')))}</td>"
        f"<td>{html.escape(why.get(e.id, ''))}</td></tr>"
        for e in decisions
    )
    return (
        "<table class='decisions'><tr><th>at</th><th>kind</th><th>reason</th><th>why</th></tr>"
        f"{rows}</table>"
    )
