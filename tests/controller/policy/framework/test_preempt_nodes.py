"""preempt's node search in one loop (``nodes.preempt_nodes``) is ``predicate_nodes`` with
``preempt_check_memo``: the same feasible nodes in the same order, the same errors (status
and reason), the same error cache and the same cursor, task after task of one session,
on seeded clusters with nodes that refuse for good (a taint) and for now (the pod count)."""

from __future__ import annotations

import pytest

from controller.policy.engine import build_cycle
from controller.policy.framework.nodes import predicate_nodes, preempt_check_memo, preempt_nodes
from controller.policy.framework.points import FitError
from controller.policy.framework.session import Session, open_session
from controller.policy.loader import load_config
from projections.model import TaskStatus
from tests.builders import at
from tests.controller.policy.actions.preempt.cases import config, node
from tests.controller.policy.actions.preempt.test_fastpath import random_cluster
from tests.controller.policy.framework.scenario import trigger, world_of

TIERS = [{"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "predicates"}]}]


def _session(seed: int) -> Session:
    case = random_cluster(seed)
    case.nodes.append(
        node("tainted", "64", "64G", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    )
    case.nodes.append(node("crowded", "64", "64G", pods="1"))
    conf = load_config(config(tiers=TIERS))
    built = build_cycle(conf)
    return open_session(
        world_of(case.events()),
        trigger(at(30)),
        tiers=conf.tiers,
        plugins=built.plugins,
        ctx=built.ctx,
    )


def _walk(ssn: Session, *, fused: bool) -> list[tuple[list[str], dict[str, FitError], int]]:
    out = []
    caches: dict[str, dict[str, FitError]] = {}
    pending = [t for t in ssn.view.pending_tasks() if t.status == TaskStatus.PENDING]
    for task in sorted(pending, key=lambda t: t.key) * 2:  # twice: memo and cache hits
        cache = caches.setdefault(task.job, {})
        if fused:
            found = preempt_nodes(ssn, task, cache=cache)
        else:
            found = predicate_nodes(ssn, task, preempt_check_memo(ssn), cache=cache)
        out.append(([n.name for n in found.feasible], dict(found.errors), ssn.predicate_cursor))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_the_one_loop_walks_as_predicate_nodes(seed: int) -> None:
    fused, plain = _walk(_session(seed), fused=True), _walk(_session(seed), fused=False)
    assert [(f, sorted(e), c) for f, e, c in fused] == [(f, sorted(e), c) for f, e, c in plain]
    assert any(errors for _, errors, _ in fused)  # some node refused for good
    for (_, mine, _), (_, theirs, _) in zip(fused, plain, strict=True):
        assert {k: (v.status, v.reason) for k, v in mine.items()} == {
            k: (v.status, v.reason) for k, v in theirs.items()
        }
