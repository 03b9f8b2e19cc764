"""The preempt action as scenario tables: Volcano's ``preempt_test.go`` cases translated,
in normal and in topology-aware mode, plus tide's own (BestEffort, preemptionPolicy,
gang jobs that cannot become pipelined, phase 2 within a job)."""

from __future__ import annotations

import pytest

from controller.policy.engine import build_cycle
from controller.policy.framework.session import open_session
from controller.policy.loader import load_config
from projections.model import TaskStatus
from tests.builders import at
from tests.controller.policy.actions.preempt.cases import (
    HIGH,
    UPSTREAM_TIERS,
    Case,
    config,
    entry,
    group,
    node,
    pod,
    queue,
)
from tests.controller.policy.framework.scenario import trigger, world_of

CASES = [
    Case(
        "do-not-preempt-if-there-are-enough-idle-resources",
        groups=[group("pg1", 3)],
        nodes=[node("n1", "10", "10G")],
        pods=[
            pod("preemptee1", "pg1", node="n1"),
            pod("preemptee2", "pg1", node="n1"),
            pod("preemptor1", "pg1"),
        ],
        # normal mode pipelines onto the idle room; topology-aware needs a victim
        pipelined={"c1/preemptor1": "n1"},
        topo_pipelined={},
    ),
    Case(
        "do-not-preempt-if-job-is-pipelined",
        groups=[group("pg1", 1), group("pg2", 1)],
        nodes=[node("n1", "3", "3G")],
        pods=[
            pod("preemptee1", "pg1", node="n1"),
            pod("preemptee2", "pg1", node="n1"),
            pod("preemptee3", "pg2", node="n1"),
            pod("preemptor2", "pg2"),
        ],
    ),
    Case(
        "preempt-one-task-of-different-job-to-fit-both-jobs-on-one-node",
        groups=[group("pg1", 1, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "2", "2G")],
        pods=[
            pod("preemptee1", "pg1", node="n1", preemptable="true"),
            pod("preemptee2", "pg1", node="n1", preemptable="false"),
            pod("preemptor1", "pg2"),
            pod("preemptor2", "pg2"),
        ],
        evicted=["c1/preemptee1"],
        pipelined={"c1/preemptor1": "n1"},
    ),
    Case(
        "preempt-enough-tasks-to-fit-large-task-of-different-job",
        groups=[group("pg1", 1, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "6", "6G")],
        pods=[
            pod("preemptee1", "pg1", node="n1", preemptable="true"),
            pod("preemptee2", "pg1", node="n1", preemptable="true"),
            pod("preemptee3", "pg1", node="n1", preemptable="false"),
            pod("preemptor1", "pg2", cpu="5", memory="5G"),
        ],
        evicted=["c1/preemptee1", "c1/preemptee2"],
        pipelined={"c1/preemptor1": "n1"},
    ),
    Case(
        "preempt-low-priority-job-in-same-queue",
        queues=[queue("q1", "4", "4G")],
        groups=[group("pg1", 0, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "12", "12G")],
        pods=[
            pod("preemptee1", "pg1", node="n1", cpu="3", memory="3G", preemptable="true"),
            pod("preemptor1", "pg2", cpu="3", memory="3G"),
        ],
        evicted=["c1/preemptee1"],
        pipelined={"c1/preemptor1": "n1"},
    ),
    Case(
        "allocatable-and-enough-resource-do-not-preempt",
        queues=[queue("q1", "6", "6G")],
        groups=[group("pg1", 1, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "12", "12G")],
        pods=[
            pod("preemptee1", "pg1", node="n1", cpu="3", memory="3G", preemptable="true"),
            pod("preemptor1", "pg2", cpu="3", memory="3G"),
        ],
        pipelined={"c1/preemptor1": "n1"},
        topo_pipelined={},
    ),
    Case(
        "not-pod-with-preemptable-false-or-higher-priority",
        queues=[queue("q1", "3", "3G")],
        groups=[group("pg1", 1, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "12", "12G")],
        pods=[
            pod("preemptee1", "pg1", node="n1", preemptable="false"),
            pod("preemptee2", "pg1", node="n1", preemptable="true"),
            pod("preemptee3", "pg1", node="n1", preemptable="true", priority=HIGH),
            pod("preemptor1", "pg2"),
        ],
        evicted=["c1/preemptee2"],
        pipelined={"c1/preemptor1": "n1"},
    ),
    Case(
        "non-best-effort-preemptor-evicts-best-effort",
        queues=[queue("q1", "6", "6G")],
        groups=[group("pg1", 0, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "12", "12G", pods="1")],
        pods=[
            pod("preemptee1", "pg1", node="n1", cpu=None, memory=None, preemptable="true"),
            pod("preemptor1", "pg2", cpu="3", memory="3G"),
        ],
        evicted=["c1/preemptee1"],
        pipelined={"c1/preemptor1": "n1"},
    ),
    Case(
        "best-effort-preemptor-evicts-best-effort",
        queues=[queue("q1", "6", "6G")],
        groups=[group("pg1", 0, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "12", "12G", pods="1")],
        pods=[
            pod("preemptee1", "pg1", node="n1", cpu=None, memory=None, preemptable="true"),
            pod("preemptor1", "pg2", cpu=None, memory=None),
        ],
        evicted=["c1/preemptee1"],
        pipelined={"c1/preemptor1": "n1"},
    ),
    # ---- tide's own -------------------------------------------------------------------
    Case(
        "best-effort-preemptor-never-evicts-a-non-best-effort-task",
        groups=[group("pg1", 0, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "1", "1G", pods="1")],
        pods=[
            pod("preemptee1", "pg1", node="n1", preemptable="true"),
            pod("preemptor1", "pg2", cpu=None, memory=None),
        ],
    ),
    Case(
        "preemption-policy-never",
        groups=[group("pg1", 0, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "1", "1G")],
        pods=[
            pod("preemptee1", "pg1", node="n1", preemptable="true"),
            pod("preemptor1", "pg2"),
        ],
    ),
    Case(
        "gang-job-that-cannot-become-pipelined-evicts-nothing",
        groups=[group("pg1", 1, "low-priority"), group("pg2", 3, "high-priority")],
        nodes=[node("n1", "2", "2G")],
        pods=[
            pod("preemptee1", "pg1", node="n1", preemptable="true"),
            pod("preemptee2", "pg1", node="n1", preemptable="true"),
            pod("preemptor1", "pg2"),
            pod("preemptor2", "pg2"),
            pod("preemptor3", "pg2"),
        ],
    ),
    Case(
        "victims-only-in-the-preemptors-queue",
        queues=[queue("q1"), queue("q2")],
        groups=[group("pg1", 0, "low-priority", queue="q2"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "1", "1G")],
        pods=[
            pod("preemptee1", "pg1", node="n1", preemptable="true"),
            pod("preemptor1", "pg2"),
        ],
    ),
    Case(
        "a-preemption-that-clears-an-anti-affinity-conflict",
        groups=[group("pg1", 0, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "8", "8G")],
        pods=[
            pod("db", "pg1", node="n1", preemptable="true", labels={"app": "db"}),
            pod("web", "pg1", node="n1", preemptable="true", labels={"app": "web"}),
            pod("preemptor1", "pg2"),
        ],
        # normal mode evicts in victim order (web first) until the predicates pass; the
        # topology-aware reprieve gives web back
        evicted=["c1/db", "c1/web"],
        pipelined={"c1/preemptor1": "n1"},
        topo_evicted=["c1/db"],
        tiers=[
            {"plugins": [*UPSTREAM_TIERS[0]["plugins"], entry("predicates", "enablePredicate")]}
        ],
    ),
    Case(
        "phase-2-a-higher-priority-task-evicts-one-of-its-own-job",
        groups=[group("pg1", 1)],
        nodes=[node("n1", "2", "2G")],
        pods=[
            pod("worker-a", "pg1", node="n1", priority=1, preemptable="true"),
            pod("worker-b", "pg1", node="n1", priority=5, preemptable="true"),
            pod("master", "pg1", priority=50),
        ],
        evicted=["c1/worker-a"],
        pipelined={"c1/master": "n1"},
        # gang's starving function (ready < minMember) would say the job is not
        # starving; with priority's alone (ready + waiting < tasks) it is
        tiers=[
            {
                "plugins": [
                    entry("gang", "enablePreemptable", "enableJobPipelined"),
                    entry(
                        "priority",
                        "enableTaskOrder",
                        "enableJobOrder",
                        "enablePreemptable",
                        "enableJobStarving",
                    ),
                ]
            }
        ],
    ),
]

