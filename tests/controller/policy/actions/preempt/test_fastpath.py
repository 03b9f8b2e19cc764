"""preempt's shortcuts change no answer: the task order as a key equals the pairwise
comparison wherever it is used, and seeded random clusters get byte-identical decisions
with and without the shortcuts (normal and topology-aware)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta
from functools import cmp_to_key
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.policy.actions import preempt as preempt_mod
from controller.policy.actions.preempt import PreemptAction
from controller.policy.actions.preempt.fastpath import TaskRank
from controller.policy.builtins import BUILTIN_ACTIONS
from controller.policy.engine import build_cycle, run_cycle
from controller.policy.framework.ordering import job_fallback, task_fallback
from controller.policy.framework.plugin import ActionSpec
from controller.policy.framework.session import open_session
from controller.policy.loader import load_config
from controller.policy.plugins import priority
from projections.model import JobInfo, TaskInfo
from tests.builders import T0, at
from tests.controller.policy.actions.preempt.cases import (
    UPSTREAM_TIERS,
    Case,
    config,
    entry,
    group,
    node,
    pod,
    queue,
)
from tests.controller.policy.framework.scenario import job, task, trigger, world_of

TASK = st.tuples(
    st.integers(0, 3),  # priority
    st.integers(0, 4),  # creation minute
    st.integers(0, 5),  # pod index
    st.sampled_from(["a", "b"]),  # uid prefix
)


def _task(i: int, spec: tuple[int, int, int, str], *, indexed: bool) -> TaskInfo:
    prio, minute, index, uid = spec
    name = f"job-t-{index}-x{i}" if not indexed else f"job-x{i}-{index}"
    made = task(name, job="ns/job", priority=prio, created=T0 + timedelta(minutes=minute))
    return replace(made, uid=f"{uid}{i}")


def _reference(left: TaskInfo, right: TaskInfo) -> int:
    """The session's task order when priority is the only task_order plugin."""
    return priority.task_order(left, right) or task_fallback(left, right)


@settings(max_examples=150, deadline=None)
@given(st.lists(TASK, min_size=1, max_size=12), st.booleans(), st.booleans())
def test_rank_equals_the_pairwise_order(
    specs: list[tuple[int, int, int, str]], indexed: bool, reverse: bool
) -> None:
    tasks = [_task(i, spec, indexed=indexed) for i, spec in enumerate(specs)]
    rank = TaskRank([lambda t: -t.priority])
    fast = rank.sort(tasks, reverse=reverse)
    assert fast is not None
    slow = sorted(tasks, key=cmp_to_key(_reference), reverse=reverse)
    assert [t.key for t in fast] == [t.key for t in slow]


def test_rank_declines_a_mix_of_indexed_and_plain_names() -> None:
    # the fallback is not transitive on such a mix: a-b-2 < x < a-b-1 < a-b-2
    tasks = [
        task("a-b-2", created=T0),
        task("x", created=T0 + timedelta(minutes=1)),
        task("a-b-1", created=T0 + timedelta(minutes=2)),
    ]
    a2, x, a1 = tasks
    assert task_fallback(a2, x) < 0 and task_fallback(x, a1) < 0 and task_fallback(a1, a2) < 0
    assert TaskRank([]).sort(tasks) is None


class _View:
    @staticmethod
    def job_version(job: JobInfo) -> tuple[int, int]:
        return id(job), 0


class _Chain:
    view = _View()

    def __init__(self, fns: list[Any]) -> None:
        self.fns = fns

    def chain(self, point: str) -> list[list[tuple[str, Any]]]:
        assert point in ("task_order", "job_order")
        if point == "job_order":
            return []
        return [[(f"p{i}", fn) for i, fn in enumerate(self.fns)]]


@pytest.mark.parametrize(
    ("fns", "known"),
    [
        ([], True),
        ([priority.task_order], True),
        ([priority.task_order, lambda a, b: 0], False),
    ],
    ids=["no-plugin", "priority", "unknown-plugin"],
)
def test_rank_only_for_known_chains(fns: list[Any], known: bool) -> None:
    assert (TaskRank.of(_Chain(fns)) is not None) is known  # type: ignore[arg-type]


JOB = st.tuples(
    st.integers(0, 3),  # priority
    st.integers(0, 4),  # creation minute
    st.sampled_from(["a", "b"]),  # uid prefix
    st.booleans(),  # ready (gang's order)
)


@settings(max_examples=150, deadline=None)
@given(st.lists(JOB, min_size=1, max_size=10))
def test_job_key_equals_the_pairwise_job_order(specs: list[tuple[int, int, str, bool]]) -> None:
    jobs = [
        replace(
            job(f"ns/j{i}", priority=prio, created=T0 + timedelta(minutes=minute)),
            uid=f"{uid}{i}",
        )
        for i, (prio, minute, uid, _) in enumerate(specs)
    ]
    ready = {job.id: spec[3] for job, spec in zip(jobs, specs, strict=True)}

    def gang_order(left: JobInfo, right: JobInfo) -> int:
        lr, rr = ready[left.id], ready[right.id]
        return 0 if lr == rr else (1 if lr else -1)

    def pairwise(left: JobInfo, right: JobInfo) -> int:
        return (
            priority.job_order(left, right) or gang_order(left, right) or job_fallback(left, right)
        )

    rank = TaskRank([], [lambda job: -job.priority, lambda job: ready[job.id]])
    fast = sorted(jobs, key=rank.job_key)
    slow = sorted(jobs, key=cmp_to_key(pairwise))
    assert [j.id for j in fast] == [j.id for j in slow]


