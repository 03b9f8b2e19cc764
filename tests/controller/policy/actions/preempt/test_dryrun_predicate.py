"""The topology-aware dry run skips the scratch copy and its predicate where the predicate
must pass (:meth:`controller.policy.actions.preempt.dryrun.LightDryRun.predicate_free`): seeded
random clusters with hostname anti-affinity (victims against preemptors and preemptors
against victims), preemptors that need a victim's company (required pod affinity) and
nodes at their pod limit get byte-identical decisions with and without the shortcuts,
and a skip that ignores the predicate's answer changes decisions."""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest

from controller.policy.actions.preempt import dryrun
from controller.policy.actions.preempt.dryrun import LightDryRun
from projections.model import NodeInfo, TaskInfo
from tests.builders import T0
from tests.controller.policy.actions.preempt.cases import (
    UPSTREAM_TIERS,
    Case,
    entry,
    group,
    node,
    pod,
    queue,
)
from tests.controller.policy.actions.preempt.test_fastpath import _decide

TIERS = [{"plugins": [*UPSTREAM_TIERS[0]["plugins"], entry("predicates", "enablePredicate")]}]
HOSTNAME = "kubernetes.io/hostname"


def _terms(kind: str, app: str) -> dict[str, Any]:
    return {
        kind: {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOSTNAME}
            ]
        }
    }


def affinity_cluster(seed: int) -> Case:
    """Full nodes of labelled pods (app a / b / c); some running pods refuse company of
    app p (the preemptors' label), some preemptors refuse app b or need app a beside
    them; some nodes hold as many pods as they allow."""
    rng = random.Random(seed)
    nodes = rng.randint(2, 4)
    groups = [
        group(f"j{j}", 1, rng.choice(["low-priority"] * 3 + ["high-priority"]), queue="q1")
        for j in range(5)
    ]
    per_node = [rng.randint(3, 6) for _ in range(nodes)]
    limits = [str(count if rng.random() < 0.25 else 40) for count in per_node]
    pods = []
    i = 0
    for n, count in enumerate(per_node):
        for _ in range(count):
            job = rng.randrange(5)
            made = pod(
                f"r-j{job}-{i}",
                f"j{job}",
                node=f"n{n}",
                cpu=str(rng.randint(1, 2)),
                memory="1G",
                preemptable=rng.choice(["true", "true", "false"]),
                priority=rng.randint(0, 3),
                started=T0 + timedelta(minutes=rng.randint(0, 20)),
                labels={"app": rng.choice("abc")},
            )
            if rng.random() < 0.15:
                made["spec"]["affinity"] = _terms("podAntiAffinity", "p")
            pods.append(made)
            i += 1
    for k in range(rng.randint(2, 4)):
        gang = f"hi{k}"
        groups.append(group(gang, 1, "high-priority", queue="q1"))
        cpu = rng.randint(2, 4)
        made = pod(
            f"p-{gang}-0", gang, cpu=str(cpu), memory="1G", priority=50 + k, labels={"app": "p"}
        )
        roll = rng.random()
        if roll < 0.25:
            made["spec"]["affinity"] = _terms("podAntiAffinity", "b")
        elif roll < 0.5:
            made["spec"]["affinity"] = _terms("podAffinity", "a")
        pods.append(made)
    return Case(
        f"affinity-{seed}",
        queues=[queue("q1")],
        groups=groups,
        nodes=[node(f"n{n}", "8", "16G", pods=limits[n]) for n in range(nodes)],
        pods=pods,
        tiers=TIERS,
    )


SEEDS = range(60)


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"seed{s}")
def test_skipped_predicates_decide_byte_identically(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = affinity_cluster(seed)
    fast = _decide(case, fast=True, topology=True, monkeypatch=monkeypatch)
    slow = _decide(case, fast=False, topology=True, monkeypatch=monkeypatch)
    assert fast == slow


def _differs(monkeypatch: pytest.MonkeyPatch) -> int:
    return sum(
        _decide(affinity_cluster(s), fast=True, topology=True, monkeypatch=monkeypatch)
        != _decide(affinity_cluster(s), fast=False, topology=True, monkeypatch=monkeypatch)
        for s in SEEDS
    )


def test_a_skip_that_ignores_the_memo_changes_decisions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above has teeth: skipping every predicate changes some seeds."""
    monkeypatch.setattr(LightDryRun, "predicate_free", lambda self, task, node: True)
    assert _differs(monkeypatch) > 0


def test_a_skip_that_ignores_required_affinity_changes_decisions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A preemptor that needs a victim beside it must not skip: removing that victim can
    make the predicate fail on the copy although it passed on the node."""
    monkeypatch.setattr(dryrun, "_needs_company", lambda task: False)
    assert _differs(monkeypatch) > 0


def test_the_skip_is_taken_and_declined(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both answers occur on these clusters, else the comparison proves nothing."""
    answers: list[bool] = []
    real = LightDryRun.predicate_free

    def spy(self: LightDryRun, task: TaskInfo, node: NodeInfo) -> bool:
        answer = real(self, task, node)
        answers.append(answer)
        return answer

    monkeypatch.setattr(LightDryRun, "predicate_free", spy)
    for seed in SEEDS:
        _decide(affinity_cluster(seed), fast=True, topology=True, monkeypatch=monkeypatch)
    assert answers.count(True) > 20 and answers.count(False) > 20
