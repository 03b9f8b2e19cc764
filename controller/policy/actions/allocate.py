"""The ``allocate`` action: place pending pods, queue by queue, job by job.

Upstream: volcano-sh/volcano pkg/scheduler/actions/allocate/allocate.go, ``Action.Execute``.

Only Pending, non-BestEffort tasks of pods addressed to tide (``spec.schedulerName`` ==
the configured ``schedulerName``) of valid session jobs are placed. Queues are taken in
``queue_order`` (an overused queue is dropped), jobs in ``job_order``, tasks in
``task_order``. For each task: the queue must be ``allocatable``; nodes are searched
with a check that first requires ``init_resreq ≤ future_idle`` and then the session
predicates; the best node is chosen among nodes where the request fits ``idle``, else
among those where it fits only ``future_idle``, by node-order score. The task is
allocated (fits idle) or pipelined (fits only future idle). A job's statement is
committed only if the job is then ready (gang); a statement of a job that is merely
pipelined stays staged (visible to later actions, bound by none); otherwise it is
discarded. A committed job with tasks left goes back to its queue.

Nominations (:mod:`projections.nominations`): before placing anything, the room of each
Pending task nominated to a session node by an earlier preemption is held there (a
pipelined copy on the node alone), so the room its victims free is not taken by another
pod; when the task's own turn comes the hold is dropped and the task is placed as any
other (its node is then usually the one with the room). Volcano's nominated-node
shortcut is not reproduced.

Differences from Volcano: no hyper-node / sub-group variants, no scheduling gates,
and a pending PodGroup is not flipped to Inqueue (tide writes no PodGroup status; it
simply proceeds, as Volcano does without the ``enqueue`` action). Ties are broken
deterministically (see :mod:`controller.policy.framework.nodes`, the node search it uses).

The action runs on ``tick`` triggers only (``AllocateAction.triggers``): Volcano runs every
action in every session, but tide also opens sessions at TDM window ends and evict
periods, which are followed by a tick at the same instant; allocating there too would
only repeat the tick's work, and those cycles must stay cheap.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.policy.framework import jobs as j
from controller.policy.framework.errors import ConfigError
from controller.policy.framework.nodes import Gradients, best_node, fitting_nodes
from controller.policy.framework.ordering import Ordered
from controller.policy.framework.points import FitError
from controller.policy.framework.session import Session
from controller.policy.framework.statement import Statement
from controller.policy.framework.view import clone_task
from projections.model import JobInfo, QueueInfo, TaskInfo, TaskStatus

NAME = "allocate"
REASON = "allocate"


@dataclass(frozen=True)
class AllocateArgs:
    """``configurations: [{name: allocate, arguments: {predicateErrorCacheEnable}}]``."""

    predicate_error_cache: bool = True


def parse_args(raw: Mapping[str, Any]) -> AllocateArgs:
    value = raw.get("predicateErrorCacheEnable", True)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"
    if not isinstance(value, bool):
        raise ConfigError(f"{NAME}.predicateErrorCacheEnable", value, "must be true or false")
    return AllocateArgs(predicate_error_cache=value)


class AllocateAction:
    name = NAME
    #: Placement runs on the session tick only: a TDM trigger at the same instant is
    #: followed by a tick, which would allocate the same pods again.
    triggers: frozenset[str] | None = frozenset({"tick"})

    def __init__(self, args: AllocateArgs) -> None:
        self.args = args

    def execute(self, ssn: Session) -> None:
        by_job = _pending_by_job(ssn)
        if not by_job:
            return
        reservations = reserve_nominated(ssn, by_job)
        job_key = ssn.job_order_key()
        jobs_by_queue: dict[str, _JobHeap] = {}
        for job_id in sorted(by_job):
            job = ssn.jobs[job_id]
            if ssn.job_valid(job) is not None or job.queue not in ssn.queues:
                continue
            heap = jobs_by_queue.get(job.queue)
            if heap is None:
                heap = jobs_by_queue[job.queue] = _JobHeap(ssn, job_key)
            heap.push(job_id)
        queues = [
            Ordered(ssn.queues[name], ssn.queue_order_compare) for name in sorted(jobs_by_queue)
        ]
        heapq.heapify(queues)
        task_heaps: dict[str, list[Ordered[TaskInfo]]] = {}
        run = _Run(ssn, self.args, reservations)
        while queues:
            queue = heapq.heappop(queues).item
            if ssn.overused(queue):
                continue
            job_heap = jobs_by_queue[queue.name]
            if not job_heap:
                continue
            job = ssn.jobs[job_heap.pop()]
            tasks = task_heaps.get(job.id)
            if tasks is None:
                tasks = [Ordered(t, ssn.task_order_compare) for t in by_job[job.id]]
                heapq.heapify(tasks)
                task_heaps[job.id] = tasks
            if tasks:
                run.allocate_job(queue, job, tasks, job_heap)
            heapq.heappush(queues, Ordered(queue, ssn.queue_order_compare))


class _JobHeap:
    """One queue's jobs (by id) in the session's job order.

    When every plugin of the ``job_order`` chain registered a sort key
    (:meth:`Session.job_order_key`), an entry is ``(key, job id)``, its key computed when
    the job is pushed: heap steps compare tuples instead of walking the plugin chain. The
    order is the same: a job's key changes only when the job does, and a job changes only
    while it is out of the heap (allocate places the tasks of the job it popped; the
    statement commit that may follow its push back moves its tasks between states that
    gang counts alike and changes neither priority nor the preemptable flag). Keys end
    with namespace and name, so two entries never tie and the id is never compared.
    Otherwise an entry is an :class:`Ordered` that compares the jobs as they are now.
    """

    __slots__ = ("_cmp", "_heap", "_jobs", "_key")

    def __init__(self, ssn: Session, key: Callable[[JobInfo], tuple[Any, ...]] | None) -> None:
        self._heap: list[Any] = []
        self._jobs = ssn.jobs
        self._key = key
        self._cmp = _job_cmp(ssn) if key is None else None

    def push(self, job_id: str) -> None:
        if self._key is not None:
            heapq.heappush(self._heap, (self._key(self._jobs[job_id]), job_id))
        else:
            assert self._cmp is not None
            heapq.heappush(self._heap, Ordered(job_id, self._cmp))

    def pop(self) -> str:
        entry = heapq.heappop(self._heap)
        job_id: str = entry[1] if self._key is not None else entry.item
        return job_id

    def __len__(self) -> int:
        return len(self._heap)


def _job_cmp(ssn: Session) -> Callable[[str, str], int]:
    """Compare jobs by id through the session, so the heap sees their current state."""
    jobs = ssn.jobs
    return lambda left, right: ssn.job_order_compare(jobs[left], jobs[right])


def reserve_nominated(ssn: Session, by_job: dict[str, list[TaskInfo]]) -> dict[str, str]:
    """Hold each pending, nominated task's room on its nominated node; task key → node.

    The reservation is a pipelined copy of the task on the node only (its future idle
    shrinks); the task itself stays Pending and no plugin handler runs, so queue shares
    are not counted twice. It is released when the task's turn comes.
    """
    noms = getattr(ssn.world, "nominations", None)
    nodes: Mapping[str, str] = getattr(noms, "nodes", None) or {}
    if not nodes:
        return {}
    pending = {t.key: t for tasks in by_job.values() for t in tasks}
    out: dict[str, str] = {}
    for key in sorted(nodes):
        task, node = pending.get(key), nodes[key]
        if task is None or node not in ssn.nodes or ssn.view.node_has_task(node, key):
            continue
        ssn.view.node_add_task(node, clone_task(task, status=TaskStatus.PIPELINED, node_name=node))
        out[key] = node
    return out


def _pending_by_job(ssn: Session) -> dict[str, list[TaskInfo]]:
    scheduler = ssn.ctx.scheduler_name
    by_job: dict[str, list[TaskInfo]] = {}
    for task in ssn.view.pending_tasks():
        if task.scheduler_name != scheduler or task.init_resreq.is_empty():
            continue
        if ssn.jobs.lookup(task.job) is None:
            continue
        by_job.setdefault(task.job, []).append(task)
    return by_job


class _Run:
    """One execution's per-task work (the predicate error cache lives here)."""

    def __init__(self, ssn: Session, args: AllocateArgs, reservations: dict[str, str]) -> None:
        self.ssn = ssn
        self.args = args
        #: task key -> the node reserved for it (see reserve_nominated)
        self.reservations = reservations
        #: job id -> roles of its tasks that found no node in this run (Volcano's
        #: ``FitFailedRoles``; a role's later tasks are skipped, unless the role is "").
        self.failed_roles: dict[str, set[str]] = {}
        self.error_cache: dict[tuple[str, str], dict[int, FitError]] = {}
        #: (predicate memo ids, request) -> ``view.changes`` when a search with them found
        #: no node (see _search)
        self.no_node: dict[tuple[Any, ...], int] = {}

    def _search(self, task: TaskInfo, cache: dict[int, FitError] | None) -> Gradients:
        """:func:`fitting_nodes`, skipped when it is sure to find nothing.

        A search that found no node visited every node and left the cursor where it was.
        A later task with the same request and the same predicate keys, searched while no
        node changed (``view.changes``), is refused by every node for the same reasons;
        its error cache only removes nodes. So its answer is known: no node (the error
        cache it would fill serves only its role's later tasks, which a failed role skips
        anyway). Only when every predicate is keyed (their answers then depend on the key
        and the node alone), and only searches that started with an empty error cache are
        remembered (a filled one skips nodes without asking them).
        """
        ssn = self.ssn
        plan = ssn.plan("predicate", task)
        if any(memo is None for _, memo in plan):
            return fitting_nodes(ssn, task, cache=cache, plan=plan)
        req = task.init_resreq
        sign = (
            tuple(id(memo) for _, memo in plan),  # the memos live as long as the session
            req.milli_cpu,
            req.memory,
            tuple(sorted(req.scalars.items())),
        )
        changes = ssn.view.changes
        if self.no_node.get(sign) == changes:
            return Gradients()
        fresh = not cache  # an error cache may hide nodes that fit other tasks
        found = fitting_nodes(ssn, task, cache=cache, plan=plan)
        if not len(found) and fresh:
            self.no_node[sign] = changes
        return found

    def allocate_job(
        self,
        queue: QueueInfo,
        job: JobInfo,
        tasks: list[Ordered[TaskInfo]],
        job_heap: _JobHeap,
    ) -> None:
        ssn = self.ssn
        stmt = ssn.statement()
        while tasks:
            task = heapq.heappop(tasks).item
            reserved = self.reservations.pop(task.key, None)
            if reserved is not None:
                ssn.view.node_remove_task(reserved, task.key)
            if not ssn.allocatable(queue, task):
                continue
            role_key = (job.id, task.task_role)
            failed = self.failed_roles.setdefault(job.id, set())
            if task.task_role and task.task_role in failed:
                continue
            cache = None
            if self.args.predicate_error_cache and task.task_role:
                cache = self.error_cache.get(role_key)
                if cache is None and tasks:
                    # only a later task of this job can read what the search records: for
                    # the job's last one (most jobs are one pod) the search records nothing
                    cache = self.error_cache[role_key] = {}
            found = self._search(task, cache)
            if not len(found):
                failed.add(task.task_role)
                if j.need_continue_allocating(ssn.jobs[job.id], failed):
                    continue
                break
            self._place(stmt, queue, job, task, found)
            current = ssn.jobs[job.id]
            if ssn.job_ready(current) and tasks:
                job_heap.push(job.id)
                break
        current = ssn.jobs[job.id]
        if ssn.job_ready(current):
            stmt.commit()
        elif not ssn.job_pipelined(current):
            stmt.discard()

    def _place(
        self, stmt: Statement, queue: QueueInfo, job: JobInfo, task: TaskInfo, found: Gradients
    ) -> None:
        gradient, nodes = ("idle", found.idle) if found.idle else ("future-idle", found.future)
        node, score = best_node(self.ssn, task, nodes)
        evidence = {
            "node": node.name,
            "score": score,
            "gradient": gradient,
            "feasible": len(found),
            "job": job.id,
            "queue": queue.name,
        }
        if gradient == "idle":
            stmt.allocate(task, node.name, source=NAME, evidence=evidence, reason=REASON)
        else:
            stmt.pipeline(task, node.name)


def build(args: AllocateArgs) -> AllocateAction:
    return AllocateAction(args)
