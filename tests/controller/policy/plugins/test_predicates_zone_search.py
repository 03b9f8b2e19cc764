"""Allocate's node search stays exact with zone terms: on randomised, seeded clusters whose
running and pending pods carry required (anti-)affinity over a zone label, the search
(``controller.policy.framework.search.find_fitting_nodes``, memo and fast lane where it may use
them) finds exactly the nodes the plain definition finds (``predicate_nodes`` with
``allocate_check``), while statements put pods on the nodes between searches: a placement
changes the answer of every node of its zone, not only its own."""

from __future__ import annotations

import random
from typing import Any

import pytest

from controller.policy.framework import nodes as nodes_api
from controller.policy.framework import points as p
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import predicates
from projections.model import TaskInfo, TaskStatus
from tests.controller.policy.framework.scenario import cluster, ctx, node, session, task, tiers

ZONE = "topology.kubernetes.io/zone"
APPS = "abc"


def terms(rng: random.Random) -> dict[str, Any] | None:
    roll = rng.random()
    if roll > 0.4:
        return None
    kind = "podAntiAffinity" if roll < 0.3 else "podAffinity"
    key = ZONE if rng.random() < 0.8 else "kubernetes.io/hostname"
    term = {"labelSelector": {"matchLabels": {"app": rng.choice(APPS)}}, "topologyKey": key}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def labelled(t: TaskInfo, rng: random.Random) -> TaskInfo:
    t.labels = {"app": rng.choice(APPS)}
    return t


def random_session(seed: int) -> tuple[Session, list[TaskInfo]]:
    rng = random.Random(seed)
    nodes = [
        node(
            f"n{i:02d}",
            cpu=4000,
            labels={ZONE: rng.choice("xyz")} if rng.random() < 0.9 else {},
        )
        for i in range(rng.randint(12, 30))
    ]
    running = [
        labelled(
            task(
                f"r{i:02d}",
                status=rng.choice([TaskStatus.RUNNING, TaskStatus.RELEASING]),
                node=rng.choice(nodes).name,
                cpu=500,
                affinity=terms(rng) if rng.random() < 0.3 else None,
            ),
            rng,
        )
        for i in range(rng.randint(5, 25))
    ]
    pending = [
        labelled(task(f"p{i:02d}", cpu=rng.choice([500, 1000]), affinity=terms(rng)), rng)
        for i in range(25)
    ]
    plugin = predicates.build(predicates.parse_args({}), ctx())
    ssn = session(
        cluster(nodes=nodes, tasks=running + pending),
        tiers([PluginConf.of("predicates", p.PREDICATE)]),
        [plugin],
    )
    ssn.predicate_cursor = rng.randrange(len(nodes))
    return ssn, pending


@pytest.mark.parametrize("seed", range(8))
def test_the_search_finds_the_plain_nodes_with_zone_terms(seed: int) -> None:
    fast, pending = random_session(seed)
    slow, _ = random_session(seed)
    stmt_fast, stmt_slow = fast.statement(), slow.statement()
    placed = 0
    for t in pending:
        found = nodes_api.fitting_nodes(fast, fast.tasks[t.key])
        plain = nodes_api.predicate_nodes(slow, slow.tasks[t.key], nodes_api.allocate_check(slow))
        pool = fast.view.node_list
        assert sorted(pool[i].name for i in [*found.idle, *found.future]) == sorted(
            n.name for n in plain.feasible
        ), f"task {t.key}"
        if not found.idle:
            continue
        chosen = pool[min(found.idle, key=lambda i: pool[i].name)].name
        stmt_fast.allocate(fast.tasks[t.key], chosen, source="t")
        stmt_slow.allocate(slow.tasks[t.key], chosen, source="t")
        placed += 1
    assert placed > 5
