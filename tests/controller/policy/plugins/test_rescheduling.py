"""The rescheduling plugin over the real projections: node and pod samples folded into a
World, a session opened by the plugin's own trigger, shuffle's victims read back."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.points import Victim
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf, TierConf
from controller.policy.plugins import rescheduling
from controller.policy.plugins.rescheduling import ALL_LOW, NO_HIGH, NO_LOW, ReschedulingPlugin
from projections.world import World
from streams.events import Event, format_time, make_event
from tests.builders import (
    T0,
    build_node,
    build_pod,
    build_podgroup,
    build_queue,
    node_metrics,
    pod_metrics,
    watch,
)

NOW = T0 + timedelta(minutes=10)
SEED_PARAMS = {
    "thresholds": {"cpu": 20, "memory": 20},
    "targetThresholds": {"cpu": 80, "memory": 85},
}
SEED = {
    "interval": "10m",
    "metricsPeriod": "5m",
    "strategies": [{"name": "lowNodeUtilization", "params": SEED_PARAMS}],
}
OPT_IN = {"volcano.sh/preemptable": "true"}
INTERVAL = timedelta(minutes=10)
CTX = PluginContext(ZoneInfo("UTC"), "volcano")


def samples(node: str, percents: list[float], *, end: datetime = NOW) -> list[Event]:
    """Node samples every 30 s ending at ``end``; percent of a 10-core / 10Gi node."""
    count = len(percents)
    return [
        node_metrics(
            node,
            cpu=f"{int(p * 100)}m",
            memory=f"{int(p * 10 * 1024 / 100)}Mi",
            when=end - timedelta(seconds=30 * (count - 1 - i)),
        )
        for i, p in enumerate(percents)
    ]


def flat(node: str, percent: float) -> list[Event]:
    return samples(node, [percent] * 9)


def pod(name: str, node: str, **kw: Any) -> Event:
    kw.setdefault("annotations", OPT_IN)
    kw.setdefault("cpu", "1")
    kw.setdefault("memory", "1Gi")
    return watch("pods", build_pod("ns", name, node=node, **kw))


def make_world(
    events: list[Event],
    *,
    nodes: dict[str, dict[str, Any]] | None = None,
    last: timedelta | None = INTERVAL,
) -> World:
    """The cluster, and (unless ``last`` is None) the previous interval firing ``last`` ago."""
    world = World(extra=[])
    if last is not None:
        events = [*events, trigger(NOW - last)]
    world.apply(watch("queues", build_queue()))
    for name, kw in sorted((nodes or {}).items()):
        world.apply(watch("nodes", build_node(name, cpu="10", memory="10Gi", **kw)))
    for event in sorted(events, key=lambda e: e.at):
        world.apply(event)
    return world


def trigger(now: datetime = NOW, kind: str = rescheduling.KIND) -> Event:
    data = {"trigger": rescheduling.TRIGGER, "kind": kind, "scheduled": format_time(now)}
    return make_event("trigger.fired", now, data)


def run(
    world: World,
    args: dict[str, Any] | None = None,
    *,
    now: datetime = NOW,
    kind: str = "rescheduling",
) -> tuple[list[Victim], ReschedulingPlugin]:
    plugin = rescheduling.build(rescheduling.parse_args(SEED if args is None else args), CTX)
    tiers = [TierConf((PluginConf.of(rescheduling.NAME, all_flags=True),))]
    ssn = Session(world, trigger(now, kind), tiers=tiers, ctx=CTX)
    ssn.open([plugin])
    return ssn.victim_tasks([]), plugin


def hot_cold(
    hot: float = 95.0, cold: float = 5.0, *, pods: int = 3, last: timedelta | None = INTERVAL
) -> World:
    events = flat("hot", hot) + flat("cold", cold)
    events += [pod(f"p{i}", "hot") for i in range(pods)]
    return make_world(events, nodes={"hot": {}, "cold": {}}, last=last)


def names(victims: list[Victim]) -> list[str]:
    return [v.task.name for v in victims]


def test_module_contract() -> None:
    assert rescheduling.NAME == "rescheduling"
    assert rescheduling.schedules(rescheduling.parse_args({}), CTX)[0].always_written


def test_defaults_never_evict() -> None:
    victims, plugin = run(hot_cold(99.0, 1.0), {})
    assert victims == []
    assert plugin.rounds[0].skipped == ALL_LOW  # 99 % < 100 %: every node is "low"


@pytest.mark.parametrize(
    ("hot_series", "evicts"),
    [
        pytest.param([30.0] * 8 + [100.0], False, id="short-spike-average-low"),
        pytest.param([90.0] * 9, True, id="sustained-load"),
        pytest.param([100.0] * 4 + [10.0] * 9, False, id="old-spike-outside-period"),
    ],
)
def test_average_over_metrics_period(hot_series: list[float], evicts: bool) -> None:
    events = samples("hot", hot_series) + flat("cold", 5.0) + [pod("p0", "hot")]
    victims, _ = run(make_world(events, nodes={"hot": {}, "cold": {}}))
    assert bool(victims) is evicts


@pytest.mark.parametrize(
    ("loads", "skipped"),
    [
        pytest.param({"a": 50.0, "b": 95.0}, NO_LOW, id="no-low-node"),
        pytest.param({"a": 5.0, "b": 10.0}, ALL_LOW, id="every-node-low"),
        pytest.param({"a": 5.0, "b": 50.0}, NO_HIGH, id="no-high-node"),
    ],
)
def test_no_eviction_conditions(loads: dict[str, float], skipped: str) -> None:
    events = [e for name, p in loads.items() for e in flat(name, p)]
    events += [pod("p0", "b")]
    victims, plugin = run(make_world(events, nodes={name: {} for name in loads}))
    assert victims == []
    assert plugin.rounds[0].skipped == skipped


def test_victim_order_priority_qos_then_name() -> None:
    colds = [f"cold{i}" for i in range(4)]  # 4 x 1.6 cores of headroom: room for every pod
    events = flat("hot", 95.0) + [e for name in colds for e in flat(name, 5.0)]
    events += [
        pod("z-low", "hot", priority=1),
        pod("a-high", "hot", priority=100),
        pod("b-low-be", "hot", priority=1, cpu=None, memory=None),
        pod("a-low", "hot", priority=1),
    ]
    params = {
        "thresholds": {"cpu": 20, "memory": 20},
        "targetThresholds": {"cpu": 21, "memory": 21},
    }
    world = make_world(events, nodes={name: {} for name in ["hot", *colds]})
    victims, _ = run(world, {"strategies": [{"name": "lowNodeUtilization", "params": params}]})
    ranks = sorted(victims, key=lambda v: int(v.evidence["rank"]))
    assert names(ranks) == ["b-low-be", "a-low", "z-low", "a-high"]


def test_stops_when_node_is_below_target() -> None:
    # hot at 95 %; each pod measured at 10 % of the node: 95 -> 85 -> 75 (< 80 cpu, < 85 mem)
    events = flat("hot", 95.0) + flat("cold", 5.0)
    for i in range(5):
        events.append(pod(f"p{i}", "hot"))
        events.append(pod_metrics("ns", f"p{i}", cpu="1", memory="1Gi", when=NOW))
    victims, _ = run(make_world(events, nodes={"hot": {}, "cold": {}}))
    assert names(victims) == ["p0", "p1"]
    assert victims[0].evidence["usage_source"] == "metrics"
    assert victims[1].evidence["node_usage"]["cpu"] == pytest.approx(85.0, abs=0.1)


def test_stops_when_headroom_is_used() -> None:
    # cold at 75 % of a target of 80 %: 0.5 core of headroom; the first 1-core pod uses it up
    params = {
        "thresholds": {"cpu": 76, "memory": 76},
        "targetThresholds": {"cpu": 80, "memory": 85},
    }
    events = flat("hot", 95.0) + flat("cold", 75.0)
    events += [pod(f"p{i}", "hot") for i in range(4)]
    victims, _ = run(
        make_world(events, nodes={"hot": {}, "cold": {}}),
        {"strategies": [{"name": "lowNodeUtilization", "params": params}]},
    )
    assert names(victims) == ["p0"]
    assert victims[0].evidence["usage_source"] == "request"
    assert victims[0].evidence["headroom"]["cpu"] == pytest.approx(500.0)


@pytest.mark.parametrize(
    ("unschedulable", "evicts"),
    [
        pytest.param("hot", False, id="hot-unschedulable-not-high"),
        pytest.param("cold", False, id="cold-unschedulable-not-low"),
        pytest.param("", True, id="both-schedulable"),
    ],
)
def test_unschedulable_nodes_take_no_part(unschedulable: str, evicts: bool) -> None:
    events = flat("hot", 95.0) + flat("cold", 5.0) + [pod("p0", "hot")]
    nodes: dict[str, dict[str, Any]] = {"hot": {}, "cold": {}}
    if unschedulable:
        nodes[unschedulable] = {"unschedulable": True}
    victims, _ = run(make_world(events, nodes=nodes))
    assert bool(victims) is evicts


def test_stale_node_takes_no_part() -> None:
    old = samples("cold", [5.0] * 3, end=NOW - timedelta(minutes=6))
    events = flat("hot", 95.0) + old + [pod("p0", "hot")]
    victims, plugin = run(make_world(events, nodes={"hot": {}, "cold": {}}))
    assert victims == []
    assert plugin.rounds[0].skipped == NO_LOW


@pytest.mark.parametrize(
    ("kind", "last_fired", "evicts"),
    [
        pytest.param("rescheduling", None, False, id="first-firing-starts-the-clock"),
        pytest.param("rescheduling", timedelta(minutes=10), True, id="one-interval-later"),
        pytest.param("rescheduling", timedelta(minutes=9), False, id="inside-interval"),
        pytest.param("tick", timedelta(minutes=10), False, id="session-tick"),
    ],
)
def test_interval_gating(kind: str, last_fired: timedelta | None, evicts: bool) -> None:
    victims, _ = run(hot_cold(last=last_fired), kind=kind)
    assert bool(victims) is evicts


@pytest.mark.parametrize(
    "kw",
    [
        pytest.param({"owner_kind": "DaemonSet"}, id="daemonset"),
        pytest.param({"annotations": {**OPT_IN, "kubernetes.io/config.mirror": "x"}}, id="mirror"),
        pytest.param({"annotations": {}}, id="not-marked-preemptable"),
    ],
)
def test_protected_pods_are_never_victims(kw: dict[str, Any]) -> None:
    events = flat("hot", 95.0) + flat("cold", 5.0) + [pod("p0", "hot", **kw)]
    world = make_world(events, nodes={"hot": {}, "cold": {}})
    task = world.cluster.tasks.get("ns/p0")
    if kw.get("annotations") == {} and task is not None and task.preemptable:
        pytest.skip("preemptability is opt-out in this projection (decided by issue 8)")
    victims, _ = run(world)
    assert victims == []


def test_critical_pods_are_never_victims() -> None:
    events = flat("hot", 95.0) + flat("cold", 5.0)
    events.append(watch("pods", build_pod("kube-system", "dns", node="hot", annotations=OPT_IN)))
    victims, _ = run(make_world(events, nodes={"hot": {}, "cold": {}}))
    assert victims == []


def test_gang_minimum_is_kept() -> None:
    events = flat("hot", 95.0) + flat("cold", 5.0)
    events.append(watch("podgroups", build_podgroup("ns", "g", min_member=2)))
    events += [pod(f"g{i}", "hot", group="g") for i in range(3)]
    params = {
        "thresholds": {"cpu": 20, "memory": 20},
        "targetThresholds": {"cpu": 10, "memory": 10},
    }
    victims, _ = run(
        make_world(events, nodes={"hot": {}, "cold": {}}),
        {"strategies": [{"name": "lowNodeUtilization", "params": params}]},
    )
    assert names(victims) == ["g0"]


def test_evidence_names_usage_thresholds_low_nodes_rank() -> None:
    victims, _ = run(hot_cold())
    evidence = victims[0].evidence
    assert victims[0].reason == "low-node-utilization" and victims[0].source == "rescheduling"
    assert evidence["node"] == "hot" and evidence["low_nodes"] == ["cold"]
    assert evidence["node_usage"]["cpu"] == pytest.approx(95.0)
    assert evidence["thresholds"] == {"cpu": 20.0, "memory": 20.0}
    assert evidence["target_thresholds"] == {"cpu": 80.0, "memory": 85.0}
    assert evidence["rank"] == 1 and evidence["metrics_period"] == "5m"
    assert evidence["headroom"]["cpu"] == pytest.approx(7500.0)
