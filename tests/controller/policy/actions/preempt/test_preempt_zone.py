"""Preempt with required anti-affinity over a zone
(controller/policy/plugins/predicates/podaffinity.py): the
conflicting pod may sit on another node of the candidate's zone, and a victim evicted in
the session stops counting for the next preemptor of the job."""

from __future__ import annotations

from typing import Any

import pytest

from tests.controller.policy.actions.preempt.cases import (
    UPSTREAM_TIERS,
    Case,
    entry,
    group,
    node,
    pod,
)
from tests.controller.policy.actions.preempt.test_preempt_scenarios import outcome

ZONE = "topology.kubernetes.io/zone"
TIERS = [{"plugins": [*UPSTREAM_TIERS[0]["plugins"], entry("predicates", "enablePredicate")]}]


def anti_db(spec_pod: dict[str, Any], key: str = ZONE) -> dict[str, Any]:
    spec_pod["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": key}
            ]
        }
    }
    return spec_pod


def zone(name: str, cpu: str, value: str) -> dict[str, Any]:
    return node(name, cpu, f"{cpu}G", labels={ZONE: value})


CASES = [
    Case(
        # p-big evicts db on n1; p-anti then fits n2, whose zone held db on n1 only
        "an-eviction-on-another-node-clears-the-zone-for-the-next-preemptor",
        groups=[group("pg1", 0, "low-priority"), group("pg2", 2, "high-priority")],
        nodes=[zone("n1", "2", "a"), zone("n2", "1", "a")],
        pods=[
            pod(
                "db",
                "pg1",
                node="n1",
                cpu="2",
                memory="2G",
                preemptable="true",
                labels={"app": "db"},
            ),
            pod("p-big", "pg2", cpu="2", memory="2G", priority=50),
            anti_db(pod("p-anti", "pg2", priority=5)),
        ],
        evicted=["c1/db"],
        pipelined={"c1/p-big": "n1", "c1/p-anti": "n2"},
        # topology-aware mode takes only nodes with victims as candidates: p-anti has none
        # on n2, the gang of two is not pipelined and the statement is discarded
        topo_evicted=[],
        topo_pipelined={},
        tiers=TIERS,
    ),
    Case(
        # n2 has room, but db on n1 (same zone) refuses it; n3 (other zone) is full of a
        # non-preemptable pod: evicting db on n1 is the way
        "a-zone-conflict-from-another-node-is-cleared-by-evicting-on-that-node",
        groups=[group("pg1", 0, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[zone("n1", "1", "a"), zone("n2", "1", "a"), zone("n3", "1", "b")],
        pods=[
            pod("db", "pg1", node="n1", preemptable="true", labels={"app": "db"}),
            pod("keep", "pg1", node="n3", preemptable="false"),
            anti_db(pod("p-anti", "pg2")),
        ],
        evicted=["c1/db"],
        pipelined={"c1/p-anti": "n1"},
        tiers=TIERS,
    ),
]


@pytest.mark.parametrize("topology", [False, True], ids=["normal", "topology-aware"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_zone_anti_affinity_preemption(case: Case, topology: bool) -> None:
    evicted = case.evicted if not topology or case.topo_evicted is None else case.topo_evicted
    pipelined = (
        case.pipelined if not topology or case.topo_pipelined is None else case.topo_pipelined
    )
    assert outcome(case, topology=topology) == (sorted(evicted), pipelined)
