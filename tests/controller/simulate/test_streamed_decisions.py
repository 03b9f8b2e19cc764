"""A simulation's decisions can go out as they are written instead of being kept."""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from typer.testing import CliRunner

from controller.cli import app
from controller.policy.loader import load_policy
from controller.simulate.runner import Simulation
from controller.simulate.scenario import load_scenario
from streams.codec import decision_line
from streams.events import Event

SOURCES = Path(__file__).resolve().parents[2] / "replay" / "golden" / "sources"
SCENARIO = SOURCES / "pressure-graceful.yaml"


def _run(on_decision: list[Event] | None) -> tuple[list[Event], int]:
    events, _, stop = load_scenario(SCENARIO)
    policy = load_policy(yaml.safe_load(SCENARIO.read_text()))
    sink = on_decision.append if on_decision is not None else None
    result = Simulation(policy.config, eviction=policy.eviction, on_decision=sink).run(
        events, until=stop
    )
    return result.decisions, result.decided


def test_decisions_given_away_are_the_ones_kept_otherwise() -> None:
    kept, decided = _run(None)
    given: list[Event] = []
    left, counted = _run(given)
    assert kept and given == kept and decided == counted == len(kept)
    assert left == []


def test_the_cli_writes_the_decisions_of_the_run(tmp_path: Path) -> None:
    out = tmp_path / "decisions.jsonl"
    args = ["simulate", str(SCENARIO), "-c", str(SCENARIO), "--decisions", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    kept, _ = _run(None)
    assert out.read_bytes() == b"".join(decision_line(d) + b"\n" for d in kept)
    assert f"{len(kept)} decisions" in result.output
    assert os.path.getsize(out) > 0
