"""The node-search helpers: spec §4.1 counts, and the hot-path search agreeing with the
plain ``predicate_nodes`` + ``fits`` definition, memo and columns included."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from controller.framework import points as p
from controller.framework.points import FitError, FitStatus
from controller.framework.resources import fits
from controller.framework.search import best_node, find_fitting_nodes
from controller.framework.session import Session
from controller.framework.tiers import PluginConf
from controller.framework.util import (
    calculate_num_feasible_nodes_to_find,
    predicate_nodes,
    select_best_node,
)
from projections.model import NodeInfo, TaskInfo, TaskStatus
from tests.controller.framework.scenario import GI, cluster, node, session, task, tiers


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, 0),
        (50, 50),
        (100, 100),
        (101, 100),
        (1000, 420),
        (5000, 500),
        (6000, 300),
        (10000, 500),
        (100000, 5000),
    ],
)
def test_num_feasible_nodes_to_find(n: int, expected: int) -> None:
    assert calculate_num_feasible_nodes_to_find(n) == expected


def test_select_best_node_breaks_ties_by_name() -> None:
    assert select_best_node({"b": 1.0, "a": 1.0, "c": 0.5}) == ("a", 1.0)
    assert select_best_node({}) is None


class PodCap:
    """A keyed predicate that depends on node state: at most ``cap`` tasks per node."""

    name = "podcap"

    def __init__(self, cap: int, keyed: bool) -> None:
        self.cap = cap
        self.keyed = keyed
        self.calls = 0

    def predicate(self, t: TaskInfo, n: NodeInfo) -> None:
        self.calls += 1
        if len(n.tasks) >= self.cap or (t.priority > 5 and n.name.endswith("7")):
            raise FitError(FitStatus.UNSCHEDULABLE, "cap")

    def on_session_open(self, ssn: Session) -> None:
        key = (lambda t: t.priority > 5) if self.keyed else None
        ssn.add_predicate_fn(self.name, self.predicate, key=key)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def random_session(seed: int, keyed: bool) -> tuple[Session, list[TaskInfo], PodCap]:
    rng = random.Random(seed)
    nodes = [
        node(f"n{i:03d}", cpu=rng.choice([2000, 4000, 8000]), memory=rng.choice([4, 8]) * GI)
        for i in range(rng.randint(120, 260))
    ]
    running = [
        task(
            f"r{i}",
            status=rng.choice([TaskStatus.RUNNING, TaskStatus.RELEASING]),
            node=rng.choice(nodes).name,
            cpu=rng.choice([500, 1000]),
            memory=GI,
        )
        for i in range(300)
    ]
    pending = [
        task(
            f"p{i}",
            cpu=rng.choice([500, 1500, 3000]),
            memory=rng.choice([1, 3]) * GI,
            priority=rng.choice([1, 9]),
        )
        for i in range(40)
    ]
    plugin = PodCap(cap=4, keyed=keyed)
    ssn = session(
        cluster(nodes=nodes, tasks=running + pending),
        tiers([PluginConf.of("podcap", p.PREDICATE)]),
        [plugin],
    )
    ssn.predicate_cursor = rng.randrange(len(nodes))
    return ssn, pending, plugin


def reference(ssn: Session, t: TaskInfo) -> tuple[list[str], list[str]]:
    def check(tk: TaskInfo, n: NodeInfo) -> None:
        if not fits(tk.init_resreq, n, future=True):
            raise FitError(FitStatus.UNSCHEDULABLE, "Insufficient resources")
        ssn.predicate(tk, n)

    found = predicate_nodes(ssn, t, check).feasible
    idle = [n.name for n in found if fits(t.init_resreq, n, future=False)]
    return idle, [n.name for n in found if n.name not in idle]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("keyed", [False, True])
def test_hot_search_equals_the_definition_while_the_session_changes(seed: int, keyed: bool) -> None:
    fast, pending, _ = random_session(seed, keyed)
    slow, _, _ = random_session(seed, keyed)
    stmt_fast, stmt_slow = fast.statement(), slow.statement()
    for t in pending:
        got = find_fitting_nodes(fast, t)
        names = fast.view.node_list
        got_idle = [names[i].name for i in got.idle]
        got_future = [names[i].name for i in got.future]
        assert (got_idle, got_future) == reference(slow, t)
        assert fast.predicate_cursor == slow.predicate_cursor
        if got_idle:  # change the nodes so that memo and columns must follow
            stmt_fast.allocate(fast.tasks[t.key], got_idle[0], source="t")
            stmt_slow.allocate(slow.tasks[t.key], got_idle[0], source="t")
        elif got_future:
            stmt_fast.pipeline(fast.tasks[t.key], got_future[0])
            stmt_slow.pipeline(slow.tasks[t.key], got_future[0])
    assert fast.view.columns().idle_cpu == [n.idle.milli_cpu + 0.1 for n in fast.view.node_list]


def test_keyed_predicates_are_asked_once_per_key_and_node_version() -> None:
    ssn, pending, plugin = random_session(1, keyed=True)
    first_task = next(t for t in pending if t.priority == 1)
    twin = replace(first_task, name="twin", uid="ns-twin")
    ssn.predicate_cursor = 0
    find_fitting_nodes(ssn, first_task)
    first = plugin.calls
    assert first > 0
    ssn.predicate_cursor = 0
    find_fitting_nodes(ssn, twin)
    assert plugin.calls == first  # same key, unchanged nodes: all answers reused
    stmt = ssn.statement()
    stmt.allocate(first_task, ssn.view.node_list[0].name, source="t")
    ssn.predicate_cursor = 0
    find_fitting_nodes(ssn, twin)
    assert plugin.calls == first + 1  # only the changed node is asked again


def test_best_node_scores_with_ties_to_the_lowest_name() -> None:
    class Scorer:
        name = "scorer"

        def on_session_open(self, ssn: Session) -> None:
            ssn.add_node_order_fn(self.name, lambda t, n: 10.0 if n.name in ("b", "c") else 1.0)

        def on_session_close(self, ssn: Session) -> None:
            del ssn

    c = cluster(nodes=[node(n) for n in "dcba"], tasks=[task("p")])
    ssn = session(c, tiers([PluginConf.of("scorer", p.NODE_ORDER)]), [Scorer()])
    chosen, score = best_node(ssn, ssn.tasks["ns/p"], [0, 1, 2, 3])
    assert (chosen.name, score) == ("b", 10.0)
    plain = session(c)
    assert best_node(plain, plain.tasks["ns/p"], [3, 2, 1])[0].name == "b"
