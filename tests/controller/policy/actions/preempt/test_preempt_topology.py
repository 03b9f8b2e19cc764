"""Topology-aware preemption: the candidate count, the deterministic offset, the four
scoring levels, the seed's "no fit, no candidate" rule, and properties over random
clusters (phase-1 victims, worker-count and hash-seed independence, minimal victims)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.policy.actions.preempt.args import PreemptArgs, parse_args
from controller.policy.actions.preempt.topology import Candidate, offset_of, select_candidate
from controller.policy.engine import run_cycle
from controller.policy.framework.errors import ConfigError
from controller.policy.loader import load_config
from projections.model import TaskStatus
from streams.events import Event
from tests.builders import T0, at
from tests.controller.policy.actions.preempt.cases import (
    Case,
    config,
    entry,
    group,
    node,
    pod,
    queue,
)
from tests.controller.policy.actions.preempt.test_preempt_scenarios import outcome
from tests.controller.policy.framework.scenario import task, trigger, world_of

ROOT = Path(__file__).resolve().parents[5]


@pytest.mark.parametrize(
    ("n", "want"),
    [(0, 0), (1, 1), (19, 1), (20, 2), (25, 2), (1000, 100), (5000, 100)],
)
def test_num_candidates_defaults(n: int, want: int) -> None:
    assert PreemptArgs().num_candidates(n) == want


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({"topologyAwarePreemptWorkerNum": "4"}, "integer"),
        ({"topologyAwarePreemptWorkerNum": 2.5}, "integer"),
        ({"topologyAwarePreemptWorkerNum": True}, "integer"),
        ({"topologyAwarePreemptWorkerNum": 0}, "at least 1"),
        ({"enableTopologyAwarePreemption": "yes"}, "true or false"),
        ({"minCandidateNodesAbsolute": 5, "maxCandidateNodesAbsolute": 2}, "not be below"),
    ],
    ids=["string", "float", "bool", "zero", "bad-bool", "max-below-min"],
)
def test_bad_arguments_name_the_key(raw: dict[str, Any], problem: str) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        parse_args(raw)
    assert str(info.value).startswith("preempt.")


def test_bool_strings_are_accepted() -> None:
    args = parse_args(
        {"enableTopologyAwarePreemption": "True", "predicateErrorCacheEnable": "false"}
    )
    assert args.topology_aware and not args.predicate_error_cache


def test_offset_is_a_pure_function_of_preemptor_and_trigger() -> None:
    t = task("p")
    offsets = {offset_of(t, f"trigger-{i}", 50) for i in range(40)}
    assert offset_of(t, "trigger-1", 50) == offset_of(task("p"), "trigger-1", 50)
    assert all(0 <= o < 50 for o in offsets) and len(offsets) > 1


def _victim(name: str, priority: int, started_min: float = 0) -> Any:
    v = task(name, status=TaskStatus.RUNNING, node="n")
    v.pod_priority = priority
    v.start_time = T0 + timedelta(minutes=started_min)
    return v


@dataclass
class Pick:
    name: str
    candidates: dict[str, list[tuple[int, float]]]  # node -> [(priority, start minute)]
    best: str


PICKS = [
    Pick("lowest-highest-priority", {"a": [(10, 0)], "b": [(5, 0), (5, 0)]}, "b"),
    Pick("lowest-sum", {"a": [(5, 0), (5, 0)], "b": [(5, 0), (1, 0)]}, "b"),
    Pick("fewest-victims", {"a": [(5, 0), (0, 0)], "b": [(5, 0)]}, "b"),
    Pick(
        "fewest-victims-even-with-negative-priorities",
        {"a": [(-3, 0), (-3, 0)], "b": [(-3, 0)]},
        "b",
    ),
    Pick("latest-start-of-highest", {"a": [(5, 1)], "b": [(5, 9)]}, "b"),
    Pick("earliest-among-the-highest-counts", {"a": [(5, 8), (5, 1)], "b": [(5, 2)]}, "b"),
    Pick("full-tie-lowest-name", {"b": [(5, 3)], "a": [(5, 3)]}, "a"),
]


@pytest.mark.parametrize("pick", PICKS, ids=lambda p: p.name)
def test_four_levels_then_the_lowest_name(pick: Pick) -> None:
    candidates = [
        Candidate(name, tuple(_victim(f"{name}{i}", p, s) for i, (p, s) in enumerate(vs)))
        for name, vs in pick.candidates.items()
    ]
    best = select_candidate(candidates, T0 + timedelta(hours=1))
    assert best is not None and best.node == pick.best
    assert select_candidate([], T0) is None


def test_no_fit_after_every_victim_is_no_candidate() -> None:
    """Queue capability 2 cpus below the preemptor's 3: evicting every victim would not
    let it in, so nothing is evicted (upstream's dry run would evict)."""
    case = Case(
        "capability-below-request",
        queues=[queue("q1", "2", "2G")],
        groups=[group("pg1", 0, "low-priority"), group("pg2", 1, "high-priority")],
        nodes=[node("n1", "4", "4G")],
        pods=[
            pod("v1", "pg1", node="n1", preemptable="true"),
            pod("v2", "pg1", node="n1", preemptable="true"),
            pod("v3", "pg1", node="n1", preemptable="true"),
            pod("v4", "pg1", node="n1", preemptable="true"),
            pod("preemptor1", "pg2", cpu="3", memory="3G"),
        ],
    )
    assert outcome(case, topology=True) == ([], {})
    assert outcome(case, topology=False) == ([], {})


# ---- properties over random clusters ------------------------------------------------

SIMPLE_TIERS = [
    {
        "plugins": [
            entry(
                "priority",
                "enableTaskOrder",
                "enableJobOrder",
                "enablePreemptable",
                "enableJobStarving",
            ),
            entry("conformance", "enablePreemptable"),
        ]
    }
]

running = st.tuples(
    st.integers(0, 5),  # node index
    st.integers(1, 3),  # cpus
    st.sampled_from(["low-priority", "high-priority"]),  # the job's class
    st.booleans(),  # preemptable
    st.sampled_from(["q1", "q2"]),
    st.integers(0, 3),  # pod spec.priority
)


def random_case(nodes: int, pods: list[tuple[int, int, str, bool, str, int]], want: int) -> Case:
    groups = []
    placed = []
    for i, (n, cpu, klass, preemptable, q, prio) in enumerate(pods):
        groups.append(group(f"j{i}", 0, klass, queue=q))
        placed.append(
            pod(
                f"r{i}",
                f"j{i}",
                node=f"n{n % nodes}",
                cpu=str(cpu),
                memory=f"{cpu}G",
                preemptable="true" if preemptable else "false",
                priority=prio,
                started=T0 + timedelta(minutes=i),
            )
        )
    groups.append(group("hi", 1, "high-priority"))
    placed.append(pod("preemptor", "hi", cpu=str(want), memory=f"{want}G"))
    return Case(
        "random",
        queues=[queue("q1"), queue("q2")],
        groups=groups,
        nodes=[node(f"n{i}", "4", "4G") for i in range(nodes)],
        pods=placed,
        tiers=SIMPLE_TIERS,
    )


def decide(case: Case, **args: Any) -> list[Event]:
    conf = load_config(config(tiers=case.tiers, **args))
    return run_cycle(world_of(case.events()), trigger(at(1)), conf)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(1, 6),
    pods=st.lists(running, min_size=1, max_size=14),
    want=st.integers(1, 4),
    topology=st.booleans(),
)
def test_phase_one_victims_are_preemptable_same_queue_other_job(
    nodes: int, pods: list[Any], want: int, topology: bool
) -> None:
    case = random_case(nodes, pods, want)
    by_name = {p["metadata"]["name"]: p for p in case.pods}
    for event in decide(case, topology=topology):
        if event.type != "decision.evict":
            continue
        victim = by_name[event.data["pod"]]
        i = int(victim["metadata"]["name"][1:])
        _, _, klass, preemptable, q, _ = pods[i]
        assert preemptable and q == "q1" and klass == "low-priority"
        assert event.data["evidence"]["phase"] == "inter-job"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(1, 6),
    pods=st.lists(running, min_size=1, max_size=14),
    want=st.integers(1, 4),
    percentage=st.integers(0, 100),
)
def test_topology_answer_does_not_depend_on_the_worker_count(
    nodes: int, pods: list[Any], want: int, percentage: int
) -> None:
    case = random_case(nodes, pods, want)
    common = {"topology": True, "minCandidateNodesPercentage": percentage}
    one = decide(case, topologyAwarePreemptWorkerNum=1, **common)
    many = decide(case, topologyAwarePreemptWorkerNum=16, **common)
    assert [e.id for e in one] == [e.id for e in many]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.integers(1, 6),
    pods=st.lists(running, min_size=1, max_size=14),
    want=st.integers(1, 4),
)
def test_topology_victims_are_minimal(nodes: int, pods: list[Any], want: int) -> None:
    """Keeping any one victim would leave the preemptor without room on its node."""
    case = random_case(nodes, pods, want)
    evictions = [e for e in decide(case, topology=True) if e.type == "decision.evict"]
    if not evictions:
        return
    node_name = evictions[0].data["node"]
    assert {e.data["node"] for e in evictions} == {node_name}
    used = sum(pods[i][1] for i in range(len(pods)) if f"n{pods[i][0] % nodes}" == node_name)
    freed = [pods[int(e.data["pod"][1:])][1] for e in evictions]
    assert 4 - used + sum(freed) >= want
    for cpu in freed:
        assert 4 - used + sum(freed) - cpu < want


SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from tests.controller.policy.actions.preempt.test_preempt_topology import random_case, decide
pods = [(i % 5, 1 + i % 3, ["low-priority", "high-priority"][i % 2 == 0 and i % 4 == 0],
         i % 3 != 0, ["q1", "q2"][i % 5 == 4], i % 4) for i in range(24)]
case = random_case(5, pods, 3)
for topology in (False, True):
    print([e.id for e in decide(case, topology=topology)])
"""


def test_same_answer_under_any_hash_seed() -> None:
    outputs = []
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT.format(root=str(ROOT))],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    assert outputs[0].count("[") == 2 and outputs[0] != "[]\n[]\n"
