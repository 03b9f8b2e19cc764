"""`tide replay --verify`: passes on the logs the simulation writes, fails on an altered one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml
from typer.testing import CliRunner

from controller.cli import app
from controller.policy import load_config
from controller.simulate.runner import Simulation, save_log
from controller.simulate.scenario import load_scenario
from replay.verify import replay
from streams.events import Event

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def simulated_log() -> list[Event]:
    raw = yaml.safe_load((EXAMPLES / "tdm-config.yaml").read_text())
    events, _, until = load_scenario(EXAMPLES / "tdm-window-close.yaml")
    sim = Simulation(load_config(raw))
    sim.run(events, until=until)
    return sim.log.events


def test_altering_one_decision_fails_verification() -> None:
    events = simulated_log()
    index = next(i for i, e in enumerate(events) if e.type == "decision.evict")
    original = events[index]
    other_pod = "train-9" if original.data["pod"] != "train-9" else "train-8"
    altered = dataclasses.replace(original, data={**original.data, "pod": other_pod})
    tampered = [*events[:index], altered, *events[index + 1 :]]
    report = replay(tampered)
    assert not report.ok
    first = report.differences[0]
    assert first.cause_id == original.cause
    assert any(other_pod in line for line in first.recorded)
    assert any(original.data["pod"] in line for line in first.replayed)


def test_a_removed_decision_fails_verification() -> None:
    events = simulated_log()
    index = next(i for i, e in enumerate(events) if e.type == "decision.evict")
    report = replay([*events[:index], *events[index + 1 :]])
    assert not report.ok


def test_cli_verify_exit_codes(tmp_path: Path) -> None:
    events = simulated_log()
    good = tmp_path / "good.db"
    save_log(f"sqlite:///{good}", events)
    runner = CliRunner()
    result = runner.invoke(app, ["replay", str(good), "--verify"])
    assert result.exit_code == 0, result.output
    assert "identical" in result.output

    index = next(i for i, e in enumerate(events) if e.type == "decision.evict")
    altered = dataclasses.replace(
        events[index], data={**events[index].data, "reason": "cpu-pressure"}
    )
    bad = tmp_path / "bad.db"
    save_log(f"sqlite:///{bad}", [*events[:index], altered, *events[index + 1 :]])
    result = runner.invoke(app, ["replay", str(bad), "--verify"])
    assert result.exit_code == 1
    assert "decisions differ at offset" in result.output
