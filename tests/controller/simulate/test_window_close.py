"""End to end: a TDM window closes on a zone running three preemptable pods of one job."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from controller.policy.loader import load_config
from controller.simulate.runner import Simulation
from controller.simulate.scenario import load_scenario
from replay.verify import replay

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def run_example(config_name: str = "tdm-config.yaml", **overrides: object) -> Simulation:
    raw = yaml.safe_load((EXAMPLES / config_name).read_text())
    raw.update(overrides)
    events, _, until = load_scenario(EXAMPLES / "tdm-window-close.yaml")
    sim = Simulation(load_config(raw))
    sim.run(events, until=until)
    return sim


def test_one_eviction_per_evict_period_from_window_close() -> None:
    sim = run_example()
    evictions = [d for d in sim.result.decisions if d.type == "decision.evict"]
    assert [d.at for d in evictions] == [
        datetime(2026, 11, 21, 21, 0, tzinfo=UTC),
        datetime(2026, 11, 21, 21, 1, tzinfo=UTC),
        datetime(2026, 11, 21, 21, 2, tzinfo=UTC),
    ]
    assert {d.data["reason"] for d in evictions} == {"tdm-window-closed"}
    assert {d.data["source"] for d in evictions} == {"tdm"}
    assert len({d.data["pod"] for d in evictions}) == 3
    # Each decision names the trigger that caused it, written just before it.
    by_id = {e.id: e for e in sim.log.events}
    for decision in evictions:
        assert decision.cause is not None
        trigger = by_id[decision.cause]
        assert trigger.type == "trigger.fired"
        assert trigger.offset < decision.offset
        assert trigger.at == decision.at


def test_every_eviction_is_answered_by_the_simulated_cluster() -> None:
    sim = run_example()
    evictions = {d.id for d in sim.result.decisions if d.type == "decision.evict"}
    applied = {e.cause for e in sim.log.events if e.type == "effect.applied"}
    assert evictions <= applied
    deleted = [
        e.data["object"]["metadata"]["name"]
        for e in sim.log.events
        if e.type == "k8s.watch" and e.data["event"] == "DELETED"
    ]
    assert sorted(deleted) == ["train-0", "train-1", "train-2"]


@pytest.mark.parametrize("period, expected_minutes", [("2m", [0, 2, 4]), ("30s", [0, 0.5, 1])])
def test_evict_period_paces_the_rounds(period: str, expected_minutes: list[float]) -> None:
    raw = yaml.safe_load((EXAMPLES / "tdm-config.yaml").read_text())
    raw["tiers"][1]["plugins"][1]["arguments"]["tdm.evict.period"] = period
    events, _, until = load_scenario(EXAMPLES / "tdm-window-close.yaml")
    sim = Simulation(load_config(raw))
    sim.run(events, until=until)
    start = datetime(2026, 11, 21, 21, 0, tzinfo=UTC)
    got = [
        (d.at - start).total_seconds() / 60
        for d in sim.result.decisions
        if d.type == "decision.evict"
    ]
    assert got == expected_minutes


def test_the_log_replays_identically() -> None:
    sim = run_example()
    report = replay(sim.log.events)
    assert report.ok, [d.describe() for d in report.differences]
    assert report.decisions == len(sim.result.decisions)
