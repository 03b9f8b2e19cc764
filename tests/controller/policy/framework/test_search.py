"""The node-search API (:mod:`controller.policy.framework.nodes`): spec §4.1 counts, and the
hot-path search agreeing with the plain ``predicate_nodes`` + ``fits`` definition, memo,
columns, cursor and error cache included; scoring and selection likewise."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from controller.policy.framework import nodes as nodes_api
from controller.policy.framework import points as p
from controller.policy.framework.nodes import (
    allocate_check,
    calculate_num_feasible_nodes_to_find,
    predicate_nodes,
    select_best_node,
)
from controller.policy.framework.points import FitError, FitStatus
from controller.policy.framework.resources import fits
from controller.policy.framework.search import best_node, find_fitting_nodes
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf
from projections.model import NodeInfo, TaskInfo, TaskStatus
from tests.controller.policy.framework.scenario import GI, cluster, node, session, task, tiers


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


# -- the one API: fast path == definitions, scores and selection included -------------


class Scores:
    """A keyed scorer with many ties: the score depends on the pod count and the key."""

    name = "scores"

    def __init__(self, keyed: bool) -> None:
        self.keyed = keyed

    def score(self, t: TaskInfo, n: NodeInfo) -> float:
        if n.name.endswith("3") and t.priority > 5:
            raise ValueError("zeroes the node")
        return float((len(n.tasks) * 7 + int(n.name[1:])) % 5)

    def on_session_open(self, ssn: Session) -> None:
        key = (lambda t: t.priority > 5) if self.keyed else None
        ssn.add_node_order_fn(self.name, self.score, key=key)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def scored_session(seed: int, keyed: bool) -> tuple[Session, list[TaskInfo]]:
    base, pending, plugin = random_session(seed, keyed)
    ssn = session(
        base.world.cluster,
        tiers([PluginConf.of("podcap", p.PREDICATE), PluginConf.of("scores", p.NODE_ORDER)]),
        [plugin, Scores(keyed)],
    )
    ssn.predicate_cursor = base.predicate_cursor
    return ssn, pending


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("keyed", [False, True])
def test_allocate_search_through_the_api_equals_the_definitions(seed: int, keyed: bool) -> None:
    fast, pending = scored_session(seed, keyed)
    slow, _ = scored_session(seed, keyed)
    fast_cache: dict[int, FitError] = {}
    slow_cache: dict[str, FitError] = {}
    stmt_fast, stmt_slow = fast.statement(), slow.statement()
    placed = 0
    for t in pending:
        found = nodes_api.fitting_nodes(fast, t, cache=fast_cache)
        result = predicate_nodes(slow, t, allocate_check(slow), cache=slow_cache)
        pool = fast.view.node_list
        idle = [n.name for n in result.feasible if fits(t.init_resreq, n, future=False)]
        future = [n.name for n in result.feasible if n.name not in idle]
        assert ([pool[i].name for i in found.idle], [pool[i].name for i in found.future]) == (
            idle,
            future,
        )
        assert {pool[i].name for i in fast_cache} == set(slow_cache)
        assert fast.predicate_cursor == slow.predicate_cursor
        if not len(found):
            continue
        indices = found.idle or found.future
        chosen, score = nodes_api.best_node(fast, t, indices)
        subset = [n for n in result.feasible if n.name in {pool[i].name for i in indices}]
        scores = nodes_api.prioritize_nodes(slow, t, subset)
        assert (chosen.name, score) == select_best_node(scores)
        assert nodes_api.sort_nodes(scores)[0] == chosen.name
        stmt_fast.allocate(fast.tasks[t.key], chosen.name, source="t")
        stmt_slow.allocate(slow.tasks[t.key], chosen.name, source="t")
        placed += 1
    assert placed > 0


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ({}, []),
        ({"b": 1.0, "a": 1.0, "c": 0.5}, ["a", "b", "c"]),
        ({"n2": 0.0, "n10": 3.0, "n1": 3.0}, ["n1", "n10", "n2"]),
        ({"z": -1.0, "y": 0.0}, ["y", "z"]),
    ],
)
def test_sort_nodes_highest_first_ties_by_name(
    scores: dict[str, float], expected: list[str]
) -> None:
    assert nodes_api.sort_nodes(scores) == expected
    best = select_best_node(scores)
    assert (best[0] if best else None) == (expected[0] if expected else None)


class Refuser:
    """A predicate that refuses every node with ``status``."""

    name = "refuser"

    def __init__(self, status: FitStatus) -> None:
        self.status = status

    def on_session_open(self, ssn: Session) -> None:
        def refuse(t: TaskInfo, n: NodeInfo) -> None:
            if n.name != "ok":
                raise FitError(self.status, "no", plugin=self.name)

        ssn.add_predicate_fn(self.name, refuse)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


@pytest.mark.parametrize(
    ("status", "allocate_feasible", "preempt_feasible"),
    [
        (FitStatus.UNSCHEDULABLE, ["ok"], ["a", "b", "ok"]),
        (FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE, ["ok"], ["ok"]),
        (FitStatus.ERROR, ["ok"], ["ok"]),
    ],
)
def test_preempt_check_keeps_nodes_an_eviction_could_free(
    status: FitStatus, allocate_feasible: list[str], preempt_feasible: list[str]
) -> None:
    full = [node(n, cpu=1000) for n in ("a", "b", "ok")]
    c = cluster(
        nodes=full,
        tasks=[task("p", cpu=900)]
        + [task(f"r{n.name}", status=TaskStatus.RUNNING, node=n.name, cpu=500) for n in full[:2]],
    )
    ssn = session(c, tiers([PluginConf.of("refuser", p.PREDICATE)]), [Refuser(status)])
    t = ssn.tasks["ns/p"]
    got = predicate_nodes(ssn, t, allocate_check(ssn))
    assert [n.name for n in got.feasible] == allocate_feasible
    assert {name: e.plugin for name, e in got.errors.items()} == {"a": "allocate", "b": "allocate"}
    ssn.predicate_cursor = 0
    pre = predicate_nodes(ssn, t, nodes_api.preempt_check(ssn))
    assert [n.name for n in pre.feasible] == preempt_feasible
