"""The ``backfill`` action: place BestEffort pods (no requests) wherever the predicates
allow.

Upstream: volcano-sh/volcano pkg/scheduler/actions/backfill/backfill.go, ``Action.Execute``
and ``pickUpPendingTasks``. Allocate leaves BestEffort tasks alone (they would fit every
node); backfill takes the Pending BestEffort tasks of tide's scheduler, of valid session
jobs, queue by queue in ``queue_order``, job by job in ``job_order``, task by task in
``task_order``; for each it searches the nodes with allocate's check (the request — a
pod slot — fits future idle, then the session predicates), scores the feasible ones and
allocates the task on the best (ties to the lowest node name). As Volcano's
``Session.Allocate``, the task's job is bound once it is ready (gang), otherwise its
allocations stay staged in the session. Decisions are ``decision.bind`` with reason
``allocate`` and source ``backfill``.

Differences from Volcano: a job whose PodGroup is still Pending is not skipped (tide has
no ``enqueue``; as allocate), no pre-predicate or shard support, no scheduling gates; the
predicate error cache is not used (one search per BestEffort pod is cheap).

Runs on ``tick`` triggers only, as allocate.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cmp_to_key
from typing import Any

from controller.policy.framework.nodes import (
    allocate_check,
    predicate_nodes,
    prioritize_nodes,
    select_best_node,
)
from controller.policy.framework.plugin import no_args
from controller.policy.framework.session import Session
from controller.policy.framework.statement import Statement
from projections.model import JobInfo, TaskInfo, TaskStatus

NAME = "backfill"
REASON = "allocate"


def parse_args(raw: Mapping[str, Any]) -> None:
    """No arguments (Volcano's ``predicateErrorCacheEnable`` is accepted and ignored)."""
    no_args(raw)


def _best_effort_by_job(ssn: Session) -> dict[str, list[TaskInfo]]:
    scheduler = ssn.ctx.scheduler_name
    out: dict[str, list[TaskInfo]] = {}
    for task in ssn.view.pending_tasks():
        if task.scheduler_name == scheduler and task.init_resreq.is_empty():
            out.setdefault(task.job, []).append(task)
    return out


class BackfillAction:
    name = NAME
    triggers: frozenset[str] | None = frozenset({"tick"})

    def execute(self, ssn: Session) -> None:
        by_job = _best_effort_by_job(ssn)
        if not by_job:
            return
        jobs: dict[str, list[JobInfo]] = {}
        for job_id in sorted(by_job):
            job = ssn.jobs.lookup(job_id)
            if job is None or job.queue not in ssn.queues or ssn.job_valid(job) is not None:
                continue
            jobs.setdefault(job.queue, []).append(job)
        queues = sorted(
            (ssn.queues[name] for name in jobs), key=cmp_to_key(ssn.queue_order_compare)
        )
        for queue in queues:
            for job in sorted(jobs[queue.name], key=cmp_to_key(ssn.job_order_compare)):
                stmt = ssn.statement()
                tasks = sorted(by_job[job.id], key=cmp_to_key(ssn.task_order_compare))
                for task in tasks:
                    self._place(ssn, stmt, job, task)
                current = ssn.jobs.lookup(job.id)
                if current is not None and ssn.job_ready(current):
                    stmt.commit()

    def _place(self, ssn: Session, stmt: Statement, job: JobInfo, task: TaskInfo) -> None:
        current = ssn.tasks.lookup(task.key)
        if current is None or current.status != TaskStatus.PENDING:
            return
        found = predicate_nodes(ssn, current, allocate_check(ssn))
        if not found.feasible:
            return
        best = select_best_node(prioritize_nodes(ssn, current, found.feasible))
        if best is None:
            return
        node, score = best
        evidence = {
            "node": node,
            "score": score,
            "feasible": len(found.feasible),
            "job": job.id,
            "queue": job.queue,
            "best_effort": True,
        }
        stmt.allocate(current, node, source=NAME, evidence=evidence, reason=REASON)


def build(args: None) -> BackfillAction:
    del args
    return BackfillAction()
