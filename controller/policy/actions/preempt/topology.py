"""Topology-aware preemption: dry runs on scratch copies, then the best candidate node.

Upstream: volcano-sh/volcano pkg/scheduler/actions/preempt/preempt.go
(``topologyAwarePreempt``, ``findCandidates``, ``DryRunPreemption``,
``SelectVictimsOnNode``, ``SelectCandidate``, ``pickOneNodeForPreemption``).

For each feasible node, a dry run on a :class:`~controller.policy.framework.simulate.Scratch`
(nothing in the session changes) removes victims cheapest first until the preemptor
fits (queue admission, future idle, the simulate predicates), then gives back the most
protected ones first while it still fits (the *reprieve*): what is left is a minimal
victim set. A victim a PodDisruptionBudget forbids, counting the session's evictions and
the dry run's earlier removals, is passed over in the greedy pass
(:mod:`controller.policy.framework.disruption`). A node needs at least one victim to be a
candidate. Among the candidates the
best node minimises, level by level, the highest victim priority, the sum of victim
priorities, the number of victims, and then prefers the latest start among the victims
of the highest priority; a tie left after the four levels goes to the lowest node name.

Differences from Volcano, on purpose:

* **Deterministic candidates.** Volcano starts at a random node and stops as soon as its
  racing workers found ``numCandidates``. Here the feasible nodes are visited in the
  node search's order starting at ``offset = blake2b(preemptor uid, trigger id) mod n``
  (a pure function of the log), and the candidates are the *first* ``numCandidates``
  found in that visiting order. The plain path runs the dry runs in batches of
  ``topologyAwarePreemptWorkerNum`` (the batch a worker pool would have in flight) and
  cuts an overshooting batch back to the first ``numCandidates``; the fast path stops at
  the ``numCandidates``-th candidate. The worker count changes how many dry runs the
  plain path does, never the answer.
* **A node where the preemptor still does not fit after removing every candidate victim
  is not a candidate** (Volcano's dry run keeps it and evicts there, e.g. when the queue's
  capability forbids the preemptor anyway).
* The first level uses the victims' highest ``spec.priority`` (Volcano reads the first
  victim of its reprieve order, which is not always the highest), and the last tie goes
  to the lowest node name (Volcano: map order).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from controller.policy.actions.preempt.args import PreemptArgs
from controller.policy.actions.preempt.dryrun import LightDryRun, usable
from controller.policy.actions.preempt.fastpath import TaskRank
from controller.policy.actions.preempt.victims import (
    Filter,
    by_job_of,
    iter_victim_order,
    node_preemptees,
    same_tasks,
    validate_victims,
)
from controller.policy.framework.errors import StatementError
from controller.policy.framework.points import FitError
from controller.policy.framework.session import Session
from controller.policy.framework.simulate import Scratch
from controller.policy.framework.statement import Statement
from projections.model import NodeInfo, QueueInfo, TaskInfo
from streams.payloads import EvidenceDict

_SHIFT = 2**31


@dataclass(frozen=True)
class Candidate:
    """A node and the minimal victims that make room there (most protected first)."""

    node: str
    victims: tuple[TaskInfo, ...]

    def scores(self, now: datetime) -> tuple[int, int, int, float]:
        """The four levels, each higher-is-better."""
        top = max(v.pod_priority for v in self.victims)
        starts = [(v.start_time or now).timestamp() for v in self.victims if v.pod_priority == top]
        return (
            -top,
            -sum(v.pod_priority + _SHIFT for v in self.victims),
            -len(self.victims),
            min(starts),
        )

    def evidence(self, now: datetime) -> EvidenceDict:
        highest, total, count, start = self.scores(now)
        return {
            "node": self.node,
            "highest_priority": -highest,
            "priority_sum": -total - count * _SHIFT,
            "victims": -count,
            "earliest_start": start,
        }


def offset_of(preemptor: TaskInfo, trigger_id: str, n: int) -> int:
    """Where the candidate search starts among ``n`` nodes: a hash of the preemptor's UID
    and the trigger's id, so it differs between preemptors and sessions, as Volcano's
    random offset does, yet is a pure function of the log."""
    digest = hashlib.blake2b(f"{preemptor.uid}\0{trigger_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % n if n else 0


def _fits(scratch: Scratch, queue: QueueInfo, preemptor: TaskInfo, node: str) -> bool:
    # the resource test first: it is the cheapest, and every check is free of side effects
    # on the session (the scratch state a hook makes on first use is the scratch's own)
    return (
        scratch.fits(preemptor, node, future=True)
        and scratch.allocatable(queue, preemptor)
        and scratch.predicate(preemptor, node) is None
    )


def select_victims_on_node(
    ssn: Session,
    preemptor: TaskInfo,
    queue: QueueInfo,
    node: NodeInfo,
    accept: Filter,
    rank: TaskRank | None = None,
    light: LightDryRun | None = None,
) -> tuple[TaskInfo, ...] | None:
    """The minimal victims on ``node`` (most protected first), or None if the node is
    no candidate. A dry run on a scratch copy: the session is not changed.

    A node where even every task ``accept`` lets through cannot make room is passed over
    before the plugins are asked (their answer is a subset of those tasks); ``rank``
    orders victims by key (:mod:`~.fastpath`); ``light`` answers on vectors where it
    applies (:mod:`~.dryrun`)."""
    read = None if light is None else light.reading(node, by_job_of(accept), rank)
    if read is not None:
        preemptees, room = read
        if not preemptees:
            return None
        if room is not None:
            # validate_victims over every candidate of the node: its sum, read once
            if not preemptor.init_resreq.less_equal(room):
                return None
        elif not validate_victims(preemptor, node, preemptees):
            return None
    else:
        preemptees = (
            node_preemptees(node, accept) if light is None else light.preemptees(node, accept)
        )
        if not preemptees or not validate_victims(preemptor, node, preemptees):
            return None
    victims = ssn.preemptable(preemptor, preemptees)
    if not victims:
        return None
    if not same_tasks(victims, preemptees) and not validate_victims(preemptor, node, victims):
        return None
    queued = iter_victim_order(ssn, preemptor, victims, rank)
    trial = ssn.disruptions.trial() if ssn.disruptions.active else None
    if light is not None and trial is None and usable(victims):
        try:
            free = light.predicate_free(preemptor, node)
            return light.select(preemptor, queue, node, queued, free=free)
        except (FitError, StatementError):
            return None
    scratch = Scratch(ssn, [node.name])
    potential: list[TaskInfo] = []
    try:
        fit = False
        for victim in queued:
            if trial is not None and trial.take(victim) is not None:
                continue  # a disruption budget forbids it, given the ones before it
            potential.append(scratch.remove_task(preemptor, victim))
            if _fits(scratch, queue, preemptor, node.name):
                fit = True
                break
        if not fit:
            return None
        chosen: list[TaskInfo] = []
        for victim in reversed(potential):
            scratch.add_task(preemptor, victim, node.name, status=victim.status)
            if not _fits(scratch, queue, preemptor, node.name):
                scratch.remove_task(preemptor, victim)
                chosen.append(victim)
    except (FitError, StatementError):
        return None
    return tuple(chosen) if chosen else None


def find_candidates(
    ssn: Session,
    preemptor: TaskInfo,
    queue: QueueInfo,
    nodes: list[NodeInfo],
    *,
    accept: Filter,
    args: PreemptArgs,
    rank: TaskRank | None = None,
    light: LightDryRun | None = None,
) -> list[Candidate]:
    """The first ``num_candidates`` candidates in visiting order from the offset.

    On the plain path (no ``rank``, no ``light``) the dry runs go in batches of
    ``topologyAwarePreemptWorkerNum``, as a worker pool would have them in flight, and an
    overshooting batch is cut back; with the fast path's shortcuts the search stops at
    the ``num_candidates``-th candidate: the same answer without the dry runs the cut
    would throw away.
    """
    n = len(nodes)
    if n == 0:
        return []
    want = args.num_candidates(n)
    start = offset_of(preemptor, ssn.trigger.id, n)
    found: list[Candidate] = []
    batch = 1 if rank is not None or light is not None else args.worker_num
    for first in range(0, n, batch):
        for i in range(first, min(first + batch, n)):
            node = nodes[(start + i) % n]
            victims = select_victims_on_node(ssn, preemptor, queue, node, accept, rank, light)
            if victims is not None:
                found.append(Candidate(node.name, victims))
        if len(found) >= want:
            break
    return found[:want]


def select_candidate(candidates: list[Candidate], now: datetime) -> Candidate | None:
    """The best candidate by the four levels, then the lowest node name."""
    if not candidates:
        return None
    return min(candidates, key=lambda c: (tuple(-s for s in c.scores(now)), c.node))


def ranked(candidates: list[Candidate], now: datetime) -> list[Candidate]:
    """Candidates best first (for the evidence)."""
    return sorted(candidates, key=lambda c: (tuple(-s for s in c.scores(now)), c.node))


def topology_aware_preempt(
    ssn: Session,
    stmt: Statement,
    preemptor: TaskInfo,
    nodes: list[NodeInfo],
    *,
    accept: Filter,
    args: PreemptArgs,
    evict: EvidenceDict,
    rank: TaskRank | None = None,
    light: LightDryRun | None = None,
) -> str | None:
    """Dry-run the candidates, evict the best one's victims and pipeline the preemptor
    there; the node, or None when no node is a candidate."""
    job = ssn.jobs.lookup(preemptor.job)
    if job is None:
        return None
    queue = ssn.queues[job.queue]
    candidates = find_candidates(
        ssn, preemptor, queue, nodes, accept=accept, args=args, rank=rank, light=light
    )
    order = ranked(candidates, ssn.now)
    if not order:
        return None
    best = order[0]
    scores = [c.evidence(ssn.now) for c in order[:3]]
    tmp = ssn.statement()
    for victim in best.victims:
        evidence = {
            **evict["evidence"],
            "node": best.node,
            "nominated": best.node,
            "candidates": scores,
        }
        if ssn.disruptions.active:
            covered = ssn.disruptions.evidence(victim)
            if covered:
                evidence["disruption_budgets"] = covered
        tmp.evict(victim, evict["reason"], source=evict["source"], evidence=evidence)
    try:
        tmp.pipeline(preemptor, best.node)
    except StatementError:
        tmp.discard()
        return None
    stmt.merge(tmp)
    return best.node
