"""PodDisruptionBudgets in preempt: a victim whose eviction would take a budget below what
it demands is passed over, counting the evictions the session already staged, in normal
and in topology-aware mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.policy.engine import run_cycle
from controller.policy.loader import load_config
from tests.builders import at, watch
from tests.controller.policy.actions.preempt.cases import (
    HIGH,
    LOW,
    classes,
    config,
    group,
    node,
    pod,
    queue,
)
from tests.controller.policy.framework.scenario import evicts, trigger, world_of

JSON = dict[str, Any]
WEB = {"matchLabels": {"app": "web"}}


def pdb(spec: JSON, status: JSON | None = None, name: str = "web") -> JSON:
    out: JSON = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"namespace": "c1", "name": name},
        "spec": spec,
    }
    if status is not None:
        out["status"] = status
    return out


def web(name: str, **labels: str) -> JSON:
    """A low-priority preemptable Running pod on n1, labelled app=web."""
    return pod(
        name,
        "low",
        node="n1",
        preemptable="true",
        klass="low-priority",
        priority=LOW,
        labels={"app": "web", **labels},
    )


def urgent(name: str, cpu: str, job: str = "high") -> JSON:
    return pod(name, job, cpu=cpu, priority=HIGH, klass="high-priority")


#: two preemptors of two jobs, one cpu each: each job starves until its own is placed
TWO = [urgent("hi-0", "1"), urgent("hi-1", "1", "high2")]


@dataclass
class Case:
    name: str
    budgets: list[JSON]
    #: how many web pods are evicted
    evicted: int
    preemptors: list[JSON] = field(default_factory=lambda: [urgent("hi-0", "2")])
    #: pods that must never be victims
    protected: list[str] = field(default_factory=list)
    pinned: bool = False


CASES = [
    Case("no-budget", [], 2),
    Case("min-available-int-leaves-one", [pdb({"selector": WEB, "minAvailable": 2})], 0),
    Case("min-available-int-allows-two", [pdb({"selector": WEB, "minAvailable": 1})], 2),
    # 3 pods: ceil(3 × 34%) = 2 must stay → 1 allowed, not enough for 2 cpus
    Case("min-available-percent-rounds-up", [pdb({"selector": WEB, "minAvailable": "34%"})], 0),
    Case("min-available-percent-allows", [pdb({"selector": WEB, "minAvailable": "30%"})], 2),
    Case("max-unavailable-one", [pdb({"selector": WEB, "maxUnavailable": 1})], 0),
    Case("max-unavailable-two", [pdb({"selector": WEB, "maxUnavailable": 2})], 2),
    # ceil(3 × 50%) = 2 may be unavailable → 2 allowed
    Case("max-unavailable-percent", [pdb({"selector": WEB, "maxUnavailable": "50%"})], 2),
    # ceil(3 × 20%) = 1 may be unavailable → 1 allowed
    Case("max-unavailable-percent-one", [pdb({"selector": WEB, "maxUnavailable": "20%"})], 0),
    Case("status-allows-none", [pdb({"selector": WEB}, {"disruptionsAllowed": 0})], 0),
    Case(
        "status-allows-two",
        [pdb({"selector": WEB, "minAvailable": 3}, {"disruptionsAllowed": 2})],
        2,
    ),
    Case(
        "selector-not-matching",
        [pdb({"selector": {"matchLabels": {"app": "db"}}, "maxUnavailable": 0})],
        2,
    ),
    Case(
        "other-namespace-budget",
        [
            pdb({"selector": WEB, "maxUnavailable": 0})
            | {"metadata": {"namespace": "x", "name": "w"}}
        ],
        2,
    ),
    Case(
        "selector-expression-pins-one-pod",
        [
            pdb(
                {
                    "selector": {"matchExpressions": [{"key": "pin", "operator": "Exists"}]},
                    "maxUnavailable": 0,
                },
                name="pin",
            )
        ],
        2,
        protected=["c1/w-0"],
        pinned=True,
    ),
    Case(
        "two-preemptors-one-disruption",
        [pdb({"selector": WEB, "maxUnavailable": 1})],
        1,
        preemptors=TWO,
    ),
    Case(
        "two-preemptors-two-disruptions",
        [pdb({"selector": WEB, "maxUnavailable": 2})],
        2,
        preemptors=TWO,
    ),
    Case(
        "two-budgets-the-tighter-wins",
        [
            pdb({"selector": WEB, "maxUnavailable": 2}),
            pdb({"selector": {"matchLabels": {"app": "web"}}, "minAvailable": 2}, name="min"),
        ],
        1,
        preemptors=TWO,
    ),
]


@pytest.mark.parametrize("topology", [False, True], ids=["normal", "topology-aware"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_preempt_respects_budgets(case: Case, topology: bool) -> None:
    pods = [web("w-0", pin="yes") if case.pinned else web("w-0"), web("w-1"), web("w-2")]
    events = [
        watch("queues", queue()),
        watch("nodes", node("n1", "3", "10G")),
        watch("podgroups", group("low", 1, "low-priority")),
        watch("podgroups", group("high", 1, "high-priority")),
        watch("podgroups", group("high2", 1, "high-priority")),
        *[watch("pods", p) for p in classes() + pods + case.preemptors],
        *[watch("poddisruptionbudgets", b) for b in case.budgets],
    ]
    decisions = run_cycle(world_of(events), trigger(at(1)), load_config(config(topology=topology)))
    victims = evicts(decisions)
    assert len(victims) == case.evicted, victims
    assert not set(victims) & set(case.protected)
    for decision in decisions:
        covered = decision.data["evidence"].get("disruption_budgets")
        if case.budgets and case.name not in ("selector-not-matching", "other-namespace-budget"):
            if not case.pinned:
                assert covered, decision.data
                assert all(entry["allowed"] > 0 for entry in covered)
        else:
            assert covered is None
