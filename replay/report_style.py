"""The look of ``tide report``: its palette, marker shapes, dash patterns and stylesheet.

The page is printed for incident reviews, often in grey, and read by colour-blind
engineers, so every colour comes from the Okabe-Ito palette (distinct under the common
colour-vision deficiencies) and means one thing on the whole page: CPU, memory, a kind
of decision, or a side of the what-if view. Colours alone never carry a distinction:
the two usage lines differ in dash pattern, the decision kinds in marker shape, and the
reasons of one kind (same colour) in hatch pattern, so a grey print tells them apart.
Neutral greys draw the grid, the axes and the revocable windows and mean no series.
"""

from __future__ import annotations

from typing import Final

#: Okabe & Ito (2008), "Color Universal Design": the page's only data colours
PALETTE: Final = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
}

#: the usage lines and their thresholds (a threshold is its resource's colour, dotted)
RESOURCE_COLOURS: Final = {"cpu": PALETTE["blue"], "memory": PALETTE["orange"]}
#: the usage lines' dash patterns (``stroke-dasharray``; ``""`` is solid)
RESOURCE_DASHES: Final = {"cpu": "", "memory": "7 3"}
THRESHOLD_DASH: Final = "2 3"

#: decision kinds in the order the page lists and stacks them
KINDS: Final = ("evict", "bind", "taint", "untaint")
KIND_COLOURS: Final = {
    "evict": PALETTE["vermillion"],
    "bind": PALETTE["black"],
    "taint": PALETTE["reddish purple"],
    "untaint": PALETTE["yellow"],
}
KIND_NAMES: Final = {"evict": "eviction", "bind": "bind", "taint": "taint", "untaint": "untaint"}
#: the ink drawn on a kind's colour (a count in a marker, a hatch in a bar)
KIND_INK: Final = {"evict": "#ffffff", "bind": "#ffffff", "taint": "#000000", "untaint": "#000000"}
#: a kind not in :data:`KINDS` (an imported record) is drawn in neutral grey
OTHER_COLOUR: Final = "#777777"

#: the what-if view's two sides
BEFORE_COLOUR: Final = PALETTE["sky blue"]
AFTER_COLOUR: Final = PALETTE["bluish green"]

#: hatch paths for the reasons of one kind, drawn on a 6 × 6 tile (the first is solid)
HATCHES: Final = (
    "",
    "M0,6 L6,0",
    "M0,0 L6,6",
    "M0,3 L6,3",
    "M3,0 L3,6",
    "M0,6 L6,0 M0,0 L6,6",
    "M1.5,1.5 h0.1 M4.5,4.5 h0.1",
)


def kind_rank(kind: str) -> tuple[int, str]:
    """Sort key of a decision ``kind``: :data:`KINDS` order, then any other by name."""
    return (KINDS.index(kind) if kind in KINDS else len(KINDS), kind)


def kind_colour(kind: str) -> str:
    """The colour of a decision ``kind`` (grey for a kind tide does not write)."""
    return KIND_COLOURS.get(kind, OTHER_COLOUR)


def kind_ink(kind: str) -> str:
    """The colour of what is drawn on ``kind``'s colour."""
    return KIND_INK.get(kind, "#ffffff")


def marker_path(kind: str, *, x: float, y: float, size: float) -> str:
    """An SVG element for ``kind``'s marker centred on ``(x, y)``: a triangle pointing
    down for an eviction, a circle for a bind, a square for a taint, a diamond for an
    untaint (and a circle for anything else)."""
    s = size
    if kind == "evict":
        d = f"M{x - 1.2 * s:.1f},{y - 0.8 * s:.1f}H{x + 1.2 * s:.1f}L{x:.1f},{y + 1.3 * s:.1f}Z"
    elif kind == "taint":
        d = f"M{x - s:.1f},{y - s:.1f}h{2 * s:.1f}v{2 * s:.1f}h{-2 * s:.1f}Z"
    elif kind == "untaint":
        r = 1.3 * s
        d = f"M{x:.1f},{y - r:.1f}L{x + r:.1f},{y:.1f}L{x:.1f},{y + r:.1f}L{x - r:.1f},{y:.1f}Z"
    else:
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{s:.1f}"'
    return f'<path d="{d}"'


CSS: Final = """
body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}
h1{margin:0 0 4px}h2{margin:28px 0 6px}h3{margin:16px 0 4px;font-size:15px}
.chart{width:100%;max-width:960px;background:#fff;display:block}
.panel{margin:0 0 8px}.grid{stroke:#e6e6e6}.axis{stroke:#444}
.tick{font-size:11px;fill:#444;text-anchor:middle}.tick.y{text-anchor:end}
.axis-title{font-size:11px;fill:#444;text-anchor:middle}
.window{fill:#000;opacity:.07}.line{fill:none;stroke-width:2}
.threshold{stroke-width:1.5}.threshold-label{font-size:10px;text-anchor:end}
.guide{stroke-width:1;stroke-dasharray:1 2;opacity:.6}
.marker{stroke:#222;stroke-width:.8}.count{font-size:9px;font-weight:bold;text-anchor:middle}
.bar-count{font-size:11px;font-weight:bold;text-anchor:middle}.bar-total{font-size:11px;text-anchor:middle;fill:#222}
.nosamples{font-size:16px;fill:#666;text-anchor:middle}
.legend{list-style:none;padding:0;margin:4px 0;display:flex;flex-wrap:wrap;gap:4px 16px}
.legend li{display:flex;align-items:center;gap:6px;font-size:12px}
.legend svg{width:30px;height:14px}
table{border-collapse:collapse;margin:8px 0 16px}
td,th{border-bottom:1px solid #e6e6e6;padding:3px 8px;text-align:left;vertical-align:top}
td.n,th.n{text-align:right}td.at,.binds td:first-child{white-space:nowrap}
.over{color:#b00020}.note{color:#444;max-width:900px}
.nodes tr.chosen td{font-weight:bold}.parts{color:#444;font-size:11px;font-weight:normal}
.bind h4{margin:12px 0 2px}.failed{margin:2px 0 12px}
nav ol{columns:22em 2;column-gap:32px;list-style-position:inside;padding-left:0;margin:4px 0}
.reasons-table td:first-child{white-space:nowrap}
.node-stats{color:#444;font-weight:normal;font-size:14px}
.top{font-size:12px;margin-left:8px}
@media print{
 body{margin:0;font-size:11px;max-width:none}
 *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
 a{color:inherit;text-decoration:none}.top{display:none}
 section.node{break-before:page}h2,h3{break-after:avoid}
 figure,tr,.bind{break-inside:avoid}.chart{max-width:100%}
 table{font-size:10px}td,th{padding:2px 4px}
}
@page{margin:12mm}
"""
