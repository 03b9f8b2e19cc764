"""``memo_predicate`` answers as ``Session.predicate`` and forgets a node's answer when a
statement changes the node."""

from __future__ import annotations

from collections.abc import Callable

from controller.policy.framework.nodes import memo_predicate
from controller.policy.framework.points import FitError
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import predicates
from projections.model import NodeInfo, TaskInfo, TaskStatus
from tests.controller.policy.framework.scenario import cluster, job, node, session, task, tiers


def _answer(fn: Callable[[TaskInfo, NodeInfo], None], t: TaskInfo, n: NodeInfo) -> str | None:
    try:
        fn(t, n)
    except FitError as exc:
        return exc.reason
    return None


def test_memo_equals_the_session_and_sees_changes() -> None:
    running = task("r0", status=TaskStatus.RUNNING, node="n1", job="ns/j")
    pending = [task(f"p{i}", job="ns/j") for i in range(2)]
    c = cluster(
        nodes=[node("n1", pods=2), node("n2", pods=1)],
        tasks=[running, *pending],
        jobs=[job("ns/j")],
    )
    conf = PluginConf.of("predicates", all_flags=True)
    plugin = predicates.PredicatesPlugin(predicates.PredicatesArgs())
    ssn = session(c, tiers([conf]), plugins=[plugin])

    def memo(t: TaskInfo, n: NodeInfo) -> None:
        memo_predicate(ssn, t, n)

    for name in ("n1", "n2"):
        assert _answer(memo, pending[0], ssn.nodes[name]) == _answer(
            ssn.predicate, pending[0], ssn.nodes[name]
        )
    stmt = ssn.statement()
    stmt.allocate(pending[0], "n1", source="test")
    # n1 is now full (2 pods): the memo must not answer from before the change
    assert _answer(memo, pending[1], ssn.nodes["n1"]) == "node(s) pod number exceeded"
    assert _answer(memo, pending[1], ssn.nodes["n1"]) == _answer(
        ssn.predicate, pending[1], ssn.nodes["n1"]
    )
