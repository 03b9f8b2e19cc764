"""Allocate's pruned node choice (:mod:`controller.policy.framework.pruning`) chooses what full
scoring chooses: on seeded clusters, ``search.best_node`` (bounds, then exact scores of
the nodes that can still win) equals the definition (``prioritize_nodes`` +
``select_best_node``) for every pending task, winner and score, while statements change
the nodes between choices; a bound that lies is caught by the same comparison, and the
bounds stand aside where they cannot be trusted."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.policy.framework import nodes as nodes_api
from controller.policy.framework import points as p
from controller.policy.framework import pruning, search
from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import nodeorder
from projections.model import NodeInfo, TaskInfo, TaskStatus
from tests.controller.policy.framework.scenario import GI, cluster, node, session, task, tiers

CTX = PluginContext(ZoneInfo("UTC"), "volcano")


class Zone:
    """A keyed scorer without a bound (as tdm's): 100 on the task's zone, 0 elsewhere;
    ``raising`` makes it raise on one node (which zeroes that node's total)."""

    name = "zone"

    def __init__(self, raising: bool = False) -> None:
        self.raising = raising

    def score(self, t: TaskInfo, n: NodeInfo) -> float:
        if self.raising and n.name.endswith("5"):
            raise ValueError("zeroes the node")
        return 100.0 if n.labels.get("zone") == ("a" if t.priority > 5 else "b") else 0.0

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_node_order_fn(self.name, self.score, key=lambda t: t.priority > 5)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


class Liar:
    """A scorer whose bound claims every node scores 0 while one scores 1,000."""

    name = "liar"

    def __init__(self) -> None:
        self.column: list[float] = []

    def score(self, t: TaskInfo, n: NodeInfo) -> float:
        del t
        return 1000.0 if n.name.endswith("3") else 0.0

    def bound(self, t: TaskInfo) -> tuple[Sequence[float], float]:
        del t
        return self.column, 0.0

    def on_session_open(self, ssn: Session) -> None:
        self.column = [0.0] * len(ssn.view.node_list)
        ssn.add_node_order_fn(self.name, self.score, key=lambda t: 0, bound=self.bound)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def random_session(seed: int, extra: str) -> tuple[Session, list[TaskInfo]]:
    rng = random.Random(seed)
    nodes = [
        node(
            f"n{i:03d}",
            cpu=rng.choice([8000, 16000, 32000]) if rng.random() < 0.97 else 0,
            memory=rng.choice([16, 32, 64]) * GI,
            labels={"zone": rng.choice("ab")},
        )
        for i in range(rng.randint(150, 260))
    ]
    running = [
        task(
            f"r{i}",
            status=rng.choice([TaskStatus.RUNNING, TaskStatus.RELEASING]),
            node=rng.choice(nodes).name,
            cpu=rng.choice([0, 500, 1000, 4000]),
            memory=rng.choice([0.0, 1.0, 4.0]) * GI,
        )
        for i in range(rng.randint(300, 600))
    ]
    pending = [
        task(
            f"p{i:02d}",
            cpu=rng.choice([0, 100, 500, 2000]),
            memory=rng.choice([0.0, 0.5, 2.0]) * GI,
            priority=rng.choice([1, 9]),
        )
        for i in range(60)
    ]
    weights = {key: rng.choice([0, 1, 2, 5]) for key in nodeorder.WEIGHTS}
    plugins: list[Any] = [nodeorder.build(nodeorder.parse_args(weights), CTX)]
    confs = [PluginConf.of("nodeorder", p.NODE_ORDER)]
    if extra == "keyed":  # a keyed scorer alone (as tdm in the benchmark days): exact sums
        plugins, confs = [Zone()], [PluginConf.of("zone", p.NODE_ORDER)]
    elif extra in ("zone", "raising"):
        plugins.append(Zone(raising=extra == "raising"))
        confs.append(PluginConf.of("zone", p.NODE_ORDER))
    elif extra == "liar":
        plugins.append(Liar())
        confs.append(PluginConf.of("liar", p.NODE_ORDER))
    ssn = session(cluster(nodes=nodes, tasks=running + pending), tiers(confs), plugins)
    ssn.predicate_cursor = rng.randrange(len(nodes))
    return ssn, pending


def compare(seed: int, extra: str) -> tuple[int, int, int]:
    """Place every pending task on both sessions by the fast choice; (placed, choices the
    bounds pruned, choices that differed from the definition)."""
    fast, pending = random_session(seed, extra)
    slow, _ = random_session(seed, extra)
    stmt_fast, stmt_slow = fast.statement(), slow.statement()
    placed = pruned = wrong = 0
    for t in pending:
        found = nodes_api.fitting_nodes(fast, t)
        indices = found.idle or found.future
        if not indices:
            continue
        if len(indices) >= pruning.MIN_CANDIDATES and pruning.bounds(fast, t) is not None:
            pruned += 1
        chosen, score = search.best_node(fast, t, indices)
        scores = nodes_api.prioritize_nodes(slow, t, [slow.view.node_list[i] for i in indices])
        if (chosen.name, score) != nodes_api.select_best_node(scores):
            wrong += 1
        if found.idle:
            stmt_fast.allocate(fast.tasks[t.key], chosen.name, source="t")
            stmt_slow.allocate(slow.tasks[t.key], chosen.name, source="t")
        else:
            stmt_fast.pipeline(fast.tasks[t.key], chosen.name)
            stmt_slow.pipeline(slow.tasks[t.key], chosen.name)
        placed += 1
    return placed, pruned, wrong


@pytest.mark.parametrize(
    "extra", ["", "zone", "keyed"], ids=["nodeorder", "nodeorder+keyed", "keyed"]
)
@pytest.mark.parametrize("seed", range(8))
def test_the_pruned_choice_equals_full_scoring(seed: int, extra: str) -> None:
    placed, pruned, wrong = compare(seed, extra)
    assert placed > 20
    assert pruned > 10  # the bounds were used, not bypassed
    assert wrong == 0


@pytest.mark.parametrize("seed", range(3))
def test_a_raising_scorer_makes_the_choice_score_every_node(seed: int) -> None:
    placed, pruned, wrong = compare(seed, "raising")
    assert placed > 20
    assert pruned == 0  # its exact column broke: no bounds for it
    assert wrong == 0


def test_a_bound_that_lies_is_caught_by_the_comparison() -> None:
    # the comparison above has teeth: a bound below the truth changes the winner
    wrong = sum(compare(seed, "liar")[2] for seed in range(3))
    assert wrong > 0


class Unkeyed:
    name = "unkeyed"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_node_order_fn(self.name, lambda t, n: 1.0)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


class ManyKeys:
    name = "many"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_node_order_fn(self.name, lambda t, n: 1.0, key=lambda t: t.name)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


class Declines:
    name = "declines"

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_node_order_fn(self.name, lambda t, n: 1.0, bound=lambda t: None)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


@pytest.mark.parametrize(
    ("plugin", "bounded"),
    [
        (Zone(), [True] * 12),
        (Zone(raising=True), [False] * 12),
        (Unkeyed(), [False] * 12),
        (Declines(), [False] * 12),
        (ManyKeys(), [True] * pruning.MAX_KEYS + [False] * (12 - pruning.MAX_KEYS)),
    ],
    ids=["keyed", "raising", "unkeyed", "declines", "too-many-keys"],
)
def test_bounds_stand_aside_where_they_cannot_be_trusted(plugin: Any, bounded: list[bool]) -> None:
    nodes = [node(f"n{i}", labels={"zone": "a"}) for i in range(40)]
    pending = [task(f"p{i:02d}") for i in range(12)]
    ssn = session(
        cluster(nodes=nodes, tasks=pending),
        tiers([PluginConf.of(plugin.name, p.NODE_ORDER)]),
        [plugin],
    )
    assert [pruning.bounds(ssn, ssn.tasks[t.key]) is not None for t in pending] == bounded
