"""The what-if view of ``tide report``: two decision streams side by side.

Given a second log (``--against``) or another configuration (``--config``, replayed or
re-simulated), the report adds one section: decisions per hour before and after as paired
bars, the counts by reason that changed, and the decisions only one side has. The
comparison itself is :class:`replay.whatif.WhatIf`; this module only draws it (inline SVG,
no script, like the rest of the page).
"""

from __future__ import annotations

import html
from collections import Counter

from replay.whatif import WhatIf

WIDTH, HEIGHT, PAD = 960, 220, 40
BEFORE, AFTER = "#7f7f7f", "#9467bd"


def _hours(actions: list[tuple[str, str, str, str, str]]) -> Counter[str]:
    return Counter(at[:13].replace("T", " ") + ":00" for at, *_ in actions)


def _chart(whatif: WhatIf) -> str:
    before, after = _hours(whatif.before), _hours(whatif.after)
    slots = sorted(set(before) | set(after))
    if not slots:
        return "<p>No decisions on either side.</p>"
    top = max(max(before.values(), default=0), max(after.values(), default=0), 1)
    slot = (WIDTH - 2 * PAD) / len(slots)
    parts = [f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" class="chart" id="whatif">']
    for i, hour in enumerate(slots):
        for j, (count, colour, side) in enumerate(
            ((before[hour], BEFORE, "before"), (after[hour], AFTER, "after"))
        ):
            if not count:
                continue
            h = (HEIGHT - 2 * PAD) * count / top
            parts.append(
                f'<rect x="{PAD + i * slot + j * slot * 0.4:.1f}" y="{HEIGHT - PAD - h:.1f}" '
                f'width="{slot * 0.38:.1f}" height="{h:.1f}" fill="{colour}" '
                f'class="bar whatif-{side}"><title>{hour}: {count} decision(s) {side}'
                "</title></rect>"
            )
        parts.append(
            f'<text x="{PAD + i * slot:.1f}" y="{HEIGHT - 8}" class="tick">{hour[11:16]}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def whatif_section(whatif: WhatIf, *, label: str) -> str:
    """The what-if section of the page: summary, paired bars, changed counts, the lists."""
    head = (
        f"<h2>What if: {html.escape(label)}</h2><p>{len(whatif.before)} decisions before "
        f"(<b style='color:{BEFORE}'>grey</b>), {len(whatif.after)} after "
        f"(<b style='color:{AFTER}'>purple</b>); {whatif.real} real difference(s), "
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
