"""The backfill action: BestEffort pods placed where the predicates allow."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.policy.engine import run_cycle
from controller.policy.loader import load_config
from tests.builders import at, build_node, build_pod, build_podgroup, watch
from tests.controller.policy.framework.scenario import binds, trigger, world_of

JSON = dict[str, Any]
CONF: dict[str, Any] = {
    "actions": "allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {"plugins": [{"name": "predicates"}]},
    ],
}
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def be(name: str, **kw: Any) -> JSON:
    return build_pod("ns", name, phase="Pending", cpu=None, memory=None, **kw)


@dataclass
class Case:
    name: str
    nodes: list[JSON]
    pods: list[JSON]
    expect: dict[str, str]
    groups: list[JSON] = field(default_factory=list)


CASES = [
    Case(
        "best-effort-goes-to-the-lowest-name",
        [build_node("n2"), build_node("n1")],
        [be("p")],
        {"ns/p": "n1"},
    ),
    Case(
        "a-full-cpu-node-still-takes-best-effort",
        [build_node("n1", cpu="1")],
        [build_pod("ns", "busy", node="n1", cpu="1"), be("p")],
        {"ns/p": "n1"},
    ),
    Case(
        "pod-count-limit-is-respected",
        [build_node("n1", pods="1"), build_node("n2", taints=[TAINT])],
        [build_pod("ns", "busy", node="n1"), be("p")],
        {},
    ),
    Case(
        "requests-are-left-to-allocate",
        [build_node("n1", cpu="1")],
        [build_pod("ns", "busy", node="n1", cpu="1"), build_pod("ns", "p", phase="Pending")],
        {},
    ),
    Case(
        "gang-not-ready-is-not-bound",
        [build_node("n1")],
        [be("g-0", group="g")],
        {},
        groups=[build_podgroup("ns", "g", min_member=2)],
    ),
    Case(
        "gang-ready-is-bound",
        [build_node("n1")],
        [be("g-0", group="g"), be("g-1", group="g")],
        {"ns/g-0": "n1", "ns/g-1": "n1"},
        groups=[build_podgroup("ns", "g", min_member=2)],
    ),
    Case(
        "other-schedulers-pods-are-left-alone",
        [build_node("n1")],
        [be("p", scheduler="default-scheduler")],
        {},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_backfill(case: Case) -> None:
    events = [watch("nodes", n) for n in case.nodes]
    events += [watch("podgroups", g) for g in case.groups]
    events += [watch("pods", p) for p in case.pods]
    decisions = run_cycle(world_of(events), trigger(at(1)), load_config(CONF))
    assert binds(decisions) == case.expect
    for d in decisions:
        assert d.data["source"] == "backfill" and d.data["reason"] == "allocate"
