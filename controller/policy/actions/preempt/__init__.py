"""The ``preempt`` action: within one queue, starving jobs evict cheaper tasks.

Upstream: volcano-sh/volcano pkg/scheduler/actions/preempt/preempt.go, ``Action.Execute``.

Preemptors are the jobs that are valid, whose queue exists and that are starving
(``job_starving``), grouped by queue, each with its Pending tasks of tide's scheduler.
Queues are served in ``queue_order``; in each queue:

* **phase 1, between jobs**: jobs in ``job_order``, one statement per job; its Pending
  tasks in ``task_order`` each try to preempt (:mod:`~.normal` or :mod:`~.topology`)
  tasks of *other* jobs of the same queue, while the job is starving; a task is tried
  once. The statement is committed only if the job is then pipelined (gang: enough of
  it is placed or waiting on releasing room), otherwise everything it staged is undone.
  A job whose statement placed a task goes back to the queue's jobs.
* **phase 2, within a job**: for each of the queue's starving jobs, its tasks Pending
  *now*, in ``task_order``, each try to preempt tasks of the same job, one statement per
  task, committed when it placed the task; the job stops at its first failure.

A victim must be Bound or Running, marked preemptable (:attr:`TaskInfo.preemptable`),
not a non-BestEffort task when the preemptor is BestEffort, and pass the session's
``preemptable`` intersection, and no PodDisruptionBudget may forbid its eviction given
the evictions the session has already staged (:mod:`controller.policy.framework.disruption`;
the node searches re-check before each eviction). Each eviction is a ``decision.evict`` with reason
``preempt`` (``tdm-preempt`` when TDM's preemptable function takes part, i.e. the
preemptor is neither preemptable nor revocable and TDM is enabled for ``preemptable``)
and evidence naming the preemptor, its priority, the phase, the node, the mode and the
node the preemptor is nominated to (``nominated``); the nomination is folded by
:mod:`projections.nominations` and keeps the room for the preemptor until it binds.

Differences from Volcano: a job whose PodGroup is still Pending is not skipped (tide has
no ``enqueue`` and allocate proceeds for it too); no pre-predicate, shard or network
topology support (no plugin here registers them); nodes allocate marked unresolvable are
not carried over (the predicate error cache of this run plays that part); orderings end
in deterministic tie-breaks; see :mod:`~.topology` for the candidate search.

The action runs on ``tick`` triggers only, after allocate, as allocate does.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

from controller.policy.actions.preempt.args import NAME, PreemptArgs, parse_args
from controller.policy.actions.preempt.dryrun import LightDryRun
from controller.policy.actions.preempt.fastpath import TaskRank
from controller.policy.actions.preempt.normal import normal_preempt
from controller.policy.actions.preempt.roombound import RoomBound
from controller.policy.actions.preempt.topology import topology_aware_preempt
from controller.policy.actions.preempt.victims import Filter, eligible, inter_job, intra_job
from controller.policy.framework.nodes import predicate_nodes, preempt_check_memo, preempt_nodes
from controller.policy.framework.ordering import Ordered
from controller.policy.framework.points import FitError
from controller.policy.framework.session import Session
from controller.policy.framework.statement import Statement
from projections.model import JobInfo, TaskInfo, TaskStatus
from streams.payloads import EvidenceDict

__all__ = ["NAME", "PreemptAction", "PreemptArgs", "build", "parse_args"]

REASON = "preempt"
TDM_REASON = "tdm-preempt"


def nominations_of(ssn: Session) -> dict[str, str]:
    """Task key → nominated node, from the world's nominations (empty without one)."""
    noms = getattr(ssn.world, "nominations", None)
    nodes = getattr(noms, "nodes", None)
    return dict(nodes) if isinstance(nodes, dict) else {}


class PreemptAction:
    name = NAME
    triggers: frozenset[str] | None = frozenset({"tick"})

    def __init__(self, args: PreemptArgs, *, fast: bool = True) -> None:
        self.args = args
        #: the shortcuts of :mod:`~.fastpath` (off only to compare against the plain path)
        self.fast = fast

    def execute(self, ssn: Session) -> None:
        _Run(ssn, self.args, fast=self.fast).execute()


