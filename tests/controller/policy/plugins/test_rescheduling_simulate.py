"""End to end: seed 002's configuration plus nodeorder/usage over two hot and two cold
nodes (examples/rescheduling-*.yaml), in virtual time, then replayed with --verify."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from controller.policy.loader import load_config
from controller.simulate.runner import Simulation
from controller.simulate.scenario import load_scenario
from projections.model import TaskStatus
from replay.verify import replay

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"
START = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
HOT, COLD = ("hot-0", "hot-1"), ("cold-0", "cold-1")


@pytest.fixture(scope="module")
def sim() -> Simulation:
    events, _, until = load_scenario(EXAMPLES / "rescheduling-hot-cold.yaml")
    simulation = Simulation(load_config(EXAMPLES / "rescheduling-config.yaml"))
    simulation.run(events, until=until)
    return simulation


def test_hot_nodes_lose_their_lowest_priority_pod_once_per_interval(sim: Simulation) -> None:
    evictions = [d for d in sim.result.decisions if d.type == "decision.evict"]
    rounds = sorted({d.at for d in evictions})
    assert rounds == [START + timedelta(minutes=m) for m in (10, 20, 30)]
    for at in rounds:
        batch = [d for d in evictions if d.at == at]
        assert sorted(d.data["node"] for d in batch) == list(HOT)  # one per hot node
    assert {d.data["reason"] for d in evictions} == {"low-node-utilization"}
    # priority 10 (batch) goes before priority 1000 (web): six batch pods, three rounds
    assert all(d.data["pod"].startswith("batch-") for d in evictions)


def test_every_interval_firing_is_on_the_log(sim: Simulation) -> None:
    firings = [
        e.at
        for e in sim.log.events
        if e.type == "trigger.fired" and e.data["trigger"] == "rescheduling/interval"
    ]
    assert firings == [START + timedelta(minutes=m) for m in (0, 10, 20, 30)]


def test_replacements_bind_on_cold_nodes_and_requests_spread_narrows(sim: Simulation) -> None:
    binds = [d for d in sim.result.decisions if d.type == "decision.bind"]
    assert len(binds) == 6
    assert {d.data["node"] for d in binds} == set(COLD)
    cluster = sim.world.cluster

    def requested(node: str) -> float:
        tasks = cluster.nodes[node].tasks.values()
        live = [t for t in tasks if t.status in (TaskStatus.RUNNING, TaskStatus.BOUND)]
        return sum(t.resreq.milli_cpu for t in live) / cluster.nodes[node].allocatable.milli_cpu

    spread = max(map(requested, HOT + COLD)) - min(map(requested, HOT + COLD))
    assert spread < 5 * 2000 / 16000  # before: 5 pods of 2 cores on each hot node, none cold


def test_replay_verifies(sim: Simulation) -> None:
    report = replay(sim.log.events)
    assert report.ok, report.differences[:3]
    assert report.decisions == len(sim.result.decisions)
