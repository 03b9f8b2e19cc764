"""``Statement.evict_all`` leaves a session exactly as ``Statement.evict`` per victim does.

Seeded clusters: tasks Running, Bound, already Releasing (a decision folded earlier) or
Pending, on several nodes, some with a GPU scalar, some of jobs the session does not hold;
the session first allocates and evicts a little one by one (so some nodes and jobs are
cloned already), then evicts a victim list with repeats, by batch in one session and
victim by victim in a twin. Everything the session holds afterwards is compared: the
operations, every task and job as the view answers, every node's accounting (scalar
names in order), the node versions and the change log the pruning columns read, the
handlers' calls and the committed events.
"""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from controller.policy.framework.errors import StatementError
from controller.policy.framework.points import Victim
from controller.policy.framework.session import Session
from controller.policy.framework.statement import Statement
from projections.model import NodeInfo, TaskStatus
from tests.controller.policy.framework.scenario import FakeCluster, cluster, node, session, task
from tests.controller.policy.framework.test_statement import Recorder

STATUSES = [TaskStatus.RUNNING] * 5 + [TaskStatus.BOUND, TaskStatus.RELEASING, TaskStatus.PENDING]


def seeded(seed: int) -> tuple[FakeCluster, list[str]]:
    rng = random.Random(seed)
    nodes = [node(f"n{i}", cpu=64_000) for i in range(5)]
    tasks = []
    for i in range(40):
        status = rng.choice(STATUSES)
        placed = status != TaskStatus.PENDING
        made = task(
            f"t{i}",
            job=f"ns/j{rng.randrange(6)}",
            status=status,
            node=rng.choice(nodes).name if placed else "",
            cpu=rng.choice([500, 1000, 2000]),
        )
        if rng.random() < 0.2:
            made.resreq = made.resreq.clone()
            made.resreq.scalars["nvidia.com/gpu"] = 1000.0
        tasks.append(made)
    out = cluster(nodes=nodes, tasks=tasks)
    for key in rng.sample(sorted(out.jobs), 2):  # tasks of jobs the session lacks
        del out.jobs[key]
    return out, sorted(t.key for t in tasks)


def res(r: Any) -> tuple[Any, ...]:
    return (r.milli_cpu, r.memory, list(r.scalars.items()))


def _node(n: NodeInfo) -> tuple[Any, ...]:
    tasks = [(key, t.status, res(t.resreq)) for key, t in n.tasks.items()]
    return (res(n.idle), res(n.used), res(n.releasing), res(n.pipelined), tasks)


def state(ssn: Session, keys: list[str], seen: list[Any]) -> dict[str, Any]:
    view = ssn.view
    return {
        "tasks": [(k, t.status, t.node_name) for k in keys if (t := ssn.tasks.lookup(k))],
        "jobs": [(j, [(k, t.status) for k, t in ssn.jobs[j].tasks.items()]) for j in ssn.jobs],
        "nodes": [_node(n) for n in view.node_list],
        "versions": (list(view.versions), view.changes, sorted(view.changed)),
        "handlers": list(seen),
    }


def prelude(seed: int) -> tuple[Session, Statement, list[Victim], list[str], Recorder]:
    """A seeded session after a little staging one by one, and a victim list with repeats."""
    rng = random.Random(seed * 7)
    clustered, keys = seeded(seed)
    recorder = Recorder()
    ssn = session(clustered, (), [recorder])
    first = ssn.statement()
    for key in rng.sample(keys, 6):  # some nodes and jobs cloned before the batch
        current = ssn.tasks.lookup(key)
        if current is None or current.job not in ssn.jobs:
            continue
        try:
            if current.status == TaskStatus.PENDING:
                first.allocate(current, "n1", source="test")
            else:
                first.evict(current, "before", source="test")
        except StatementError:
            continue
    victims: list[Victim] = []
    for key in rng.sample(keys, 25) + rng.sample(keys, 5):  # repeats too
        current = ssn.tasks.lookup(key)
        if current is not None and current.status != TaskStatus.PENDING:
            evidence = {"i": len(victims)}
            victims.append(Victim(current, f"r{len(victims) % 3}", evidence, "src"))
    return ssn, first, victims, keys, recorder


def run(seed: int, batch: bool) -> tuple[dict[str, Any], list[Any], list[tuple[str, bytes]]]:
    ssn, first, victims, keys, recorder = prelude(seed)
    stmt = ssn.statement()
    if batch:
        stmt.evict_all(victims)
    else:
        for victim in victims:
            try:
                task, reason, evidence = victim.task, victim.reason, victim.evidence
                stmt.evict(task, reason, source=victim.source, evidence=evidence)
            except StatementError:
                continue
    ops = [
        (op.kind, op.before.key, op.before.status, op.after.status, op.reason, op.evidence)
        for op in stmt.operations
    ]
    after = state(ssn, keys, recorder.seen)
    first.merge(stmt)
    events = [(e.id, orjson.dumps(e.data, option=orjson.OPT_SORT_KEYS)) for e in first.commit()]
    return after, ops, events


@pytest.mark.parametrize("seed", range(1, 9), ids=[f"seed{s}" for s in range(1, 9)])
def test_evict_all_leaves_the_session_as_evict_one_by_one(seed: int) -> None:
    batched = run(seed, batch=True)
    plain = run(seed, batch=False)
    assert batched[0] == plain[0]
    assert batched[1] == plain[1]
    assert batched[2] == plain[2]
    assert len(plain[1]) >= 5  # the victims do get staged


@pytest.mark.parametrize("seed", range(1, 9), ids=[f"seed{s}" for s in range(1, 9)])
def test_commit_evictions_commits_what_evict_all_and_commit_do(seed: int) -> None:
    committed = []
    for direct in (True, False):
        ssn, first, victims, _, _ = prelude(seed)
        first.commit()
        stmt = ssn.statement()
        if direct:
            events = stmt.commit_evictions(victims)
        else:
            stmt.evict_all(victims)
            events = stmt.commit()
        assert ssn.decisions[-len(events) :] == events
        committed.append(
            [(e.id, orjson.dumps(e.data, option=orjson.OPT_SORT_KEYS)) for e in events]
        )
    assert committed[0] == committed[1]
    assert len(committed[0]) >= 5  # the victims do get committed


def test_commit_evictions_needs_an_empty_statement() -> None:
    _, first, victims, _, _ = prelude(1)
    assert len(first)
    with pytest.raises(StatementError):
        first.commit_evictions(victims)


def test_evict_all_skips_repeats_and_releasing_tasks() -> None:
    clustered = cluster(
        nodes=[node("n1")],
        tasks=[
            task("a", status=TaskStatus.RUNNING, node="n1"),
            task("b", status=TaskStatus.RELEASING, node="n1"),
        ],
    )
    ssn = session(clustered)
    a, b = ssn.tasks["ns/a"], ssn.tasks["ns/b"]
    stmt = ssn.statement()
    staged = stmt.evict_all([Victim(a, "r", {}, "s"), Victim(b, "r", {}, "s"), Victim(a, "r")])
    assert staged == 1
    assert [op.before.key for op in stmt.operations] == ["ns/a"]
    assert ssn.tasks["ns/a"].status == TaskStatus.RELEASING
