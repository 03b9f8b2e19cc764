"""The over-commit invariant: a node whose bound requests exceed its allocatable is found by
the fold and reported by `tide state`, `tide audit summary` and `tide report` (issue 28)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from controller.cli import app
from controller.cli.state_cmd import render, state_report
from projections.cluster import ClusterState
from projections.overcommit import amount, excess
from projections.world import World
from replay.overcommit import OvercommitFold
from replay.report import collect
from replay.report import render as render_report
from streams.events import Event
from streams.recording import write_recording
from tests.builders import at, build_node, build_pod, build_queue, watch

GPU = "nvidia.com/gpu"


def gpu_pod(name: str, node: str = "g1") -> dict[str, object]:
    pod = build_pod("ns", name, node=node, cpu="1")
    pod["spec"]["containers"][0]["resources"]["requests"][GPU] = "1"
    return pod


def gpu_node(gpus: str = "2") -> dict[str, object]:
    node = build_node("g1", cpu="16")
    node["status"]["allocatable"][GPU] = gpus
    return node


def over_log() -> list[Event]:
    """A 2-GPU node given four 1-GPU pods (two too many), then two of them leave; a 4-CPU
    node that shrinks under its pods, then grows back."""
    records = [
        watch("queues", build_queue(), at(0)),
        watch("nodes", gpu_node(), at(0)),
        watch("nodes", build_node("c1", cpu="4"), at(0)),
        *(watch("pods", gpu_pod(f"g{i}"), at(1 + i)) for i in range(4)),
        watch("pods", build_pod("ns", "c", node="c1", cpu="3"), at(6)),
        watch("nodes", build_node("c1", cpu="2"), at(7), "MODIFIED"),
        watch("pods", gpu_pod("g3"), at(8), "DELETED"),
        watch("pods", gpu_pod("g2"), at(9), "DELETED"),
        watch("nodes", build_node("c1", cpu="4"), at(10), "MODIFIED"),
    ]
    return [event.with_offset(offset) for offset, event in enumerate(records)]


def fold(events: list[Event]) -> ClusterState:
    cluster = ClusterState()
    cluster.fold(events)
    return cluster


def test_the_fold_finds_each_episode_from_its_start_to_its_end() -> None:
    watch_ = fold(over_log()).overcommit
    assert not watch_.open
    gpu, cpu = watch_.closed
    # the third pod (offset 5) breaks it; the second delete (offset 10) mends it
    assert (gpu.node, gpu.since, gpu.until) == ("g1", 5, 10)
    assert gpu.worst == {GPU: 2000.0} and gpu.tasks == 4
    assert amount(gpu.worst) == f"{GPU} +2"
    assert (cpu.node, cpu.since, cpu.until, cpu.worst) == ("c1", 8, 11, {"cpu_milli": 1000.0})


def test_a_node_over_at_a_point_is_open_and_shown_by_state() -> None:
    events = over_log()[:9]
    world = World()
    world.fold(events)
    assert sorted(world.cluster.overcommit.open) == ["c1", "g1"]
    assert excess(world.cluster.nodes["g1"]) == {GPU: 2000.0}
    report = state_report(world)
    assert report["overcommitted"] == [
        {"node": "c1", "excess": {"cpu_milli": 1000.0}},
        {"node": "g1", "excess": {GPU: 2000.0}},
    ]
    console = Console(record=True, width=160)
    render(report, console)
    text = console.export_text()
    assert "over-committed g1: bound requests exceed allocatable by nvidia.com/gpu +2" in text
    assert "over-committed c1: bound requests exceed allocatable by cpu +1" in text


def test_state_says_nothing_when_every_node_fits() -> None:
    world = World()
    world.fold(over_log())
    assert "overcommitted" not in state_report(world)


def test_fitting_exactly_is_not_over() -> None:
    events = [
        watch("nodes", gpu_node(), at(0)),
        watch("pods", gpu_pod("a"), at(1)),
        watch("pods", gpu_pod("b"), at(2)),
    ]
    assert fold([e.with_offset(i) for i, e in enumerate(events)]).overcommit.ever == 0


def test_summary_and_report_name_the_episodes_with_their_times(tmp_path: Path) -> None:
    overcommit = OvercommitFold()
    for event in over_log():
        overcommit.apply(event)
    head, gpu, cpu = overcommit.lines()
    assert head.startswith("over-committed: 2 time(s)") and "on 2 node(s); 0 still over" in head
    assert gpu == (
        "  g1: from 2026-11-21T20:03:00Z (offset 5) to 2026-11-21T20:09:00Z (offset 10);"
        f" at worst {GPU} +2 over, 4 tasks"
    )
    assert cpu.startswith("  c1: from 2026-11-21T20:07:00Z (offset 8)")
    page = render_report(collect(over_log()), over_log())
    assert "Nodes over their allocatable" in page and "g1: from 2026-11-21T20:03:00Z" in page
    assert "Nodes over their allocatable" not in render_report(
        collect(over_log()[:5]), over_log()[:5]
    )
    path = tmp_path / "over.jsonl"
    write_recording(over_log(), path)
    result = CliRunner().invoke(app, ["audit", "summary", "--log", str(path)])
    assert result.exit_code == 0, result.output
    assert head in result.output and gpu in result.output


def test_the_ghost_of_issue_28_would_have_been_reported() -> None:
    """The smallest case with its ghost (a Running update after the DELETED)."""
    node = build_node("n1", cpu="4")
    a = build_pod("default", "a", node="n1", cpu="3")
    b = build_pod("default", "b", node="n1", cpu="3")
    events = [
        watch("nodes", node, at(0)),
        watch("pods", a, at(1)),
        watch("pods", a, at(2), "DELETED"),
        watch("pods", b, at(3)),
        watch("pods", a, at(6), "MODIFIED"),  # the ghost: a MODIFIED of an unknown pod adds it
    ]
    cluster = fold([e.with_offset(i) for i, e in enumerate(events)])
    assert list(cluster.overcommit.open) == ["n1"]
    assert cluster.overcommit.open["n1"].worst == {"cpu_milli": 2000.0}


def test_it_is_not_in_checkpoints_and_a_resumed_fold_finds_it_again() -> None:
    events = over_log()
    cluster = fold(events[:6])
    resumed = ClusterState()
    resumed.load(cluster.dump())
    assert not resumed.overcommit.ever  # not carried over
    resumed.fold(events[6:9])
    assert sorted(resumed.overcommit.open) == ["c1", "g1"]  # found at the next change
