"""The bind view (issue 29): per node, the check that refused a bound pod or each scoring
plugin's score, derived offline from the log in one pass (replay/bindview.py).

Small simulated logs: three or four nodes (one refused by a taint, one too full, the
others scored differently), a gang whose second pod sees the first one's placement, a
log without its configuration, a tampered log; and the demo. The chosen node's derived
total is always the recorded score, and its per-plugin parts add up to it with weights.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from controller.cli import app
from controller.policy.loader import load_config
from controller.simulate.runner import Simulation
from replay.bindview import BindView, bind_views
from replay.report import collect, render
from streams.events import Event
from streams.recording import read_recording, write_recording
from tests.builders import build_node, build_pod, build_podgroup, build_queue, watch

GOLDEN = Path(__file__).resolve().parent / "golden"
T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
CONFIG: dict[str, Any] = {
    "actions": "allocate",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "predicates"}, {"name": "nodeorder"}]},
    ],
}
TAINT = {"key": "maintenance", "value": "true", "effect": "NoSchedule"}


def s(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def cluster() -> list[Event]:
    """busy (8 CPU, 5 used), empty (8 CPU), tainted (8 CPU), full (2 CPU, 2 used)."""
    return [
        watch("queues", build_queue(), s(0)),
        watch("nodes", build_node("busy"), s(0)),
        watch("nodes", build_node("empty"), s(0)),
        watch("nodes", build_node("tainted", taints=[TAINT]), s(0)),
        watch("nodes", build_node("full", cpu="2"), s(0)),
        watch("pods", build_pod("default", "hog", node="busy", cpu="5"), s(0)),
        watch("pods", build_pod("default", "filler", node="full", cpu="2"), s(0)),
    ]


def simulate(inputs: list[Event], config: dict[str, Any] = CONFIG) -> list[Event]:
    sim = Simulation(load_config(config))
    sim.run(inputs, until=s(5))
    return sim.log.events


def one_pod() -> list[Event]:
    pod = build_pod("default", "p", phase="Pending", cpu="1", created=s(0.5))
    return simulate([*cluster(), watch("pods", pod, s(0.5))])


def gang() -> list[Event]:
    group = build_podgroup("hpc", "mpi", min_member=2, created=s(0.5))
    pods = [
        build_pod("hpc", f"mpi-{i}", phase="Pending", cpu="2", group="mpi", created=s(0.5))
        for i in range(2)
    ]
    return simulate(
        [*cluster(), watch("podgroups", group, s(0.5)), *(watch("pods", p, s(0.5)) for p in pods)]
    )


def assert_derived(view: BindView) -> None:
    """The chosen node is feasible with the recorded total; each plugin's parts add up
    to its score with their weights, and the scores to the total."""
    assert not view.problem, view.problem
    chosen = view.chosen
    assert chosen is not None and chosen.feasible
    assert chosen.total == view.recorded
    assert view.agrees
    for node in view.ranked():
        assert sum(score.score for score in node.scores) == node.total
        for score in node.scores:
            if score.parts:
                assert sum(p.raw * p.weight for p in score.parts) == score.score


def test_every_node_refused_or_scored_and_the_chosen_one_has_the_recorded_score() -> None:
    (view,) = bind_views(one_pod())
    assert_derived(view)
    verdicts = {n.node: (n.check, n.reason) for n in view.nodes}
    assert verdicts == {
        "busy": ("", ""),
        "empty": ("", ""),
        "full": ("resources", "Insufficient resources"),
        "tainted": ("predicates", "node(s) had untolerated taint {maintenance: true}"),
    }
    ranked = view.ranked()
    assert [n.node for n in ranked] == ["empty", "busy"]  # least requested wins
    assert view.node == "empty" and ranked[0].total > ranked[1].total
    (score,) = ranked[0].scores
    assert score.plugin == "nodeorder"
    parts = {p.name: (p.raw, p.weight) for p in score.parts}
    assert set(parts) == {"leastrequested", "balancedresource", "tainttoleration"}
    assert parts["tainttoleration"] == (100, 3)
    # the busy node loses on least requested, not on the taint score
    busy = {p.name: p.raw for p in ranked[1].scores[0].parts}
    assert busy["leastrequested"] < parts["leastrequested"][0]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (1, "empty (chosen): total "),
        (2, "busy: total "),
        (3, "1 node(s) failed predicates: node(s) had untolerated taint"),
        (4, "1 node(s) failed resources: Insufficient resources (full)"),
    ],
)
def test_the_compact_form(line: int, expected: str) -> None:
    (view,) = bind_views(one_pod())
    lines = view.lines()
    assert lines[0] == "per-node view (4 nodes, 2 feasible):"
    assert lines[line].strip().startswith(expected), lines
    assert len(lines) == 5


def test_a_gang_member_sees_the_placements_made_before_it_in_its_session() -> None:
    views = bind_views(gang())
    assert [v.pod for v in views] == ["hpc/mpi-0", "hpc/mpi-1"]
    for view in views:
        assert_derived(view)
    first, second = views
    # the second pod is scored after the first was placed: its node scores less now
    before = {n.node: n.total for n in first.nodes if n.feasible}
    after = {n.node: n.total for n in second.nodes if n.feasible}
    assert after[first.node] < before[first.node]
    assert all(after[n] == before[n] for n in before if n != first.node)


def test_a_log_without_its_configuration_says_so_in_one_line() -> None:
    events = [e for e in one_pod() if e.type != "config.applied"]
    (view,) = bind_views(events)
    assert not view.nodes
    assert view.lines() == [
        "per-node view: not derived: the log records no configuration (config.applied) before it"
    ]
    page = render(collect(events), events)
    binds = page.split("<section id='binds'>", 1)[1].split("</section>", 1)[0]
    assert "table class='nodes'" not in binds
    assert binds.count("Not derived: the log records no configuration") == 1


def test_a_session_that_decides_otherwise_is_not_trusted() -> None:
    events = one_pod()
    i = next(i for i, e in enumerate(events) if e.type == "decision.bind")
    forged = dataclasses.replace(events[i], data={**events[i].data, "node": "busy"})
    (view,) = bind_views([*events[:i], forged, *events[i + 1 :]])
    assert view.problem.startswith("its session, rebuilt from the log, decides otherwise")


def test_the_report_shows_a_table_per_bind() -> None:
    events = one_pod()
    page = render(collect(events), events)
    binds = page.split("<section id='binds'>", 1)[1].split("</section>", 1)[0]
    table = binds.split("<table class='nodes'", 1)[1].split("</table>", 1)[0]
    rows = table.split("<tr")[2:]
    assert "empty" in rows[0] and "chosen" in rows[0] and "busy" in rows[1]
    assert "leastrequested" in rows[0] and "×3" in rows[0]  # tainttoleration's weight
    assert "1 node failed predicates" in binds
    assert "1 node failed resources" in binds


def demo() -> list[Event]:
    return [e for e in read_recording(GOLDEN / "demo.jsonl") if isinstance(e, Event)]


def test_every_bind_of_the_demo_is_derived_with_its_recorded_score() -> None:
    views = bind_views(demo())
    assert len(views) == 22
    for view in views:
        assert_derived(view)
        assert view.failed()  # the demo's revocable zones are closed at some binds


def test_the_same_log_gives_the_same_view() -> None:
    one = [json.dumps(v.as_json(), sort_keys=True) for v in bind_views(demo())]
    two = [json.dumps(v.as_json(), sort_keys=True) for v in bind_views(demo())]
    assert one == two


def test_audit_why_prints_the_per_node_view_and_json_carries_it(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    write_recording(one_pod(), path)
    result = CliRunner().invoke(app, ["audit", "why", "default/p", "--log", str(path)])
    assert result.exit_code == 0, result.output
    assert "per-node view (4 nodes, 2 feasible):" in result.output
    assert "empty (chosen): total" in result.output
    result = CliRunner().invoke(app, ["audit", "why", "p", "--log", str(path), "--json"])
    assert result.exit_code == 0, result.output
    (bind,) = [d for d in json.loads(result.stdout)["decisions"] if d.get("nodes")]
    nodes = bind["nodes"]
    assert nodes["derived"] and nodes["agrees_with_record"]
    assert [n["node"] for n in nodes["nodes"]] == ["empty", "busy", "full", "tainted"]
    assert nodes["nodes"][2] == {
        "node": "full",
        "failed": "resources",
        "reason": "Insufficient resources",
    }


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.jsonl")))
def test_every_bind_of_every_golden_log_is_derived_with_its_recorded_score(name: str) -> None:
    events = [e for e in read_recording(GOLDEN / f"{name}.jsonl") if isinstance(e, Event)]
    views = bind_views(events)
    assert views and len(views) == sum(e.type == "decision.bind" for e in events)
    for view in views:
        assert_derived(view)


def test_a_big_cluster_lists_the_top_ten_and_counts_the_rest() -> None:
    nodes = [watch("nodes", build_node(f"n{i:02d}", cpu=str(4 + i)), s(0)) for i in range(13)]
    pod = build_pod("default", "p", phase="Pending", cpu="1", created=s(0.5))
    events = simulate([watch("queues", build_queue(), s(0)), *nodes, watch("pods", pod, s(0.5))])
    (view,) = bind_views(events)
    assert_derived(view)
    assert view.ranked()[0].node == view.node  # the best total is the chosen node
    page = render(collect(events), events)
    table = page.split("<table class='nodes'", 1)[1].split("</table>", 1)[0]
    rows = table.split("<tr")[2:]
    assert len(rows) == 11 and "… 3 more feasible nodes (totals " in rows[-1]
    assert view.lines()[-1] == "  … 8 more feasible node(s)"  # the compact form: top 5


def test_a_best_effort_pod_placed_by_backfill() -> None:
    config = CONFIG | {"actions": "allocate, backfill"}
    pod = build_pod("default", "be", phase="Pending", cpu=None, memory=None, created=s(0.5))
    (view,) = bind_views(simulate([*cluster(), watch("pods", pod, s(0.5))], config))
    assert view.decision.data["source"] == "backfill"
    assert_derived(view)
    # no request: nothing is short of resources, only the taint refuses
    assert [(c, [n for _, ns in r for n in ns]) for c, r in view.failed()] == [
        ("predicates", ["tainted"])
    ]


@pytest.mark.parametrize(
    ("args", "tables", "note"),
    [
        ([], 22, False),  # the demo's 22 binds are under the default
        (["--bind-views", "5"], 5, True),
        (["--bind-views", "0"], 0, True),
        (["--from", "2026-11-21T21:00:00Z", "--bind-views", "3"], 3, False),  # the 22:00 binds
    ],
)
def test_a_page_derives_the_first_binds_it_is_asked_for(
    tmp_path: Path, args: list[str], tables: int, note: bool
) -> None:
    log = tmp_path / "demo.jsonl"
    log.write_bytes((GOLDEN / "demo.jsonl").read_bytes())
    out = tmp_path / "page.html"
    result = CliRunner().invoke(app, ["report", str(log), "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    binds = out.read_text().split("<section id='binds'>", 1)[1].split("</section>", 1)[0]
    assert binds.count("<div class='bind'>") == tables
    assert binds.count(">nodes</a>") == tables  # a link only where there is a table
    assert ("Per-node views for the first" in binds) is note
