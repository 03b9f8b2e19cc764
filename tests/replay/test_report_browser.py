"""`tide report` in a real headless browser, on the demo's log: the page a reviewer prints.

In the DOM: the summary comes first, every in-page link resolves, the nodes come in the
order of what happened on them, each chart has tick labels on both axes and one legend,
a node without samples says so, decisions that coincide share one marker that shows their
count (markers inside the plot, never overlapping), the hour axis is continuous, the
colours are the palette's and distinct under deuteranopia and in grey, one colour means
one thing, and nothing is written to the console. In pixels: the screenshot is not blank
and shows the CPU, memory and eviction colours; printed, every node starts a page.

Uses Debian's chromium (``.ci/run`` installs it and requires it); skipped elsewhere when no
chromium is installed.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path
from typing import Any

import pytest

from replay.report import collect, ordered, render
from replay.report_style import KIND_COLOURS, PALETTE, RESOURCE_COLOURS
from streams.events import Event
from streams.recording import read_recording

GOLDEN = Path(__file__).resolve().parent / "golden"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

#: CI sets TIDE_REQUIRE_BROWSER=1 (``.ci/run`` installs chromium): there a missing browser
#: fails the test instead of skipping it
REQUIRED = os.environ.get("TIDE_REQUIRE_BROWSER") == "1"
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and not REQUIRED, reason="chromium is not installed"
)

#: what the probe page measures in the report (in an iframe), returned as its title
PROBE = r"""
var d = this.contentDocument, out = {};
function box(e) { var r = e.getBoundingClientRect();
  return {l: r.left, r: r.right, t: r.top, b: r.bottom}; }
function texts(root, sel) { return Array.from(root.querySelectorAll(sel)).map(
  function (e) { return e.textContent.trim(); }); }
out.order = Array.from(d.body.children).filter(function (e) { return e.id; })
  .map(function (e) { return e.id; });
out.unresolved = Array.from(d.querySelectorAll('a[href^="#"]')).map(function (a) {
  return a.getAttribute('href').slice(1); }).filter(function (id) {
  return !d.getElementById(id); });
out.links = d.querySelectorAll('a[href^="#"]').length;
out.contents = Array.from(d.querySelectorAll('#contents ol a')).map(function (a) {
  return a.getAttribute('href'); });
