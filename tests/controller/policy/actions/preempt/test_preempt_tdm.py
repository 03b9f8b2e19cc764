"""TDM's preemptable function in the preempt action: a non-preemptable preemptor evicts
preemptable Running tasks on normal nodes only, within each job's budget, reason
``tdm-preempt``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.policy.engine import run_cycle
from controller.policy.loader import load_config
from tests.builders import at, build_node, build_pod, build_podgroup, watch
from tests.controller.policy.actions.preempt.cases import entry
from tests.controller.policy.framework.scenario import evicts, trigger, world_of

JSON = dict[str, Any]
ZONE = {"volcano.sh/revocable-zone": "rz1"}
CONF = {
    "actions": "preempt",
    "tiers": [
        {
            "plugins": [
                entry(
                    "tdm",
                    "enablePreemptable",
                    "enableJobOrder",
                    "enableJobPipelined",
                    "enableJobStarving",
                    "enablePredicate",
                    **{"tdm.revocable-zone.rz1": "00:00-23:59"},
                ),
                entry("priority", "enableTaskOrder", "enablePreemptable"),
            ]
        }
    ],
}


def victim(name: str, node: str, job: str, *, preemptable: str = "true") -> JSON:
    return build_pod(
        "ns",
        name,
        node=node,
        group=job,
        annotations={"volcano.sh/preemptable": preemptable},
        priority=1,
    )


def preemptor(cpu: str = "1", *, preemptable: str = "false") -> JSON:
    return build_pod(
        "ns",
        "urgent",
        phase="Pending",
        cpu=cpu,
        memory="1Gi",
        priority=100,
        annotations={"volcano.sh/preemptable": preemptable},
    )


@dataclass
class Case:
    name: str
    pods: list[JSON]
    expect: list[str]
    groups: list[str] = field(default_factory=lambda: ["a", "b"])


CASES = [
    Case(
        "normal-node-victim-within-budget",
        [victim("a-0", "n1", "a"), victim("a-1", "n1", "a"), preemptor()],
        ["ns/a-0"],
    ),
    Case(
        "budget-one-per-job-is-not-enough-for-two-cpus",
        [victim("a-0", "n1", "a"), victim("a-1", "n1", "a"), preemptor("2")],
        [],
    ),
    Case(
        "two-jobs-one-each",
        [victim("a-0", "n1", "a"), victim("b-0", "n1", "b"), preemptor("2")],
        ["ns/a-0", "ns/b-0"],
    ),
    Case(
        "never-on-revocable-nodes",
        [victim("b-0", "r1", "b"), victim("b-1", "r1", "b"), preemptor()],
        [],
    ),
    Case(
        "non-preemptable-tasks-are-kept",
        [victim("a-0", "n1", "a", preemptable="false"), preemptor("2")],
        [],
    ),
    Case(
        "a-preemptable-preemptor-gets-nothing-from-tdm",
        [victim("a-0", "n1", "a"), victim("b-0", "n1", "b"), preemptor("2", preemptable="true")],
        [],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_tdm_preempt(case: Case) -> None:
    events = [
        watch("nodes", build_node("n1", cpu="2", memory="8Gi")),
        watch("nodes", build_node("r1", cpu="2", memory="8Gi", labels=ZONE)),
        *[watch("podgroups", build_podgroup("ns", g)) for g in case.groups],
        *[watch("pods", p) for p in case.pods],
    ]
    decisions = run_cycle(world_of(events), trigger(at(1)), load_config(CONF))
    assert sorted(evicts(decisions)) == case.expect
    assert {d.data["reason"] for d in decisions} <= {"tdm-preempt"}
