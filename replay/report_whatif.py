"""The what-if view of ``tide report``: two decision streams side by side.

Given a second log (``--against``) or another configuration (``--config``, replayed or
re-simulated), the report adds one section: decisions per hour before and after as paired
bars (every hour drawn, a numbered value axis, each bar's count on it, its own legend),
the counts by reason that changed, and the decisions only one side has. The comparison
itself is :class:`replay.whatif.WhatIf`; this module only draws it (inline SVG, no
script, like the rest of the page; the two sides' colours are theirs alone on the page
and "before" is hatched, so a grey print tells them apart).
"""

from __future__ import annotations

import html
from collections import Counter

from replay.report_axes import WIDTH, Frame, bar_axes, slots, value_ticks, zone_name
from replay.report_style import AFTER_COLOUR, BEFORE_COLOUR
from replay.whatif import WhatIf
from streams.events import parse_time

HEIGHT = 250
_HATCH = (
    '<pattern id="hatch-before" patternUnits="userSpaceOnUse" width="6" height="6" '
    f'data-colour="{BEFORE_COLOUR}"><rect width="6" height="6" fill="{BEFORE_COLOUR}"/>'
    '<path d="M0,6 L6,0" stroke="#000" stroke-width="1.3"/></pattern>'
)
_FILLS = {"before": "url(#hatch-before)", "after": AFTER_COLOUR}


def _chart(whatif: WhatIf) -> str:
    times = {
        side: [parse_time(at) for at, *_ in items]
        for side, items in (("before", whatif.before), ("after", whatif.after))
    }
    every = sorted(times["before"] + times["after"])
    if not every:
        return "<p>No decisions on either side.</p>"
    found = slots(every[0], every[-1])
    counts = {side: Counter(found.index(at) for at in ats) for side, ats in times.items()}
    top = max(max(c.values(), default=0) for c in counts.values())
    ticks = value_ticks(top * 1.08)
    frame = Frame(HEIGHT)
    parts = [
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" class="chart" id="whatif-chart">'
        f"<defs>{_HATCH}</defs>",
        *bar_axes(frame, found, ticks=ticks, unit="decisions", zone=zone_name(every[0])),
    ]
    slot = (frame.right - frame.left) / len(found.starts)
    per_unit = (frame.bottom - frame.top) / ticks[-1]
    for i in range(len(found.starts)):
        for j, side in enumerate(("before", "after")):
            count = counts[side][i]
            if not count:
                continue
            h = per_unit * count
            x = frame.left + slot * (i + 0.1 + j * 0.4)
            colour = BEFORE_COLOUR if side == "before" else AFTER_COLOUR
            parts.append(
                f'<rect x="{x:.1f}" y="{frame.bottom - h:.1f}" width="{slot * 0.38:.1f}" '
                f'height="{h:.1f}" fill="{_FILLS[side]}" stroke="#222" stroke-width=".5" '
                f'data-colour="{colour}" data-count="{count}" class="bar whatif-{side}">'
                f"<title>{found.label(i)}: {count} decision(s) {side}</title></rect>"
            )
            if slot >= 14:
                parts.append(
                    f'<text x="{x + slot * 0.19:.1f}" y="{frame.bottom - h - 4:.1f}" '
                    f'class="bar-total">{count}</text>'
                )
    parts.append("</svg>")
    legend = "".join(
        f"<li><svg viewBox='0 0 30 14' aria-hidden='true'><rect x='1' y='1' width='28' "
        f"height='12' fill='{_FILLS[side]}' stroke='#222' stroke-width='.5'/></svg>"
        f"<span>{side} ({len(times[side])})</span></li>"
        for side in ("before", "after")
    )
    return f"<figure class='panel'>{''.join(parts)}<ul class='legend'>{legend}</ul></figure>"


def whatif_section(whatif: WhatIf, *, label: str) -> str:
    """The what-if section of the page: summary, paired bars, changed counts, the lists."""
    head = (
        f"<h2>What if: {html.escape(label)}</h2><p>{len(whatif.before)} decisions before "
        f"(hatched), {len(whatif.after)} after (solid); {whatif.real} real difference(s), "
        f"{whatif.evidence_only} evidence-only.</p>"
    )
    changed = "".join(
        f"<tr><td>{dim}</td><td>{html.escape(value)}</td><td>{b}</td><td>{a}</td></tr>"
        for dim, value, b, a in whatif.table()
        if b != a and dim != "hour"
    )
    table = (
        f"<table><tr><th>by</th><th>value</th><th>before</th><th>after</th></tr>{changed}</table>"
        if changed
        else ""
    )
    rows = "".join(
        f"<tr class='whatif-row {cls}'><td>{sign}</td><td>{html.escape(at)}</td><td>{kind}"
        f"</td><td>{html.escape(target)}</td><td>{html.escape(node)}</td><td>{reason}</td></tr>"
        for cls, sign, items in (
            ("only-before", "−", whatif.only_before),
            ("only-after", "+", whatif.only_after),
        )
        for at, kind, target, node, reason in items
    )
    listing = (
        "<table><tr><th></th><th>at</th><th>kind</th><th>target</th><th>node</th>"
        f"<th>reason</th></tr>{rows}</table>"
        if rows
        else "<p>Both sides decide the same.</p>"
    )
    return head + _chart(whatif) + table + listing
