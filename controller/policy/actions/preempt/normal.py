"""Normal preemption: walk the best-scored nodes, evict the cheapest victims until the
preemptor fits, then pipeline it there.

Upstream: volcano-sh/volcano pkg/scheduler/actions/preempt/preempt.go, ``normalPreempt``.

For each node, best score first (ties to the lowest name): the node's tasks that pass the
phase's filter go to the session's ``preemptable`` (the tier-wise intersection of the
plugins' answers); the node is skipped unless the victims could make room at all
(``validate_victims``); victims are then evicted in victim order until the preemptor
fits — its queue may take it (``allocatable``), its request fits the node's future idle,
and every session predicate passes — and the preemptor is pipelined on that node. On a
node where it still does not fit, the evictions are undone and the next node is tried.
A node where the preemptor already fits is used without evicting anything.

A victim whose eviction would take a PodDisruptionBudget below what it demands, counting
the evictions already staged in this session (the node's earlier victims included), is
skipped and the next one in victim order is tried
(:mod:`controller.policy.framework.disruption`); a victim a budget covers names the budgets and
their allowance in its evidence (``disruption_budgets``).
"""

from __future__ import annotations

from controller.policy.actions.preempt.fastpath import TaskRank
from controller.policy.actions.preempt.victims import (
    Filter,
    node_preemptees,
    same_tasks,
    validate_victims,
    victim_order,
)
from controller.policy.framework.disruption import Disruptions
from controller.policy.framework.errors import StatementError
from controller.policy.framework.nodes import memo_predicate, prioritize_nodes, sort_nodes
from controller.policy.framework.points import FitError
from controller.policy.framework.resources import fits
from controller.policy.framework.session import Session
from controller.policy.framework.statement import Statement
from projections.model import NodeInfo, QueueInfo, TaskInfo
from streams.payloads import EvidenceDict


def preemptor_fits(ssn: Session, queue: QueueInfo, preemptor: TaskInfo, node: NodeInfo) -> bool:
    """The queue may take the preemptor, its request fits the node's future idle, and
    every session predicate passes (re-asked after each eviction)."""
    if not ssn.allocatable(queue, preemptor):
        return False
    if not fits(preemptor.init_resreq, node, future=True):
        return False
    try:
        memo_predicate(ssn, preemptor, node)
    except FitError:
        return False
    return True


def normal_preempt(
    ssn: Session,
    stmt: Statement,
    preemptor: TaskInfo,
    nodes: list[NodeInfo],
    *,
    accept: Filter,
    evict: EvidenceDict,
    rank: TaskRank | None = None,
) -> str | None:
    """Try the nodes in score order; the node the preemptor was pipelined on, or None.

    Args:
        ssn: The session.
        stmt: The phase's statement; a successful node's operations are merged into it.
        preemptor: The pending task.
        nodes: The feasible nodes (:func:`controller.policy.framework.nodes.preempt_check`).
        accept: The phase's victim filter.
        evict: ``reason``, ``source`` and the evidence shared by every eviction.
        rank: The session's task order as a key (:mod:`~.fastpath`), or None.
    """
    job = ssn.jobs.lookup(preemptor.job)
    if job is None:
        return None
    queue = ssn.queues[job.queue]
    disruptions = ssn.disruptions
    order = sort_nodes(prioritize_nodes(ssn, preemptor, nodes))
    for name in order:
        node = ssn.nodes[name]
        preemptees = node_preemptees(node, accept)
        if not validate_victims(preemptor, node, preemptees):
            continue  # the plugins' answer is a subset: it cannot make room either
        victims = ssn.preemptable(preemptor, preemptees)
        if not same_tasks(victims, preemptees) and not validate_victims(preemptor, node, victims):
            continue
        queued = victim_order(ssn, preemptor, victims, rank)
        node_stmt = ssn.statement()
        ok = preemptor_fits(ssn, queue, preemptor, node)
        while not ok and queued:
            victim = queued.pop(0)
            evidence = {**evict["evidence"], "node": name, "nominated": name}
            if disruptions.active and not _within_budgets(disruptions, victim, evidence):
                continue
            node_stmt.evict(victim, evict["reason"], source=evict["source"], evidence=evidence)
            ok = preemptor_fits(ssn, queue, preemptor, ssn.nodes[name])
        if ok:
            try:
                node_stmt.pipeline(preemptor, name)
            except StatementError:
                node_stmt.discard()
                continue
            stmt.merge(node_stmt)
            return name
        node_stmt.discard()
    return None


def _within_budgets(disruptions: Disruptions, victim: TaskInfo, evidence: EvidenceDict) -> bool:
    """Whether the budgets let ``victim`` go now; names them in ``evidence`` if they do."""
    if disruptions.blocking(victim) is not None:
        return False
    covered = disruptions.evidence(victim)
    if covered:
        evidence["disruption_budgets"] = covered
    return True
