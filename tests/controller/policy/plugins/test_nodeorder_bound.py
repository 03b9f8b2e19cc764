"""The ``nodeorder`` bound (:mod:`controller.policy.plugins.nodeorder.bound`) is an upper bound:
for every task and every session node, ``score(task, node) ≤ column[i] + slack(task)``,
on seeded clusters with random weights (mostrequested, preferred node affinity and
taints included), before and after statements change the nodes; and the column kept up
to date from ``ClusterView.changed`` is the column a fresh bound computes."""

from __future__ import annotations

import random

import pytest

from controller.policy.framework import points as p
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import nodeorder
from controller.policy.plugins.nodeorder.bound import ScoreBound
from projections.model import TaskInfo, TaskStatus
from tests.controller.policy.framework.scenario import cluster, node, session, task, tiers
from tests.controller.policy.plugins.test_nodeorder_columns import (
    CTX,
    TAINTS,
    TOLERATIONS,
    preferred,
)

GI = 1024.0**3


def random_session(seed: int) -> tuple[Session, list[TaskInfo], nodeorder.NodeOrderArgs]:
    rng = random.Random(seed)
    nodes = [
        node(
            f"n{i:03d}",
            cpu=rng.choice([1000, 4000, 64000, 0]),
            memory=rng.choice([0, 4, 256]) * GI,
            labels={"tier": rng.choice("xyz")},
            taints=rng.sample(TAINTS, rng.randint(0, 2)) if rng.random() < 0.3 else None,
        )
        for i in range(rng.randint(30, 80))
    ]
    running = [
        task(
            f"r{i}",
            status=rng.choice([TaskStatus.RUNNING, TaskStatus.RELEASING]),
            node=rng.choice(nodes).name,
            cpu=rng.choice([0, 250, 1000, 6000]),
            memory=rng.choice([0.0, 0.5, 8.0]) * GI,
        )
        for i in range(rng.randint(50, 200))
    ]
    pending = [
        task(
            f"p{i:02d}",
            cpu=rng.choice([0, 1, 100, 1500, 70000]),
            memory=rng.choice([0.0, 1.0, 300.0]) * GI,
            tolerations=rng.choice(TOLERATIONS),
            affinity=preferred(rng),
        )
        for i in range(30)
    ]
    args = nodeorder.parse_args({key: rng.choice([0, 1, 2, 5]) for key in nodeorder.WEIGHTS})
    plugin = nodeorder.build(args, CTX)
    ssn = session(
        cluster(nodes=nodes, tasks=running + pending),
        tiers([PluginConf.of("nodeorder", p.NODE_ORDER)]),
        [plugin],
    )
    return ssn, pending, args


@pytest.mark.parametrize("seed", range(12))
def test_no_node_scores_above_its_bound(seed: int) -> None:
    ssn, pending, args = random_session(seed)
    bound = ScoreBound(ssn, args)
    (score,) = ssn.flat("node_order")
    stmt = ssn.statement()
    rng = random.Random(seed)
    checked = 0
    for t in pending:
        found = bound.bound(t)
        assert found is not None
        column, slack = found
        for i, n in enumerate(ssn.view.node_list):
            assert score(t, n) <= column[i] + slack, (t.name, n.name)
            checked += 1
        assert column == ScoreBound(ssn, args).column()  # kept current, not stale
        target = rng.choice(ssn.view.node_list).name
        stmt.pipeline(ssn.tasks[t.key], target)  # changes the node, fit or not
    assert checked > 500


def test_a_preferred_weight_that_is_not_a_number_declines() -> None:
    ssn, _, args = random_session(0)
    odd = task(
        "odd",
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": "heavy", "preference": {}}
                ]
            }
        },
    )
    weighted = nodeorder.NodeOrderArgs(node_affinity=1)
    assert ScoreBound(ssn, weighted).bound(odd) is None
    assert ScoreBound(ssn, nodeorder.NodeOrderArgs(node_affinity=0)).bound(odd) is not None
    del args
