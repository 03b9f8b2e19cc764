"""`tide audit why` explains the pending time of every pod that ever waited — later bound,
deleted without a bind, or still pending — stretch by stretch (issue 28)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from typer.testing import CliRunner

from controller.cli import app
from controller.policy.loader import load_config
from controller.simulate.runner import Simulation
from streams.events import Event
from streams.recording import write_recording
from tests.builders import build_node, build_pod, build_queue, watch

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
CONFIG = {
    "actions": "allocate",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "predicates"}]},
    ],
}


def s(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def pending(name: str, cpu: str, when: float) -> dict[str, object]:
    return build_pod("default", name, phase="Pending", cpu=cpu, created=s(when))


def inputs() -> list[Event]:
    """n1 (4 CPU) held by ``hog`` (3 CPU) until 20 s, n2 (2 CPU); ``w`` (3 CPU) waits for
    n1; ``x`` (5 CPU) fits nowhere and is deleted at 30 s; ``z`` (5 CPU) comes at 32 s and
    is still pending at the end; small pods come and go every 5 s (written sessions)."""
    hog = build_pod("default", "hog", node="n1", cpu="3")
    records = [
        watch("queues", build_queue(), s(0)),
        watch("nodes", build_node("n1", cpu="4"), s(0)),
        watch("nodes", build_node("n2", cpu="2"), s(0)),
        watch("pods", hog, s(0)),
        watch("pods", pending("w", "3", 0.5), s(0.5)),
        watch("pods", pending("x", "5", 0.5), s(0.5)),
        watch("pods", hog, s(20), "DELETED"),
        watch("pods", pending("x", "5", 0.5), s(30), "DELETED"),
        watch("pods", pending("z", "5", 32), s(32)),
    ]
    for i in range(8):
        small = pending(f"small-{i}", "500m", 2 + 5 * i)
        records.append(watch("pods", small, s(2 + 5 * i)))
        records.append(watch("pods", small, s(4 + 5 * i), "DELETED"))
    return records


def log(tmp_path: Path) -> str:
    sim = Simulation(load_config(CONFIG))
    sim.run(inputs(), until=s(45))
    path = tmp_path / "waited.jsonl"
    write_recording(sim.log.events, path)
    return str(path)


def why(path: str, pod: str) -> list[str]:
    result = CliRunner().invoke(app, ["audit", "why", pod, "--log", path, "--json"])
    assert result.exit_code == 0, result.output
    found: list[str] = json.loads(result.stdout)["not_decided"]
    return found


def test_a_pod_that_waited_and_was_bound(tmp_path: Path) -> None:
    lines = why(log(tmp_path), "w")
    *stretches, end = lines
    assert end == (
        "default/w was pending from 2026-11-21T08:00:00.500000Z: then bound to n1 at"
        " 2026-11-21T08:00:20Z"
    )
    assert stretches and all(line.startswith("default/w waited ") for line in stretches)
    # while hog held n1: n1 too full, n2 too small: the same reason, one stretch
    (stretch,) = stretches
    assert (
        "2 of 2 node(s) fail the predicates" in stretch
        and "Insufficient resources on 2 node(s)" in stretch
    )
    assert "from 2026-11-21T08:00:02Z to 2026-11-21T08:00:17Z" in stretch


def test_a_pod_that_waited_and_was_deleted(tmp_path: Path) -> None:
    lines = why(log(tmp_path), "default/x")
    assert lines[-1] == (
        "default/x was pending from 2026-11-21T08:00:00.500000Z: then deleted at"
        " 2026-11-21T08:00:30Z without being bound"
    )
    # hog's leaving (20 s) changed the reason: n1 now has room, still not enough
    reasons = [line.split("): ", 1)[1] for line in lines[:-1]]
    assert len(reasons) == len(set(reasons)) >= 1  # stretches: one per distinct reason in a row
    assert all("fail the predicates" in r and "Insufficient resources" in r for r in reasons)
    assert "no decision about" not in "\n".join(lines)


def test_a_pod_still_pending_keeps_its_final_sentence(tmp_path: Path) -> None:
    lines = why(log(tmp_path), "z")
    assert lines[-2] == "default/z was pending from 2026-11-21T08:00:32Z: still pending at the end"
    assert lines[-1].startswith("default/z is pending at ")


def test_a_pod_that_never_waited_says_nothing_new(tmp_path: Path) -> None:
    path = log(tmp_path)
    result = CliRunner().invoke(app, ["audit", "why", "hog", "--log", path])
    assert result.exit_code == 1 and "no decision about hog" in result.output
    assert why(path, "small-3") == []  # bound by the first session that saw it pending
