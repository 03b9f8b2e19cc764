"""Placement for rescheduling: ``nodeorder`` (Kubernetes scores with Volcano's weights) and
``usage`` (measured usage filters and scores nodes), and the behaviour level that keeps
old logs replaying without them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.policy.framework.config import CURRENT_BEHAVIOUR, LEGACY_BEHAVIOUR
from controller.policy.framework.errors import ConfigError
from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.points import FitError
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf, TierConf
from controller.policy.loader import load_config
from controller.policy.plugins import nodeorder, usage
from projections.model import NodeInfo, Resource, TaskInfo, TaskStatus
from projections.world import World
from streams.events import format_time, make_event
from tests.builders import T0, build_node, build_queue, node_metrics, watch

CTX = PluginContext(ZoneInfo("UTC"), "volcano")
GI = 1024.0**3


def node(name: str, *, used_cpu: float = 0, used_mem: float = 0, **kw: Any) -> NodeInfo:
    return NodeInfo(
        name=name,
        allocatable=Resource(10000, 10 * GI),
        capacity=Resource(10000, 10 * GI),
        used=Resource(used_cpu, used_mem),
        **kw,
    )


def task(cpu: float = 1000, mem: float = GI, **kw: Any) -> TaskInfo:
    req = Resource(cpu, mem)
    return TaskInfo(
        uid="u",
        namespace="ns",
        name="t",
        job="ns/t",
        status=TaskStatus.PENDING,
        resreq=req,
        init_resreq=req,
        **kw,
    )


@pytest.mark.parametrize(
    ("used", "least", "most", "balanced"),
    [
        pytest.param((0, 0), 90, 10, 100, id="empty-node"),
        pytest.param((4000, 4 * GI), 50, 50, 100, id="half-full"),
        pytest.param((8000, 0), 50, 50, 60, id="cpu-heavy"),
        pytest.param((9500, 9.5 * GI), 0, 100, 100, id="over-allocatable"),
    ],
)
def test_resource_scores(used: tuple[float, float], least: int, most: int, balanced: int) -> None:
    n, t = node("n", used_cpu=used[0], used_mem=used[1]), task()
    assert nodeorder.least_requested(t, n) == least
    assert nodeorder.most_requested(t, n) == most
    assert nodeorder.balanced_resource(t, n) == balanced


def test_zero_request_counts_kubernetes_non_zero_defaults() -> None:
    assert nodeorder.most_requested(task(0, 0), node("n")) == (1 + 1) // 2  # 100m / 200Mi


def test_preferred_node_affinity_and_taints() -> None:
    affinity = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 7,
                    "preference": {
                        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["cold"]}]
                    },
                }
            ]
        }
    }
    t = task(affinity=affinity)
    assert nodeorder.node_affinity(t, node("a", labels={"tier": "cold"})) == 7
    assert nodeorder.node_affinity(t, node("b", labels={"tier": "hot"})) == 0
    taint = {"key": "k", "value": "v", "effect": "PreferNoSchedule"}
    assert nodeorder.intolerable(task(), node("c", taints=[taint])) == 1
    tolerating = task(tolerations=[{"key": "k", "operator": "Exists"}])
    assert nodeorder.intolerable(tolerating, node("c", taints=[taint])) == 0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param({"leastrequested.weight": -1}, "leastrequested.weight", id="negative"),
        pytest.param({"nodeaffinity.weight": "2"}, "nodeaffinity.weight", id="string"),
        pytest.param({"podaffinity.weight": 1.5}, "podaffinity.weight", id="float-unscored"),
    ],
)
def test_nodeorder_rejects_bad_weights(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        nodeorder.parse_args(raw)


def test_nodeorder_defaults_are_volcanos() -> None:
    args = nodeorder.parse_args({})
    assert (args.least_requested, args.most_requested, args.balanced_resource) == (1, 0, 1)
    assert (args.node_affinity, args.taint_toleration) == (2, 3)


def usage_session(percents: dict[str, float], *, age: timedelta = timedelta(0)) -> Session:
    world = World(extra=[])
    world.apply(watch("queues", build_queue()))
    now = T0 + timedelta(minutes=10)
    for name, p in sorted(percents.items()):
        world.apply(watch("nodes", build_node(name, cpu="10", memory="10Gi")))
        for i in range(5):
            when = now - age - timedelta(seconds=30 * i)
            world.apply(
                node_metrics(
                    name, cpu=f"{int(p * 100)}m", memory=f"{int(p * 1024 / 10)}Mi", when=when
                )
            )
    data = {"trigger": "session-tick", "kind": "tick", "scheduled": format_time(now)}
    tiers = [TierConf((PluginConf.of(usage.NAME, all_flags=True),))]
    ssn = Session(world, make_event("trigger.fired", now, data), tiers=tiers, ctx=CTX)
    ssn.open([usage.build(usage.parse_args({"thresholds": {"cpu": 80, "mem": 80}}), CTX)])
    return ssn


def test_usage_filters_hot_nodes_and_prefers_cold_ones() -> None:
    ssn = usage_session({"hot": 90.0, "warm": 50.0, "cold": 10.0})
    t = task()
    with pytest.raises(FitError, match="CPU load"):
        ssn.predicate(t, ssn.nodes["hot"])
    ssn.predicate(t, ssn.nodes["cold"])
    assert ssn.node_order(t, ssn.nodes["cold"]) == pytest.approx(0.9 * 100 * 5)
    assert ssn.node_order(t, ssn.nodes["cold"]) > ssn.node_order(t, ssn.nodes["warm"])


def test_usage_ignores_stale_metrics() -> None:
    ssn = usage_session({"hot": 95.0}, age=timedelta(minutes=6))
    ssn.predicate(task(), ssn.nodes["hot"])  # not judged: passes
    assert ssn.node_order(task(), ssn.nodes["hot"]) == 0.0


@pytest.mark.parametrize(
    "age",
    [timedelta(0), timedelta(minutes=2), timedelta(minutes=5) - timedelta(microseconds=1)],
    ids=["fresh", "two-minutes-old", "a-microsecond-inside-five-minutes"],
)
def test_usage_judges_recent_metrics_to_the_microsecond(age: timedelta) -> None:
    ssn = usage_session({"hot": 95.0}, age=age)
    with pytest.raises(FitError, match="CPU load"):
        ssn.predicate(task(), ssn.nodes["hot"])


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param({"thresholds": {"cpu": 120}}, "thresholds.cpu", id="over-100"),
        pytest.param({"thresholds": {"gpu": 1}}, "thresholds.gpu", id="unknown-resource"),
        pytest.param({"usage.weight": "5"}, "usage.weight", id="string-weight"),
        pytest.param({"metricsPeriod": "soon"}, "metricsPeriod", id="bad-period"),
    ],
)
def test_usage_rejects_bad_arguments(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        usage.parse_args(raw)


CONFIG = {
    "actions": "allocate, shuffle",
    "tiers": [{"plugins": [{"name": "nodeorder"}, {"name": "usage"}, {"name": "rescheduling"}]}],
}


@pytest.mark.parametrize(
    ("default", "behaviour", "loaded"),
    [
        pytest.param(None, None, ["nodeorder", "usage", "rescheduling"], id="new-config"),
        pytest.param(LEGACY_BEHAVIOUR, None, [], id="old-log-without-stamp"),
        pytest.param(LEGACY_BEHAVIOUR, 2, ["nodeorder", "usage", "rescheduling"], id="new-log"),
        pytest.param(LEGACY_BEHAVIOUR, 3, ["nodeorder", "usage", "rescheduling"], id="level-3-log"),
        pytest.param(None, 1, [], id="asked-for-level-1"),
    ],
)
def test_behaviour_level_decides_which_plugins_exist(
    default: int | None, behaviour: int | None, loaded: list[str]
) -> None:
    raw: dict[str, Any] = dict(CONFIG)
    if behaviour is not None:
        raw["behaviour"] = behaviour
    config = load_config(raw) if default is None else load_config(raw, default_behaviour=default)
    assert [conf.name for conf in config.tiers[0].plugins] == loaded
    # stamped (so config.applied carries it) only when a plugin newer than level 1 is in force
    assert config.raw.get("behaviour") == (behaviour or (CURRENT_BEHAVIOUR if loaded else None))
    if not loaded:
        assert any("nodeorder" in w for w in config.warnings)


def test_behaviour_level_must_be_known() -> None:
    with pytest.raises(ConfigError, match=f"behaviour: {CURRENT_BEHAVIOUR + 1}"):
        load_config({**CONFIG, "behaviour": CURRENT_BEHAVIOUR + 1})
