"""`tide report`'s page without a browser: node order, the time axes and hour slots,
marker grouping, anchors, the binds section on old and new evidence, odd records, and
determinism (the same log gives the same bytes, through the command too).

The browser checks (layout, colours, print) are in test_report_browser.py.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from controller.cli import app
from replay.report import collect, ordered, render
from replay.report_axes import Frame, slots, time_ticks, value_ticks
from replay.report_charts import NODE_HEIGHT, TimeScale, groups
from replay.report_sections import anchors
from streams.events import Event, make_event
from streams.recording import read_recording, write_recording
from tests.builders import at, build_node, node_metrics, watch

GOLDEN = Path(__file__).resolve().parent / "golden"
H = datetime(2026, 11, 21, 5, 0, tzinfo=UTC)


def decision(kind: str, node: str, when: datetime, **data: Any) -> Event:
    payload: dict[str, Any] = {"kind": kind, "node": node, "reason": data.pop("reason", "r")}
    payload["source"] = data.pop("source", "test")
    if kind in ("evict", "bind"):
        payload |= {"namespace": "ns", "pod": data.pop("pod", "p"), "uid": "u"}
    if kind in ("taint", "untaint"):
        payload["taint"] = {"key": "k", "effect": "NoSchedule"}
    payload["evidence"] = data.pop("evidence", {})
    return make_event(f"decision.{kind}", when, payload | data)


def cluster(*names: str) -> list[Event]:
    return [watch("nodes", build_node(n), at(0)) for n in names]


def test_nodes_ordered_by_decisions_then_samples_then_the_rest() -> None:
    events = cluster("a-idle", "b-sampled", "c-one", "d-three", "e-sampled", "f-three")
    events += [
        node_metrics(n, cpu="1", memory="1Gi", when=at(1))
        for n in ("b-sampled", "e-sampled", "d-three")
    ]
    events += [decision("evict", "c-one", at(2))]
    events += [decision("bind", "d-three", at(3), pod=f"p{i}") for i in range(3)]
    events += [decision("bind", "f-three", at(3), pod=f"q{i}") for i in range(3)]
    order = [n.name for n in ordered(collect(events))]
    assert order == ["d-three", "f-three", "c-one", "b-sampled", "e-sampled", "a-idle"]


@pytest.mark.parametrize(
    ("start", "end", "count", "hours"),
    [
        (H + timedelta(minutes=10), H + timedelta(minutes=50), 1, 1),
        (H + timedelta(hours=2, minutes=30), H + timedelta(hours=8, minutes=10), 7, 1),  # 07..13
        (H, H + timedelta(hours=71), 72, 1),
        (H, H + timedelta(hours=72), 37, 2),  # 73 hours do not fit: two-hour slots
        (H, H + timedelta(days=400), 58, 24 * 7),
    ],
)
def test_slots_are_continuous_and_widen_on_long_logs(
    start: datetime, end: datetime, count: int, hours: int
) -> None:
    found = slots(start, end)
    assert (len(found.starts), found.hours) == (count, hours)
    steps = {b - a for a, b in zip(found.starts, found.starts[1:], strict=False)}
    assert steps <= {timedelta(hours=hours)}  # every slot, empty or not
    assert found.starts[0] <= start and found.index(end) == count - 1
    assert found.starts[0].minute == 0


@pytest.mark.parametrize(
    ("span", "first", "labels"),
    [
        (timedelta(minutes=10), "11-21 05:01", ["05:02", "05:03"]),
        (timedelta(hours=24), "11-21 06:00", ["08:00", "10:00"]),
        (timedelta(days=5), "11-21 12:00", ["11-22 00:00", "12:00"]),
        (timedelta(days=10), "11-22", ["11-23", "11-24"]),
    ],
)
def test_time_ticks_on_whole_steps_with_the_date_on_new_days(
    span: timedelta, first: str, labels: list[str]
) -> None:
    start = H + timedelta(seconds=30)
    ticks = time_ticks(start, start + span)
    assert 3 <= len(ticks) <= 12
    assert [t[1] for t in ticks[:3]] == [first, *labels]
    assert all(start <= t[0] <= start + span for t in ticks)
    if span == timedelta(hours=24):
        assert "11-22 00:00" in [t[1] for t in ticks]  # midnight says its date


@pytest.mark.parametrize(
    ("top", "ticks"),
    [
        (0, [0, 1]),
        (1, [0, 1]),
        (3, [0, 1, 2, 3]),
        (7, [0, 2, 4, 6, 8]),
        (8.64, [0, 2, 4, 6, 8, 10]),
        (40, [0, 10, 20, 30, 40]),
        (101, [0, 50, 100, 150]),
    ],
)
def test_value_ticks(top: float, ticks: list[int]) -> None:
    assert value_ticks(top) == ticks


def test_coinciding_decisions_of_a_kind_share_one_marker() -> None:
    events = [
        decision("evict", "n", H, pod="a"),
        decision("evict", "n", H, pod="b"),
        decision("evict", "n", H + timedelta(seconds=30), pod="c"),  # too close to draw apart
        decision("evict", "n", H + timedelta(hours=2), pod="d"),
        decision("bind", "n", H, pod="e"),  # another kind: its own lane
    ]
    scale = TimeScale(H, H + timedelta(hours=24), frame=Frame(NODE_HEIGHT))
    found = [(kind, [e.data["pod"] for e in group]) for kind, group in groups(events, scale)]
    assert found == [("evict", ["a", "b", "c"]), ("evict", ["d"]), ("bind", ["e"])]


def test_anchors_are_linkable_and_unique() -> None:
    assert anchors(["shared-1", "a.b", "x y", "x-y", "x/y"]) == {
        "shared-1": "node-shared-1",
        "a.b": "node-a.b",
        "x y": "node-x-y",
        "x-y": "node-x-y-2",
        "x/y": "node-x-y-3",
    }


def test_binds_show_what_was_recorded_on_old_and_new_evidence() -> None:
    old = {"node": "n1", "score": 12.5, "gradient": "idle", "feasible": 3, "job": "ns/j"}
    events = cluster("n1", "n2")
    events += [
        decision("bind", "n1", at(1), pod="old", evidence=old | {"queue": "q"}),
        decision("bind", "n2", at(2), pod="none"),  # no evidence at all (an imported record)
        decision(
            "bind",
            "n1",
            at(3),
            pod="new",
            evidence=old | {"best_effort": True, "filtered": {"n2": "Insufficient cpu"}},
        ),
    ]
    page = render(collect(events), events)
    binds = page.split("<section id='binds'>", 1)[1].split("</section>", 1)[0]
    rows = binds.split("<tr>")[2:]
    assert len(rows) == 3
    assert "<td>12.5</td><td>3</td><td>idle</td><td></td><td>ns/j</td><td>q</td>" in rows[0]
    assert "ns/none" in rows[1] and "<a href='#node-n2'>n2</a>" in rows[1]
    assert (
        "<td>yes</td>" in rows[2] and "filtered: {&#x27;n2&#x27;: &#x27;Insufficient cpu" in rows[2]
    )
    assert "does not record the other nodes' scores" in binds


def test_no_binds_no_binds_section_and_an_empty_log_still_renders() -> None:
    events = cluster("n1")
    page = render(collect(events), events)
    assert "id='binds'" not in page and "No decisions in this range." in page
    assert "no samples" in page and "<b>0</b> decisions" in page
    assert render(collect([]), []).count("<section") == 2  # the summary and the reasons


def test_a_kind_tide_does_not_write_is_drawn_in_grey() -> None:
    events = [*cluster("n1"), decision("bind", "n1", at(1))]
    odd = make_event("decision.bind", at(2), {**events[-1].data, "kind": "migrate"})
    page = render(collect([*events, odd]), [*events, odd])
    assert 'data-kind="migrate"' in page and 'fill="#777777"' in page


def test_the_same_log_gives_the_same_bytes(tmp_path: Path) -> None:
    demo = GOLDEN / "demo.jsonl"
    outs = [tmp_path / "one.html", tmp_path / "two.html"]
    for out in outs:
        result = CliRunner().invoke(app, ["report", str(demo), "--out", str(out)])
        assert result.exit_code == 0, result.output
    assert outs[0].read_bytes() == outs[1].read_bytes()
    # a log file written again from the same records gives the same page
    copy = tmp_path / "copy.jsonl"
    write_recording([e for e in read_recording(demo) if isinstance(e, Event)], copy)
    again = tmp_path / "three.html"
    result = CliRunner().invoke(app, ["report", str(copy), "--out", str(again)])
    assert result.exit_code == 0, result.output
    assert again.read_text().replace(str(copy), str(demo)) == outs[0].read_text()


def window(kind: str, zone: str, when: datetime) -> Event:
    return make_event("trigger.fired", when, {"kind": kind, "zone": zone, "source": "tdm"})


@pytest.mark.parametrize(
    ("since", "until", "nodes", "decided", "windows"),
    [
        # nodes are added at minute 0; a range that starts later still draws them
        (None, None, ["a", "b"], 2, [(at(5), at(20))]),
        (at(10), None, ["a", "b"], 1, [(at(10), at(20))]),  # the open window, clipped
        (at(25), None, ["a", "b"], 1, []),  # the window closed before the range
        (None, at(15), ["a", "b"], 1, [(at(5), None)]),  # open at the range's end
        (at(10), at(15), ["a", "b"], 0, [(at(10), None)]),
    ],
)
def test_a_time_range_keeps_the_state_before_it(
    since: datetime | None,
    until: datetime | None,
    nodes: list[str],
    decided: int,
    windows: list[tuple[datetime | None, datetime | None]],
) -> None:
    a = build_node("a")
    a["metadata"].setdefault("labels", {})["volcano.sh/revocable-zone"] = "z"
    events = [watch("nodes", a, at(0)), watch("nodes", build_node("b"), at(0))]
    events += [window("window-start", "z", at(5)), decision("evict", "a", at(7))]
    events += [window("window-end", "z", at(20)), decision("bind", "b", at(30))]
    day = collect(sorted(events, key=lambda e: e.at), since=since, until=until)
    assert sorted(day.nodes) == nodes
    assert len(day.decisions) == decided
    assert day.nodes["a"].windows == windows


def test_report_of_a_range_draws_the_nodes_decided_on_in_it(tmp_path: Path) -> None:
    log = tmp_path / "demo.jsonl"
    log.write_bytes((GOLDEN / "demo.jsonl").read_bytes())
    out = tmp_path / "range.html"
    result = CliRunner().invoke(
        app,
        [
            "report", str(log), "--out", str(out),
            "--from", "2026-11-21T19:00:00Z", "--to", "2026-11-21T21:00:00Z",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "0 node(s)" not in result.output
    page = out.read_text()
    # the 20:00 evictions' nodes, though both were added hours before the range
    assert "id='node-shared-0'" in page and "id='node-night-0'" in page