# the preemptionPolicy case sets the field on the preemptor's spec
_NEVER = next(c for c in CASES if c.name == "preemption-policy-never")
_NEVER.pods[1]["spec"]["preemptionPolicy"] = "Never"
_ANTI = next(c for c in CASES if c.name == "a-preemption-that-clears-an-anti-affinity-conflict")
_ANTI.pods[2]["spec"]["affinity"] = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "db"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


def outcome(case: Case, *, topology: bool) -> tuple[list[str], dict[str, str]]:
    conf = load_config(config(topology=topology, tiers=case.tiers))
    built = build_cycle(conf)
    world = world_of(case.events())
    ssn = open_session(
        world, trigger(at(1)), tiers=conf.tiers, plugins=built.plugins, ctx=built.ctx
    )
    for action in built.actions:
        action.execute(ssn)
    evicted = sorted(
        f"{e.data['namespace']}/{e.data['pod']}"
        for e in ssn.decisions
        if e.type == "decision.evict"
    )
    pipelined = {
        key: ssn.tasks[key].node_name
        for key in ssn.tasks
        if ssn.tasks[key].status == TaskStatus.PIPELINED
    }
    return evicted, pipelined


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_normal(case: Case) -> None:
    assert outcome(case, topology=False) == (sorted(case.evicted), case.pipelined)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_topology_aware(case: Case) -> None:
    evicted = case.evicted if case.topo_evicted is None else case.topo_evicted
    pipelined = case.pipelined if case.topo_pipelined is None else case.topo_pipelined
    assert outcome(case, topology=True) == (sorted(evicted), pipelined)


def test_the_same_preemptor_without_preemption_policy_never_preempts() -> None:
    case = Case(_NEVER.name, _NEVER.nodes, [dict(p) for p in _NEVER.pods], _NEVER.groups)
    case.pods[1] = {**case.pods[1], "spec": dict(case.pods[1]["spec"])}
    del case.pods[1]["spec"]["preemptionPolicy"]
    assert outcome(case, topology=False) == (["c1/preemptee1"], {"c1/preemptor1": "n1"})


def test_entry_enables_only_what_it_names() -> None:
    e = entry("gang", "enablePreemptable")
    assert e["enablePreemptable"] is True and e["enableJobOrder"] is False
