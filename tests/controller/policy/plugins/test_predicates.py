"""The predicates plugin (spec §5.5): pod count, unschedulable, selectors, taints."""

from __future__ import annotations

from typing import Any

import pytest

from controller.policy.framework import points as p
from controller.policy.framework.errors import ConfigError
from controller.policy.framework.matching import tolerates
from controller.policy.framework.points import FitError, FitStatus
from controller.policy.framework.simulate import Scratch
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import predicates
from controller.policy.plugins.predicates import PredicatesArgs, PredicatesPlugin
from projections.model import NodeInfo, TaskInfo, TaskStatus
from tests.controller.policy.framework.scenario import cluster, ctx, node, session, task, tiers

UNRESOLVABLE = FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE
NO_SCHEDULE = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def check(t: TaskInfo, n: NodeInfo, args: PredicatesArgs | None = None) -> FitError | None:
    try:
        PredicatesPlugin(args or PredicatesArgs()).predicate(t, n)
    except FitError as exc:
        return exc
    return None


def test_pod_count_limit_is_unschedulable() -> None:
    c = cluster(
        nodes=[node("n1", pods=2)],
        tasks=[task(f"r{i}", status=TaskStatus.RUNNING, node="n1") for i in range(2)],
    )
    err = check(task("p"), c.nodes["n1"])
    assert err is not None and err.status == FitStatus.UNSCHEDULABLE
    assert err.reason == "node(s) pod number exceeded"
    assert check(task("p"), node("n2", pods=3)) is None


def test_unschedulable_node_unless_tolerated() -> None:
    cordoned = node("n1", unschedulable=True)
    err = check(task("p"), cordoned)
    assert err is not None and err.status == UNRESOLVABLE
    tol = [
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert check(task("p", tolerations=tol), cordoned) is None


@pytest.mark.parametrize(
    ("selector", "labels", "fits"),
    [
        ({"disk": "ssd"}, {"disk": "ssd", "zone": "a"}, True),
        ({"disk": "ssd"}, {"disk": "hdd"}, False),
        ({"disk": "ssd"}, {}, False),
        ({}, {}, True),
    ],
)
def test_node_selector(selector: dict[str, str], labels: dict[str, str], fits: bool) -> None:
    err = check(task("p", selector=selector), node("n1", labels=labels))
    assert (err is None) is fits
    if err is not None:
        assert err.status == UNRESOLVABLE


def affinity(*exprs: dict[str, Any], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(exprs)}
    if fields:
        term["matchFields"] = fields
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }


@pytest.mark.parametrize(
    ("expr", "fits"),
    [
        ({"key": "zone", "operator": "In", "values": ["a", "b"]}, True),
        ({"key": "zone", "operator": "NotIn", "values": ["a"]}, False),
        ({"key": "gpu", "operator": "Exists"}, False),
        ({"key": "gpu", "operator": "DoesNotExist"}, True),
        ({"key": "cores", "operator": "Gt", "values": ["8"]}, True),
        ({"key": "cores", "operator": "Lt", "values": ["8"]}, False),
    ],
)
def test_required_node_affinity(expr: dict[str, Any], fits: bool) -> None:
    n = node("n1", labels={"zone": "a", "cores": "16"})
    assert (check(task("p", affinity=affinity(expr)), n) is None) is fits


def test_node_affinity_match_fields_and_switch_off() -> None:
    by_name = affinity(fields=[{"key": "metadata.name", "operator": "In", "values": ["n2"]}])
    assert check(task("p", affinity=by_name), node("n1")) is not None
    assert check(task("p", affinity=by_name), node("n2")) is None
    off = PredicatesArgs(node_affinity=False)
    assert check(task("p", selector={"x": "y"}), node("n1"), off) is None


@pytest.mark.parametrize(
    ("toleration", "taint", "ok"),
    [
        (
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
            NO_SCHEDULE,
            True,
        ),
        ({"key": "dedicated", "value": "gpu"}, NO_SCHEDULE, True),  # Equal is the default
        ({"key": "dedicated", "operator": "Equal", "value": "cpu"}, NO_SCHEDULE, False),
        ({"key": "dedicated", "operator": "Exists"}, NO_SCHEDULE, True),
        ({"operator": "Exists"}, NO_SCHEDULE, True),  # empty key tolerates every taint
        ({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, NO_SCHEDULE, False),
        ({"key": "other", "operator": "Exists"}, NO_SCHEDULE, False),
    ],
)
def test_tolerates(toleration: dict[str, Any], taint: dict[str, Any], ok: bool) -> None:
    assert tolerates(toleration, taint) is ok


def test_taints_block_noschedule_and_noexecute_only() -> None:
    for effect, blocks in (("NoSchedule", True), ("NoExecute", True), ("PreferNoSchedule", False)):
        n = node("n1", taints=[{"key": "k", "value": "v", "effect": effect}])
        err = check(task("p"), n)
        assert (err is not None) is blocks
        if err is not None:
            assert err.status == UNRESOLVABLE and "untolerated taint {k: v}" in err.reason
    tainted = node("n1", taints=[NO_SCHEDULE])
    assert check(task("p"), tainted, PredicatesArgs(taint_toleration=False)) is None


def test_parse_args() -> None:
    args = predicates.parse_args(
        {"predicate.TaintTolerationEnable": False, "predicate.CacheEnable": True}
    )
    assert args == PredicatesArgs(node_affinity=True, taint_toleration=False)
    with pytest.raises(ConfigError, match=r'predicate\.NodeAffinityEnable: "yes"'):
        predicates.parse_args({"predicate.NodeAffinityEnable": "yes"})


def test_scheduling_key_ignores_pod_affinity_only() -> None:
    anti: dict[str, Any] = {
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}
    }
    node_aff = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]
            }
        }
    }
    key = predicates.scheduling_key
    assert key(task("a")) == key(task("b", affinity=anti))
    assert key(task("a")) != key(task("b", affinity=node_aff))
    assert key(task("a")) != key(task("b", selector={"x": "y"}))
    assert key(task("a")) != key(task("b", tolerations=[{"operator": "Exists"}]))


@pytest.mark.parametrize(
    ("flags", "removed", "reason"),
    [
        ((p.PREDICATE,), 0, "node(s) pod number exceeded"),
        ((p.PREDICATE,), 1, None),  # a victim left the scratch copy: room for one pod
        ((), 0, None),  # the predicate flag off: no simulate predicate runs
    ],
)
def test_simulate_predicate_checks_the_scratch_copy(
    flags: tuple[str, ...], removed: int, reason: str | None
) -> None:
    c = cluster(
        nodes=[node("n1", pods=2)],
        tasks=[task(f"r{i}", status=TaskStatus.RUNNING, node="n1") for i in range(2)] + [task("p")],
    )
    rows = tiers([PluginConf.of(predicates.NAME, *flags)])
    ssn = session(c, rows, [predicates.build(PredicatesArgs(), ctx())])
    sc = Scratch(ssn, ["n1"])
    preemptor = ssn.tasks["ns/p"]
    for i in range(removed):
        sc.remove_task(preemptor, ssn.tasks[f"ns/r{i}"])
    err = sc.predicate(preemptor, "n1")
    assert (err.reason if err else None) == reason
    assert check(preemptor, ssn.nodes["n1"]) is not None  # the session's node is still full
