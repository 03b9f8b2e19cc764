"""Rescheduling's victims under PodDisruptionBudgets (a held-back pod is passed over and the
next in victim order is tried, counting the round's earlier victims), and the victim order
by Kubernetes QoS class: BestEffort, then Burstable, then Guaranteed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from projections.world import World
from streams.events import Event
from tests.builders import build_pod, watch
from tests.controller.policy.plugins.test_rescheduling import OPT_IN, flat, make_world, names, run

JSON = dict[str, Any]
COLDS = [f"cold{i}" for i in range(4)]
#: a target of 21 %: the hot node (95 %) would give up all four 1-core pods
PARAMS = {"thresholds": {"cpu": 20, "memory": 20}, "targetThresholds": {"cpu": 21, "memory": 21}}
ARGS = {"strategies": [{"name": "lowNodeUtilization", "params": PARAMS}]}
WEB = {"matchLabels": {"app": "web"}}


def pdb(spec: JSON, status: JSON | None = None, name: str = "web") -> Event:
    obj: JSON = {"metadata": {"namespace": "ns", "name": name}, "spec": spec}
    if status is not None:
        obj["status"] = status
    return watch("poddisruptionbudgets", obj)


def pod(name: str, *, labels: dict[str, str] | None = None, qos: str = "", **kw: Any) -> Event:
    obj = build_pod(
        "ns", name, node="hot", annotations=OPT_IN, labels=labels or {"app": "web"}, **kw
    )
    if qos:
        obj["status"]["qosClass"] = qos
    return watch("pods", obj)


def world(pods: list[Event], budgets: list[Event]) -> World:
    events = flat("hot", 95.0) + [e for name in COLDS for e in flat(name, 5.0)]
    return make_world(events + pods + budgets, nodes={n: {} for n in ["hot", *COLDS]})


@dataclass
class Case:
    name: str
    budgets: list[Event]
    expect: list[str]


PIN = {"matchExpressions": [{"key": "pin", "operator": "Exists"}]}
CASES = [
    Case("no-budget", [], ["p0", "p1", "p2", "p3"]),
    Case("max-unavailable-int", [pdb({"selector": WEB, "maxUnavailable": 1})], ["p0"]),
    Case("min-available-int", [pdb({"selector": WEB, "minAvailable": 2})], ["p0", "p1"]),
    # 4 pods: ceil(4 × 50%) = 2 must stay
    Case("min-available-percent", [pdb({"selector": WEB, "minAvailable": "50%"})], ["p0", "p1"]),
    # ceil(4 × 30%) = 2 may be unavailable
    Case(
        "max-unavailable-percent", [pdb({"selector": WEB, "maxUnavailable": "30%"})], ["p0", "p1"]
    ),
    Case("status-allows-one", [pdb({"selector": WEB}, {"disruptionsAllowed": 1})], ["p0"]),
    Case(
        "selector-pins-the-first",
        [pdb({"selector": PIN, "maxUnavailable": 0}, name="pin")],
        ["p1", "p2", "p3"],
    ),
    Case(
        "selector-of-another-app",
        [pdb({"selector": {"matchLabels": {"app": "db"}}, "maxUnavailable": 0})],
        ["p0", "p1", "p2", "p3"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rescheduling_respects_budgets(case: Case) -> None:
    pods = [pod("p0", labels={"app": "web", "pin": "yes"})]
    pods += [pod(f"p{i}") for i in range(1, 4)]
    victims, _ = run(world(pods, case.budgets), ARGS)
    assert sorted(names(victims)) == case.expect
    covered = [v.evidence.get("disruption_budgets") for v in victims]
    if case.name in ("no-budget", "selector-of-another-app"):
        assert not any(covered)
    elif case.name != "selector-pins-the-first":
        assert all(covered), covered
        assert all(e["allowed"] > 0 for entries in covered if entries for e in entries)


@pytest.mark.parametrize(
    ("pods", "expect"),
    [
        pytest.param(
            [("a", "Guaranteed", 1), ("b", "Burstable", 1), ("c", "BestEffort", 1)],
            ["c", "b", "a"],
            id="besteffort-burstable-guaranteed",
        ),
        pytest.param(
            [("a", "Guaranteed", 1), ("b", "Burstable", 5), ("c", "Guaranteed", 0)],
            ["c", "a", "b"],
            id="priority-before-qos",
        ),
        pytest.param(
            [("b", "Burstable", 1), ("a", "Burstable", 1), ("c", "Guaranteed", 1)],
            ["a", "b", "c"],
            id="ties-by-name",
        ),
    ],
)
def test_victim_order_by_qos_class(pods: list[tuple[str, str, int]], expect: list[str]) -> None:
    events = [pod(name, qos=qos, priority=prio) for name, qos, prio in pods]
    victims, _ = run(world(events, []), ARGS)
    ranked = sorted(victims, key=lambda v: int(v.evidence["rank"]))
    assert names(ranked) == expect
