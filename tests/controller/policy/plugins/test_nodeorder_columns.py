"""The column form of the ``nodeorder`` and ``usage`` scores (``add_node_order_fn(batch=)``)
agrees with their per-node functions: on randomised, seeded clusters, allocate's node choice
through the batches (``controller.policy.framework.search.best_node``) equals the plain definition
(``prioritize_nodes`` + ``select_best_node``) for every pending task, while statements
change the nodes between choices."""

from __future__ import annotations

import random
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.policy.framework import nodes as nodes_api
from controller.policy.framework import points as p
from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import nodeorder, usage
from projections.model import TaskInfo, TaskStatus
from projections.usage import UsageState
from tests.builders import T0, node_metrics
from tests.controller.policy.framework.scenario import (
    GI,
    FakeWorld,
    cluster,
    minutes,
    node,
    session,
    task,
    tiers,
)

CTX = PluginContext(ZoneInfo("UTC"), "volcano")
TAINTS = [
    {"key": "a", "value": "1", "effect": "PreferNoSchedule"},
    {"key": "b", "value": "2", "effect": "PreferNoSchedule"},
    {"key": "c", "value": "3", "effect": "NoSchedule"},
]
TOLERATIONS: list[list[dict[str, Any]]] = [
    [],
    [{"key": "a", "operator": "Exists"}],
    [{"key": "b", "operator": "Equal", "value": "2", "effect": "PreferNoSchedule"}],
    [{"operator": "Exists"}],
]


def preferred(rng: random.Random) -> dict[str, Any] | None:
    if rng.random() < 0.5:
        return None
    terms = [
        {
            "weight": rng.choice([1, 5, 50]),
            "preference": {
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": [rng.choice("xyz")]}
                ]
            },
        }
        for _ in range(rng.randint(1, 2))
    ]
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}}


def random_session(seed: int, *, with_usage: bool) -> tuple[Session, list[TaskInfo]]:
    rng = random.Random(seed)
    nodes = [
        node(
            f"n{i:03d}",
            cpu=rng.choice([2000, 4000, 8000, 0]) if rng.random() < 0.97 else 0,
            memory=rng.choice([4, 8, 16]) * GI,
            labels={"tier": rng.choice("xyz")},
            taints=rng.sample(TAINTS, rng.randint(0, 2)) if rng.random() < 0.3 else None,
        )
        for i in range(rng.randint(60, 160))
    ]
    running = [
        task(
            f"r{i}",
            status=rng.choice([TaskStatus.RUNNING, TaskStatus.RELEASING]),
            node=rng.choice(nodes).name,
            cpu=rng.choice([0, 250, 500, 1000]),
            memory=rng.choice([0.0, 0.5, 1.0]) * GI,
        )
        for i in range(rng.randint(100, 300))
    ]
    pending = [
        task(
            f"p{i:02d}",
            cpu=rng.choice([0, 100, 500, 1500]),
            memory=rng.choice([0.0, 0.25, 1.0]) * GI,
            tolerations=rng.choice(TOLERATIONS),
            affinity=preferred(rng),
        )
        for i in range(40)
    ]
    weights = {key: rng.choice([0, 1, 2, 5]) for key in nodeorder.WEIGHTS}
    plugins: list[Any] = [nodeorder.build(nodeorder.parse_args(weights), CTX)]
    confs = [PluginConf.of("nodeorder", p.NODE_ORDER)]
    world = FakeWorld(cluster(nodes=nodes, tasks=running + pending), usage=UsageState())
    if with_usage:
        for n in nodes:
            if rng.random() < 0.8:
                for k in range(3):
                    cpu, mem = rng.randint(0, 9000), rng.randint(0, 16 * 1024)
                    when = T0 - minutes(rng.choice([1, 2, 9]) * (k + 1))
                    sample = node_metrics(n.name, cpu=f"{cpu}m", memory=f"{mem}Mi", when=when)
                    world.usage.apply(sample)
        plugins.append(usage.build(usage.parse_args({"usage.weight": rng.randint(1, 5)}), CTX))
        confs.append(PluginConf.of("usage", p.NODE_ORDER))
    ssn = session(world, tiers(confs), plugins)
    ssn.predicate_cursor = rng.randrange(len(nodes))
    return ssn, pending


@pytest.mark.parametrize("with_usage", [False, True], ids=["nodeorder", "nodeorder+usage"])
@pytest.mark.parametrize("seed", range(8))
def test_batch_scores_choose_as_the_per_node_scores(seed: int, with_usage: bool) -> None:
    fast, pending = random_session(seed, with_usage=with_usage)
    slow, _ = random_session(seed, with_usage=with_usage)
    stmt_fast, stmt_slow = fast.statement(), slow.statement()
    placed = 0
    for t in pending:
        found = nodes_api.fitting_nodes(fast, t)
        indices = found.idle or found.future
        if not indices:
            continue
        pool = fast.view.node_list
        chosen, score = nodes_api.best_node(fast, t, indices)
        scores = nodes_api.prioritize_nodes(slow, t, [slow.view.node_list[i] for i in indices])
        assert (chosen.name, score) == nodes_api.select_best_node(scores)
        # every candidate's score, not just the winner's
        assert [scores[pool[i].name] for i in indices] == _summed(fast, t, indices)
        if found.idle:
            stmt_fast.allocate(fast.tasks[t.key], chosen.name, source="t")
            stmt_slow.allocate(slow.tasks[t.key], chosen.name, source="t")
        else:
            stmt_fast.pipeline(fast.tasks[t.key], chosen.name)
            stmt_slow.pipeline(slow.tasks[t.key], chosen.name)
        placed += 1
    assert placed > 10


def _summed(ssn: Session, t: TaskInfo, indices: list[int]) -> list[float]:
    totals = [0.0] * len(indices)
    for _, _, batch in ssn.score_plan(t):
        assert batch is not None
        totals = [a + b for a, b in zip(totals, batch(t, indices), strict=True)]
    return totals


def test_a_scorer_without_batch_is_asked_node_by_node() -> None:
    class Plain:
        name = "plain"

        def on_session_open(self, ssn: Session) -> None:
            ssn.add_node_order_fn(self.name, lambda t, n: 1.0 if n.name == "b" else 0.0)

        def on_session_close(self, ssn: Session) -> None:
            del ssn

    order = nodeorder.build(nodeorder.parse_args({}), CTX)
    c = cluster(nodes=[node(n) for n in "abc"], tasks=[task("p")])
    confs = [PluginConf.of("nodeorder", p.NODE_ORDER), PluginConf.of("plain", p.NODE_ORDER)]
    ssn = session(c, tiers(confs), [order, Plain()])
    assert [batch is None for _, _, batch in ssn.score_plan(ssn.tasks["ns/p"])] == [False, True]
    chosen, score = nodes_api.best_node(ssn, ssn.tasks["ns/p"], [0, 1, 2])
    assert chosen.name == "b"
    assert score == ssn.node_order(ssn.tasks["ns/p"], ssn.view.node_list[1])
