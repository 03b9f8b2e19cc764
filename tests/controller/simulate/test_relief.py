"""Pressure evictions free usage that the simulated node samples then show."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
import yaml

from controller.policy.loader import load_policy
from controller.simulate.runner import Simulation
from controller.simulate.scenario import ScenarioError, expand, frees_usage
from projections.parsing import milli_uncached
from streams.events import Event

SOURCE = Path(__file__).resolve().parents[2] / "replay/golden/sources/pressure-graceful.yaml"


def _run(relief: bool) -> list[Event]:
    doc = yaml.safe_load(SOURCE.read_text())
    policy = load_policy(doc)
    events, _, until = expand(doc)
    sim = Simulation(policy.config, eviction=policy.eviction, relief=relief)
    return sim.run(events, until=until).log.events


def _hot_cpu(events: list[Event]) -> dict[datetime, float]:
    return {
        e.at: milli_uncached(e.data["usage"]["cpu"])
        for e in events
        if e.type == "metrics.node" and e.data["metadata"]["name"] == "hot-0"
    }


def test_node_samples_subtract_what_evicted_pods_used() -> None:
    plain, relieved = _run(False), _run(True)
    gone = sorted(
        e.at
        for e in relieved
        if e.type == "k8s.watch" and e.data["event"] == "DELETED" and e.cause is not None
    )
    assert gone, "the scenario's pressure evictions should terminate pods"
    before, after = _hot_cpu(plain), _hot_cpu(relieved)
    first = gone[0]
    # before the first evicted pod is gone, the samples are the profile's
    assert all(after[t] == before[t] for t in after if t < first)
    # after it, each sample is lower by 2 cores (the BE pods' request: no pod metrics)
    # per pod gone so far, never below zero
    for t in (t for t in after if t > first):
        freed = 2000.0 * sum(1 for g in gone if g <= t)
        assert after[t] == max(0.0, before[t] - freed), t
    assert any(after[t] < before[t] for t in after)


def test_relief_is_off_unless_the_scenario_asks() -> None:
    assert frees_usage({}) is False
    assert frees_usage({"evictionFreesUsage": True}) is True
    with pytest.raises(ScenarioError, match="evictionFreesUsage: 'yes'"):
        frees_usage({"evictionFreesUsage": "yes"})
