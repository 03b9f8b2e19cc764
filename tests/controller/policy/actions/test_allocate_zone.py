"""Allocate with required inter-pod (anti-)affinity over a zone: the pods of one gang share a
statement, and each sees where the earlier ones were placed in its zone
(controller/policy/plugins/predicates/podaffinity.py reads the session's view)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.policy.engine import run_cycle
from controller.policy.loader import load_config
from tests.builders import at, build_node, build_pod, build_podgroup, watch
from tests.controller.policy.framework.scenario import binds, trigger, world_of

JSON = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
CONF: JSON = {
    "actions": "allocate",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}]},
    ],
}
#: node -> zone (u1 has no zone label)
ZONES = {"a1": "a", "a2": "a", "b1": "b", "u1": ""}


def required(kind: str, app: str) -> JSON:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": ZONE}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def with_affinity(pod: JSON, affinity: JSON | None) -> JSON:
    if affinity is not None:
        pod["spec"]["affinity"] = affinity
    return pod


def gang(n: int, affinity: JSON | None, app: str = "web") -> list[JSON]:
    return [
        with_affinity(
            build_pod("ns", f"g-{i}", phase="Pending", group="g", labels={"app": app}), affinity
        )
        for i in range(n)
    ]


@dataclass
class Case:
    name: str
    pods: list[JSON]
    #: pod -> zone it lands in ("" = a node without the label); absent = not bound
    zones: dict[str, str]
    min_member: int = 2
    nodes: list[str] = field(default_factory=lambda: sorted(ZONES))

    def events(self) -> list[Any]:
        out = [
            watch("nodes", build_node(n, labels={ZONE: ZONES[n]} if ZONES[n] else {}))
            for n in self.nodes
        ]
        out.append(watch("podgroups", build_podgroup("ns", "g", min_member=self.min_member)))
        return out + [watch("pods", p) for p in self.pods]


CASES = [
    Case(
        "gang-anti-affinity-spreads-over-zones",
        gang(2, required("podAntiAffinity", "web")),
        {"ns/g-0": "a", "ns/g-1": "b"},
    ),
    Case(
        "gang-anti-affinity-third-pod-has-no-zone-left",
        gang(3, required("podAntiAffinity", "web")),
        {},
        min_member=3,
        nodes=["a1", "a2", "b1"],
    ),
    Case(
        "gang-affinity-keeps-the-second-pod-in-the-first-pod-s-zone",
        gang(2, required("podAffinity", "web")),
        {"ns/g-0": "a", "ns/g-1": "a"},
        nodes=["a1", "b1"],
    ),
    Case(
        "existing-pod-anti-affinity-keeps-the-gang-out-of-its-zone",
        [
            with_affinity(
                build_pod("ns", "db", node="a2", labels={"app": "db"}),
                required("podAntiAffinity", "web"),
            ),
            *gang(2, None),
        ],
        {"ns/g-0": "b", "ns/g-1": "b"},
        nodes=["a1", "a2", "b1"],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_zone_affinity_in_one_statement(case: Case) -> None:
    decisions = run_cycle(world_of(case.events()), trigger(at(1)), load_config(CONF))
    assert {pod: ZONES[node] for pod, node in binds(decisions).items()} == case.zones
