"""Every node's verdict (:mod:`controller.policy.framework.verdicts`): the same answers as
the node search's definitions (``predicate_nodes`` with ``allocate_check``,
``Session.node_order``) for every node, per plugin, and the session left as it was."""

from __future__ import annotations

from typing import Any

import pytest

from controller.policy.engine import build_cycle
from controller.policy.framework.nodes import allocate_check, predicate_nodes, prioritize_nodes
from controller.policy.framework.session import Session, open_session
from controller.policy.framework.tiers import PluginConf, TierConf
from controller.policy.framework.verdicts import RESOURCES, evaluate_nodes
from controller.policy.loader import load_config
from projections.model import NodeInfo, TaskInfo
from tests.builders import at, build_node, build_pod, build_queue, watch
from tests.controller.policy.framework.scenario import ctx, trigger, world_of

CONFIG: dict[str, Any] = {
    "actions": "allocate",
    "tiers": [{"plugins": [{"name": "predicates"}, {"name": "nodeorder"}]}],
}
TAINT = {"key": "k", "value": "v", "effect": "NoSchedule"}


def world() -> Any:
    return world_of(
        [
            watch("queues", build_queue(), at(0)),
            watch("nodes", build_node("a"), at(0)),
            watch("nodes", build_node("b", cpu="4"), at(0)),
            watch("nodes", build_node("c", taints=[TAINT]), at(0)),
            watch("nodes", build_node("d", cpu="500m"), at(0)),
            watch("pods", build_pod("ns", "hog", node="b", cpu="3"), at(0)),
            watch("pods", build_pod("ns", "p", phase="Pending", cpu="1"), at(0)),
        ]
    )


def real_session() -> Session:
    config = load_config(CONFIG)
    built = build_cycle(config)
    return open_session(
        world(), trigger(at(1)), tiers=config.tiers, plugins=built.plugins, ctx=built.ctx
    )


def test_verdicts_agree_with_the_search_definitions_on_every_node() -> None:
    ssn = real_session()
    task = ssn.tasks["ns/p"]
    found = predicate_nodes(ssn, task, allocate_check(ssn), move_cursor=False)
    totals = prioritize_nodes(ssn, task, found.feasible)
    verdicts = {v.node: v for v in evaluate_nodes(ssn, task)}
    assert sorted(verdicts) == ["a", "b", "c", "d"]
    assert sorted(n for n, v in verdicts.items() if v.feasible) == sorted(
        n.name for n in found.feasible
    )
    for name, error in found.errors.items():
        assert verdicts[name].reason == error.reason
    assert verdicts["d"].check == RESOURCES and verdicts["c"].check == "predicates"
    for name, total in totals.items():
        assert verdicts[name].total == total
        assert [p for p, _ in verdicts[name].scores] == ["nodeorder"]
    assert verdicts["a"].total > verdicts["b"].total  # less requested


def test_asking_changes_nothing_in_the_session() -> None:
    ssn = real_session()
    task = ssn.tasks["ns/p"]
    before = (ssn.predicate_cursor, ssn.view.changes, list(ssn.view.versions))
    memos = {k: dict(v) for k, v in ssn._memos.items()}
    first = evaluate_nodes(ssn, task)
    assert (ssn.predicate_cursor, ssn.view.changes, list(ssn.view.versions)) == before
    assert {k: dict(v) for k, v in ssn._memos.items()} == memos
    assert evaluate_nodes(ssn, task) == first


class Scores:
    """Two scoring plugins: ``one`` gives 10 everywhere, ``bad`` fails on node ``b``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def on_session_open(self, ssn: Session) -> None:
        if self.name == "one":
            ssn.add_node_order_fn(self.name, lambda t, n: 10.0)
        else:
            ssn.add_node_order_fn(self.name, self.score)

    def score(self, task: TaskInfo, node: NodeInfo) -> float:
        if node.name == "b":
            raise ValueError("no metrics for b")
        return 2.5

    def on_session_close(self, ssn: Session) -> None:
        del ssn


@pytest.mark.parametrize(
    ("node", "scores", "total", "error"),
    [
        ("a", (("one", 10.0), ("bad", 2.5)), 12.5, ""),
        ("b", (("one", 10.0),), 0.0, "bad: no metrics for b"),  # Session.node_order's zero
    ],
)
def test_per_plugin_scores_in_tier_order_and_a_failing_score_zeroes_the_node(
    node: str, scores: tuple[tuple[str, float], ...], total: float, error: str
) -> None:
    tier = TierConf((PluginConf.of("one", all_flags=True), PluginConf.of("bad", all_flags=True)))
    ssn = open_session(
        world(), trigger(at(1)), tiers=(tier,), plugins=(Scores("one"), Scores("bad")), ctx=ctx()
    )
    task = ssn.tasks["ns/p"]
    verdict = next(v for v in evaluate_nodes(ssn, task) if v.node == node)
    assert (verdict.scores, verdict.total, verdict.score_error) == (scores, total, error)
    assert verdict.total == ssn.node_order(task, ssn.nodes[node])