class _Run:
    def __init__(self, ssn: Session, args: PreemptArgs, *, fast: bool = True) -> None:
        self.ssn = ssn
        self.args = args
        self.fast = fast
        self.rank = TaskRank.of(ssn) if fast else None
        self.light = LightDryRun.of(ssn) if fast else None
        self.bound = RoomBound.of(ssn) if fast else None
        self.error_cache: dict[tuple[str, str], dict[str, FitError]] = {}
        self.nominated = nominations_of(ssn)
        self.tdm = any(name == "tdm" for row in ssn.chain("preemptable") for name, _ in row)
        #: job id → queue, memoised for the victim filters (speed only)
        self.queues: dict[str, str | None] = {}

    def _job_cmp(self) -> Callable[[str, str], int]:
        jobs = self.ssn.jobs
        return lambda left, right: self.ssn.job_order_compare(jobs[left], jobs[right])

    def _pending(self, job: JobInfo) -> list[TaskInfo]:
        scheduler = self.ssn.ctx.scheduler_name
        return [
            job.tasks[key]
            for key in sorted(job.tasks)
            if job.tasks[key].status == TaskStatus.PENDING
            and job.tasks[key].scheduler_name == scheduler
        ]

    def _jobs_with_pending(self) -> set[str]:
        """Jobs with a Pending task of tide's scheduler now (the session's pending index).

        Only they can preempt: a job without one has no tasks for phase 1 or 2, and the
        empty statement it would get changes nothing. Pending tasks only leave that state
        within a session, so the set found at the start holds for the whole run.
        """
        scheduler = self.ssn.ctx.scheduler_name
        return {
            task.job for task in self.ssn.view.pending_tasks() if task.scheduler_name == scheduler
        }

    def execute(self) -> None:
        ssn = self.ssn
        by_queue: dict[str, list[Ordered[str]]] = {}
        under_request: dict[str, list[str]] = {}
        tasks: dict[str, list[Ordered[TaskInfo]]] = {}
        waiting = self._jobs_with_pending() if self.fast else None
        # the jobs with a pending task only (the others' statements would stay empty), in
        # the session's job key order still, without sorting every session job's key
        for job_id in ssn.jobs if waiting is None else sorted(waiting):
            job = ssn.jobs.lookup(job_id)
            if job is None:
                continue  # not a session job
            if ssn.job_valid(job) is not None or job.queue not in ssn.queues:
                continue
            if not ssn.job_starving(job):
                continue
            heapq.heappush(by_queue.setdefault(job.queue, []), Ordered(job_id, self._job_cmp()))
            under_request.setdefault(job.queue, []).append(job_id)
            heap = [Ordered(t, ssn.task_order_compare) for t in self._pending(job)]
            heapq.heapify(heap)
            tasks[job_id] = heap
        queues = [Ordered(ssn.queues[q], ssn.queue_order_compare) for q in sorted(by_queue)]
        heapq.heapify(queues)
        while queues:
            queue = heapq.heappop(queues).item
            self._inter_job(by_queue[queue.name], tasks)
            for job_id in under_request[queue.name]:
                self._intra_job(job_id)

    def _inter_job(
        self, jobs: list[Ordered[str]], tasks: dict[str, list[Ordered[TaskInfo]]]
    ) -> None:
        ssn = self.ssn
        while jobs:
            job_id = heapq.heappop(jobs).item
            stmt = ssn.statement()
            assigned = False
            while True:
                job = ssn.jobs.lookup(job_id)
                if job is None or not ssn.job_starving(job) or not tasks[job_id]:
                    break
                task = heapq.heappop(tasks[job_id]).item
                current = ssn.tasks.lookup(task.key) or task
                if current.status != TaskStatus.PENDING:
                    continue
                if self._preempt(
                    stmt, current, inter_job(ssn, current, job, self.queues), "inter-job"
                ):
                    assigned = True
            job = ssn.jobs.lookup(job_id)
            if job is not None and ssn.job_pipelined(job):
                stmt.commit()
                if assigned:
                    heapq.heappush(jobs, Ordered(job_id, self._job_cmp()))
            else:
                stmt.discard()

    def _intra_job(self, job_id: str) -> None:
        ssn = self.ssn
        job = ssn.jobs.lookup(job_id)
        if job is None:
            return
        heap = [Ordered(t, ssn.task_order_compare) for t in self._pending(job)]
        heapq.heapify(heap)
        while heap:
            task = heapq.heappop(heap).item
            stmt = ssn.statement()
            if not self._preempt(stmt, task, intra_job(task), "intra-job"):
                stmt.discard()
                break
            stmt.commit()

    def _preempt(self, stmt: Statement, preemptor: TaskInfo, accept: Filter, phase: str) -> bool:
        ssn = self.ssn
        nominated = self.nominated.get(preemptor.key) or preemptor.nominated_node
        if eligible(ssn, preemptor, nominated) is not None:
            return False
        cache = None
        if self.args.predicate_error_cache:
            cache = self.error_cache.setdefault((preemptor.job, preemptor.task_role), {})
        if self.fast:
            found = preempt_nodes(ssn, preemptor, cache=cache)
        else:
            found = predicate_nodes(ssn, preemptor, preempt_check_memo(ssn), cache=cache)
        if not found.feasible:
            return False
        if ssn.disruptions.active:
            accept = _within_budgets(ssn, accept)
        tdm = self.tdm and not preemptor.preemptable and not preemptor.revocable_zone
        mode = "topology-aware" if self.args.topology_aware else "normal"
        evict: EvidenceDict = {
            "reason": TDM_REASON if tdm else REASON,
            "source": NAME,
            "evidence": {
                "preemptor": preemptor.key,
                "preemptor_uid": preemptor.uid,
                "priority": preemptor.priority,
                "phase": phase,
                "mode": mode,
            },
        }
        if self.args.topology_aware:
            node = topology_aware_preempt(
                ssn,
                stmt,
                preemptor,
                found.feasible,
                accept=accept,
                args=self.args,
                evict=evict,
                rank=self.rank,
                light=self.light,
            )
        else:
            nodes = found.feasible
            if self.bound is not None:  # the nodes that cannot make room left out (speed only)
                nodes = self.bound.nodes(preemptor, nodes, phase=phase)
            node = normal_preempt(
                ssn, stmt, preemptor, nodes, accept=accept, evict=evict, rank=self.rank
            )
        return node is not None


def _within_budgets(ssn: Session, accept: Filter) -> Filter:
    """``accept``, less the tasks a disruption budget forbids evicting now."""
    blocking = ssn.disruptions.blocking
    return lambda task: accept(task) and blocking(task) is None


def build(args: PreemptArgs) -> PreemptAction:
    return PreemptAction(args)