out.nodes = Array.from(d.querySelectorAll('section.node')).map(function (s) {
  var svg = s.querySelector('svg.chart'), plot = box(svg);
  var markers = Array.from(s.querySelectorAll('.marker-group')).map(function (g) {
    var b = box(g); return {kind: g.dataset.kind, count: +g.dataset.count,
      shown: texts(g, 'text.count').join(''), l: b.l, r: b.r, t: b.t, b: b.b,
      fill: getComputedStyle(g.querySelector('.marker')).fill}; });
  return {id: s.id, name: svg.dataset.node, legends: s.querySelectorAll('.legend').length,
    legend: texts(s, '.legend li'), xticks: texts(svg, '.tick.x'),
    yticks: texts(svg, '.tick.y'), nosamples: texts(svg, '.nosamples'),
    lines: Array.from(svg.querySelectorAll('polyline')).map(function (p) {
      return {cls: p.getAttribute('class'), stroke: getComputedStyle(p).stroke,
        dash: getComputedStyle(p).strokeDasharray}; }),
    markers: markers, plot: plot, rows: s.querySelectorAll('table.decisions tr[id]').length};
});
var reasons = d.getElementById('reasons-chart');
out.reasons = {slots: +reasons.dataset.slots, yticks: texts(reasons, '.tick.y'),
  xticks: texts(reasons, '.tick.x'), legends: d.querySelectorAll('#reasons .legend').length,
  totals: texts(reasons, '.bar-total').map(Number),
  bars: Array.from(reasons.querySelectorAll('.bar')).map(function (b) {
    var fill = b.getAttribute('fill'), m = /url\(#(.*)\)/.exec(fill);
    return {slot: +b.dataset.slot, x: +b.getAttribute('x'), kind: b.dataset.kind,
      count: +b.dataset.count, title: b.querySelector('title').textContent,
      colour: m ? d.getElementById(m[1]).dataset.colour : fill}; })};
out.binds = Array.from(d.querySelectorAll('#binds .bind')).map(function (b) {
  var t = b.querySelector('table.nodes'), w = d.documentElement.clientWidth;
  return {id: b.querySelector('h4').id, rows: t ? t.querySelectorAll('tr').length - 1 : 0,
    chosen: texts(b, 'tr.chosen td:nth-child(2)').join(''), failed: texts(b, '.failed li'),
    fits: t ? box(t).r <= w && box(t).b > box(t).t : false}; });
out.bindRows = d.querySelectorAll('table.binds tr').length - 1;
document.title = 'RESULT' + JSON.stringify(out);
"""


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def demo_events() -> list[Event]:
    return [e for e in read_recording(GOLDEN / "demo.jsonl") if isinstance(e, Event)]


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory: pytest.TempPathFactory, demo_events: list[Event]) -> Path:
    page = tmp_path_factory.mktemp("report") / "demo.html"
    page.write_text(render(collect(demo_events), demo_events), encoding="utf-8")
    return page


@pytest.fixture(scope="module")
def dom(
    demo_page: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], list[str]]:
    """What the probe measured, and the console's error lines."""
    tmp = tmp_path_factory.mktemp("probe")
    probe = tmp / "probe.html"
    probe.write_text(
        "<!doctype html><body><iframe id='f' src='" + demo_page.as_uri() + "' width=1000 "
        "height=800></iframe><script>document.getElementById('f').onload=function(){"
        + PROBE
        + "};</script></body>"
    )
    result = _chromium(
        tmp,
        "--allow-file-access-from-files",
        "--virtual-time-budget=5000",
        "--enable-logging=stderr",
        "--v=0",
        "--dump-dom",
        probe.as_uri(),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    title = result.stdout.split("<title>RESULT", 1)[1].split("</title>", 1)[0]
    found = json.loads(title.replace("&quot;", '"').replace("&amp;", "&"))
    errors = [line for line in result.stderr.splitlines() if "CONSOLE" in line and "rror" in line]
    return found, errors


def test_report_is_self_contained(demo_page: Path) -> None:
    text = demo_page.read_text()
    assert "http://" not in text and "https://" not in text and "<script" not in text


def test_no_console_errors(dom: tuple[dict[str, Any], list[str]]) -> None:
    assert not dom[1], dom[1]


def test_summary_first_then_contents_and_every_link_resolves(
    dom: tuple[dict[str, Any], list[str]],
) -> None:
    found = dom[0]
    assert found["order"][:3] == ["summary", "contents", "reasons"]
    assert found["links"] > 50 and found["unresolved"] == []
    # the contents list every node, by its anchor, in page order
    assert found["contents"] == ["#" + n["id"] for n in found["nodes"]]
    assert all(re.fullmatch(r"node-[a-z0-9-]+", n["id"]) for n in found["nodes"])
    assert "node-shared-1" in [n["id"] for n in found["nodes"]]


def test_every_bind_has_its_node_table(
    dom: tuple[dict[str, Any], list[str]], demo_events: list[Event]
) -> None:
    binds = [e for e in demo_events if e.type == "decision.bind"]
    found = dom[0]["binds"]
    assert dom[0]["bindRows"] == len(binds) == len(found) == 22
    assert [b["id"] for b in found] == [f"b-{e.id}" for e in binds]
    for bind, event in zip(found, binds, strict=True):
        # a table of the feasible nodes, the chosen one marked, within the page's width
        assert bind["rows"] >= 1 and bind["fits"], bind
        assert bind["chosen"] == event.data["node"], bind
    # the demo's closed revocable zones refuse nodes: counted by predicate
    assert any(line.startswith("4 nodes failed tdm") for b in found for line in b["failed"])


def test_nodes_in_order_of_what_happened(
    dom: tuple[dict[str, Any], list[str]], demo_events: list[Event]
) -> None:
    nodes = dom[0]["nodes"]
    day = collect(demo_events)
    expected = [n.name for n in ordered(day)]
    assert [n["name"] for n in nodes] == expected
    rank = [
        (
            0 if day.nodes[n].decisions else 1 if day.nodes[n].rows else 2,
            -len(day.nodes[n].decisions),
        )
        for n in expected
    ]
    assert rank == sorted(rank)
    assert expected[0] == "shared-0"  # 14 decisions, the most of the demo's nodes
    # each node's table lists its decisions (every demo node decided something)
    assert [n["rows"] for n in nodes] == [len(day.nodes[n].decisions) for n in expected]


def test_axes_have_tick_labels_and_each_panel_one_legend(
    dom: tuple[dict[str, Any], list[str]],
) -> None:
    found = dom[0]
    for node in found["nodes"]:
        assert node["yticks"] == ["0%", "25%", "50%", "75%", "100%"], node["name"]
        assert len(node["xticks"]) >= 6 and node["xticks"][0].startswith("11-21 "), node
        assert node["legends"] == 1, node["name"]
        assert "CPU use" in node["legend"] and "memory use" in node["legend"], node
    reasons = found["reasons"]
    assert reasons["legends"] == 1
    assert reasons["yticks"][0] == "0" and len(reasons["yticks"]) >= 3
    assert [int(t) for t in reasons["yticks"]] == sorted(int(t) for t in reasons["yticks"])
    assert len(reasons["xticks"]) >= 6


def test_no_samples_is_said_where_there_are_none(
    dom: tuple[dict[str, Any], list[str]], demo_events: list[Event]
) -> None:
    day = collect(demo_events)
    empty = [n for n in dom[0]["nodes"] if not day.nodes[n["name"]].rows]
    full = [n for n in dom[0]["nodes"] if day.nodes[n["name"]].rows]
    assert len(empty) == 4 and len(full) == 3  # the "4 of the demo's 7"
    assert all(n["nosamples"] == ["no samples"] and not n["lines"] for n in empty)
    assert all(n["nosamples"] == [] and len(n["lines"]) == 2 for n in full)


def test_hour_axis_is_continuous_with_counts_on_the_bars(
    dom: tuple[dict[str, Any], list[str]], demo_events: list[Event]
) -> None:
    reasons = dom[0]["reasons"]
    # 05:00 to 05:00 the next day: 25 one-hour slots, empty hours included
    assert reasons["slots"] == 25
    slot_x = {b["slot"]: b["x"] for b in reasons["bars"]}
    by_hour = {b["title"][:5]: b["slot"] for b in reasons["bars"]}
    assert by_hour["07:00"] == 2 and by_hour["08:00"] == 3 and by_hour["13:00"] == 8
    one = slot_x[3] - slot_x[2]
    assert one > 0 and math.isclose(slot_x[8] - slot_x[3], 5 * one, abs_tol=0.2)
    decisions = sum(1 for e in demo_events if e.type.startswith("decision."))
    assert sum(reasons["totals"]) == decisions == sum(b["count"] for b in reasons["bars"])


def test_coinciding_markers_show_a_count_inside_the_plot_without_overlap(
    dom: tuple[dict[str, Any], list[str]], demo_events: list[Event]
) -> None:
    nodes = {n["name"]: n for n in dom[0]["nodes"]}
    day = collect(demo_events)
    for name, node in nodes.items():
        markers = node["markers"]
        for kind in {m["kind"] for m in markers}:
            shown = sum(m["count"] for m in markers if m["kind"] == kind)
            assert shown == sum(
                1 for e in day.nodes[name].decisions if e.type == f"decision.{kind}"
            ), (name, kind)
        for m in markers:
            assert m["shown"] == (str(m["count"]) if m["count"] > 1 else ""), m
            plot = node["plot"]
            assert plot["l"] <= m["l"] and m["r"] <= plot["r"], m
            assert plot["t"] <= m["t"] and m["b"] <= plot["b"], m
        for a, b in itertools.combinations(markers, 2):
            apart = a["r"] <= b["l"] or b["r"] <= a["l"] or a["b"] <= b["t"] or b["b"] <= a["t"]
            assert apart, (name, a, b)
    # shared-0's three predicted-pressure evictions at 13:00 are one marker that says 3
    evicts = [m for m in nodes["shared-0"]["markers"] if m["kind"] == "evict"]
    assert sorted(m["count"] for m in evicts) == [3, 3]


def _rgb(text: str) -> tuple[int, int, int]:
    if text.startswith("#"):
        return int(text[1:3], 16), int(text[3:5], 16), int(text[5:7], 16)
    r, g, b = (int(v) for v in re.findall(r"\d+", text)[:3])
    return r, g, b


def _linear(c: int) -> float:
    v = c / 255
    return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4


def _encode(v: float) -> float:
    v = min(max(v, 0.0), 1.0)
    return 255 * (12.92 * v if v <= 0.0031308 else 1.055 * v ** (1 / 2.4) - 0.055)


#: Machado, Oliveira & Fernandes (2009): full deuteranopia, on linear RGB
DEUTERANOPIA = (
    (0.367322, 0.860646, -0.227968),
    (0.280085, 0.672501, 0.047413),
    (-0.011820, 0.042940, 0.968881),
)


def deuteranope(rgb: tuple[int, int, int]) -> tuple[float, ...]:
    lin = [_linear(c) for c in rgb]
    return tuple(_encode(sum(m * v for m, v in zip(row, lin, strict=True))) for row in DEUTERANOPIA)


def grey(rgb: tuple[int, int, int]) -> float:
    r, g, b = (_linear(c) for c in rgb)
    return _encode(0.2126 * r + 0.7152 * g + 0.0722 * b)


@pytest.mark.parametrize(
    ("a", "b", "distinct"),
    [
        ("#0072B2", "#E69F00", True),  # the page's CPU and memory
        ("#d62728", "#2ca02c", False),  # the old page's eviction red and bind green
        ("#E69F00", "#56B4E9", False),  # Okabe-Ito's orange and sky blue: alike in grey
    ],
)
def test_the_distinctness_measure_can_fail(a: str, b: str, distinct: bool) -> None:
    assert _distinct(_rgb(a), _rgb(b)) == distinct


def _distinct(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    return math.dist(deuteranope(a), deuteranope(b)) >= 40 and abs(grey(a) - grey(b)) >= 15


def test_palette_distinct_for_deuteranopes_and_in_grey(
    dom: tuple[dict[str, Any], list[str]],
) -> None:
    palette = {_rgb(c) for c in PALETTE.values()}
    meaning: dict[tuple[int, int, int], set[str]] = {}
    for node in dom[0]["nodes"]:
        used = {}
        for line in node["lines"]:
            resource = line["cls"].split()[-1]
            used[resource] = _rgb(line["stroke"])
            assert used[resource] == _rgb(RESOURCE_COLOURS[resource])
        assert {line["dash"] for line in node["lines"]} in ({"none", "7px, 3px"}, set())
        for m in node["markers"]:
            used[m["kind"]] = _rgb(m["fill"])
            assert used[m["kind"]] == _rgb(KIND_COLOURS[m["kind"]])
        for colour in used.values():
            assert colour in palette, colour
        for (x, cx), (y, cy) in itertools.combinations(sorted(used.items()), 2):
            assert _distinct(cx, cy), (node["name"], x, y)
        for what, colour in used.items():
            meaning.setdefault(colour, set()).add(what)
    bars = {b["kind"]: _rgb(b["colour"]) for b in dom[0]["reasons"]["bars"]}
    for what, colour in bars.items():
        assert colour in palette and colour == _rgb(KIND_COLOURS[what])
        meaning.setdefault(colour, set()).add(what)
    for (x, cx), (y, cy) in itertools.combinations(sorted(bars.items()), 2):
        assert _distinct(cx, cy), ("reasons", x, y)
    # one colour, one meaning, on the whole page
    assert all(len(m) == 1 for m in meaning.values()), meaning


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """The rows of an 8-bit RGB/RGBA non-interlaced PNG (what chromium writes)."""
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        header = body if kind == b"IHDR" else header
        chunks += [body] if kind == b"IDAT" else []
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride, rows, previous = width * bpp, [], bytes(width * bpp)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 255
        rows.append(bytes(line))
        previous = bytes(line)
    return width, bpp, rows


def test_screenshot_shows_the_series_colours(demo_page: Path, tmp_path: Path) -> None:
    # the page's first node (shared-0: samples and decisions) on top, at 1000 × 700
    text = demo_page.read_text()
    head, first_node = text.split("<body>", 1)[0], text.index("<section class='node'")
    cut = tmp_path / "node.html"
    cut.write_text(head + "<body>" + text[first_node:], encoding="utf-8")
    shot = tmp_path / "shot.png"
    result = _chromium(tmp_path, "--window-size=1000,700", f"--screenshot={shot}", cut.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    data = shot.read_bytes()
    assert len(data) > 20_000  # a blank page compresses to a few KB
    width, bpp, rows = _png_pixels(data)
    seen: set[tuple[int, int, int]] = set()
    for row in rows:
        seen.update(tuple(row[i : i + 3]) for i in range(0, width * bpp, bpp))  # type: ignore[misc]
    for colour in (RESOURCE_COLOURS["cpu"], RESOURCE_COLOURS["memory"], KIND_COLOURS["evict"]):
        assert _rgb(colour) in seen, colour


def test_printed_every_node_starts_a_page(
    demo_page: Path, tmp_path: Path, demo_events: list[Event]
) -> None:
    pdf = tmp_path / "report.pdf"
    result = _chromium(
        tmp_path, "--no-pdf-header-footer", f"--print-to-pdf={pdf}", demo_page.as_uri()
    )
    assert result.returncode == 0, result.stderr[-2000:]
    pages = len(re.findall(rb"/Type\s*/Page\b", pdf.read_bytes()))
    assert pages >= 1 + len(collect(demo_events).nodes)