# ---- seeded comparison of the whole action, shortcuts on and off --------------------


def random_cluster(seed: int) -> Case:
    """A full-ish cluster: mixed names (with and without pod index), priorities, queues,
    preemptable marks, several pending preemptors in gangs and alone."""
    rng = random.Random(seed)
    nodes = rng.randint(2, 5)
    groups = [
        group(
            f"j{j}",
            rng.randint(0, 2),
            rng.choice(["low-priority"] * 4 + ["high-priority"]),
            queue=rng.choice(["q1", "q1", "q2"]),
        )
        for j in range(6)
    ]
    pods = []
    for i in range(rng.randint(12, 36)):
        job = rng.randrange(6)
        name = f"r-j{job}-{rng.randint(0, 9)}{i}" if rng.random() < 0.6 else f"r{i}"
        pods.append(
            pod(
                name,
                f"j{job}",
                node=f"n{rng.randrange(nodes)}",
                cpu=str(rng.randint(1, 2)),
                memory=f"{rng.randint(1, 2)}G",
                preemptable=rng.choice(["true", "false", "true"]),
                priority=rng.randint(0, 3),
                started=T0 + timedelta(minutes=rng.randint(0, 20)),
            )
        )
    for k in range(rng.randint(2, 5)):
        gang = f"hi{k}"
        groups.append(
            group(gang, rng.randint(1, 2), "high-priority", queue=rng.choice(["q1", "q1", "q2"]))
        )
        for m in range(rng.randint(1, 2)):
            cpu = rng.randint(2, 6)
            pods.append(pod(f"p-{gang}-{m}", gang, cpu=str(cpu), memory=f"{cpu}G", priority=50 + k))
    return Case(
        f"seed-{seed}",
        queues=[queue("q1"), queue("q2")],
        groups=groups,
        nodes=[node(f"n{i}", "12", "12G", pods="40") for i in range(nodes)],
        pods=pods,
        tiers=UPSTREAM_TIERS,
    )


def _decide(case: Case, *, fast: bool, topology: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    spec = ActionSpec(
        preempt_mod.NAME,
        preempt_mod.parse_args,
        lambda args: PreemptAction(args, fast=fast),
    )
    with monkeypatch.context() as patch:
        patch.setitem(BUILTIN_ACTIONS, preempt_mod.NAME, spec)
        conf = load_config(config(tiers=case.tiers, topology=topology))
        events = run_cycle(world_of(case.events()), trigger(at(30)), conf)
    return "\n".join(repr(event) for event in events)


@pytest.mark.parametrize("topology", [False, True], ids=["normal", "topology-aware"])
@pytest.mark.parametrize("seed", range(40), ids=lambda s: f"seed{s}")
def test_shortcuts_decide_byte_identically(
    seed: int, topology: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = random_cluster(seed)
    fast = _decide(case, fast=True, topology=topology, monkeypatch=monkeypatch)
    slow = _decide(case, fast=False, topology=topology, monkeypatch=monkeypatch)
    assert fast == slow


# ---- the job keys memoised per job version ----------------------------------------


def test_job_key_follows_the_session_changing_a_job() -> None:
    """The memoised key of a job is its key now: evicting one of a gang's two tasks makes
    it not ready (gang's job order part; the job is cloned), discarding the eviction makes
    it ready again (the same clone, a new version). A fresh rank is the reference."""
    case = Case(
        "gang-readiness",
        queues=[queue("q1")],
        groups=[group("a", 2)],
        nodes=[node("n0", "4", "4G")],
        pods=[
            pod("a-0", "a", node="n0", preemptable="true"),
            pod("a-1", "a", node="n0", preemptable="true"),
        ],
        tiers=[
            {
                "plugins": [
                    entry("priority", "enableTaskOrder", "enableJobOrder"),
                    entry("gang", "enableJobOrder"),
                ]
            }
        ],
    )
    conf = load_config(config(tiers=case.tiers, topology=True))
    built = build_cycle(conf)
    ssn = open_session(
        world_of(case.events()),
        trigger(at(30)),
        tiers=conf.tiers,
        plugins=built.plugins,
        ctx=built.ctx,
    )
    rank = TaskRank.of(ssn)
    assert rank is not None and rank.job_parts is not None

    def now() -> tuple[Any, ...]:
        job = ssn.jobs["c1/a"]
        fresh = TaskRank.of(ssn)
        assert fresh is not None
        key = rank.job_key(job)
        assert key == fresh.job_key(job)
        return key

    ready = now()
    stmt = ssn.statement()
    stmt.evict(ssn.tasks["c1/a-0"], "preempt", source="test", evidence={})
    assert now() != ready
    stmt.discard()
    assert now() == ready
