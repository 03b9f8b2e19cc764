"""Job counting helpers over the model: Volcano's ``JobInfo`` methods.

Upstream: volcano-sh/volcano pkg/scheduler/api/job_info.go (``ReadyTaskNum``,
``WaitingTaskNum``, ``ValidTaskNum``, ``IsReady``, ``IsPipelined``, ``IsStarving``,
``CheckTaskValid``, ``CheckTaskPipelined``, ``CheckTaskReady``).

The model's :class:`~projections.model.JobInfo` is a plain record; the gang arithmetic
lives here so that gang, priority, tdm and the actions share one definition. Every
function counts the job's *current* tasks (the session's version when called on a
session job).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from projections.model import ALLOCATED_STATUSES, JobInfo, TaskInfo, TaskStatus

#: Volcano's ``ReadyTaskNum`` statuses.
READY_STATUSES = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED}
#: Volcano's ``ValidTaskNum`` statuses.
VALID_STATUSES = ALLOCATED_STATUSES | {
    TaskStatus.SUCCEEDED,
    TaskStatus.PIPELINED,
    TaskStatus.PENDING,
}
_PIPELINED_ROLE = ALLOCATED_STATUSES | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED}


def count(job: JobInfo, statuses: Iterable[TaskStatus]) -> int:
    wanted = frozenset(statuses)
    return sum(1 for task in job.tasks.values() if task.status in wanted)


def ready_task_num(job: JobInfo) -> int:
    return sum(1 for task in job.tasks.values() if task.status in READY_STATUSES)


def waiting_task_num(job: JobInfo) -> int:
    return sum(1 for task in job.tasks.values() if task.status == TaskStatus.PIPELINED)


def pending_best_effort_num(job: JobInfo) -> int:
    return sum(
        1 for task in job.tasks.values() if task.status == TaskStatus.PENDING and task.best_effort
    )


def valid_task_num(job: JobInfo) -> int:
    return sum(1 for task in job.tasks.values() if task.status in VALID_STATUSES)


def valid_at_least(job: JobInfo, need: int) -> bool:
    """``valid_task_num(job) >= need``, stopping at the ``need``-th valid task (gang asks
    it of every job allocate considers, most of them valid long before their last task)."""
    if need <= 0:
        return True
    valid = VALID_STATUSES
    for task in job.tasks.values():
        if task.status in valid:
            need -= 1
            if not need:
                return True
    return False


def is_ready(job: JobInfo) -> bool:
    """``ready + pending best-effort ≥ min_available``.

    One pass that stops at the ``min_available``-th counted task (the two counts are of
    disjoint statuses): a 128-pod job with 64 running is answered after about 64 tasks,
    not after two passes over 128 (gang asks it for every job allocate places).
    """
    need = job.min_available
    if need <= 0:
        return True
    ready, pending = READY_STATUSES, TaskStatus.PENDING
    for task in job.tasks.values():
        status = task.status
        if status in ready or (status == pending and task.best_effort):
            need -= 1
            if not need:
                return True
    return False


def is_pipelined(job: JobInfo) -> bool:
    """``waiting + ready + pending best-effort ≥ min_available``."""
    return (
        waiting_task_num(job) + ready_task_num(job) + pending_best_effort_num(job)
        >= job.min_available
    )


def is_starving(job: JobInfo) -> bool:
    """``waiting + ready < min_available``."""
    return waiting_task_num(job) + ready_task_num(job) < job.min_available


def _roles_reach(job: JobInfo, counted: Counter[str]) -> bool:
    if job.min_available < sum(job.task_min_available.values()):
        return True  # Volcano's short-circuit
    return all(counted[role] >= need for role, need in job.task_min_available.items() if need)


def _role_counts(tasks: Iterable[TaskInfo], statuses: frozenset[TaskStatus]) -> Counter[str]:
    counted: Counter[str] = Counter()
    for task in tasks:
        if task.status in statuses or (
            task.status == TaskStatus.PENDING and task.init_resreq.is_empty()
        ):
            counted[task.task_role] += 1
    return counted


def check_task_valid(job: JobInfo) -> bool:
    """Every role with a minimum counts enough valid tasks."""
    if not job.task_min_available:
        return True
    counted: Counter[str] = Counter(
        task.task_role for task in job.tasks.values() if task.status in VALID_STATUSES
    )
    return _roles_reach(job, counted)


def check_task_pipelined(job: JobInfo) -> bool:
    """Per role: allocated ∪ {Succeeded, Pipelined} plus best-effort Pending."""
    if not job.task_min_available:
        return True
    return _roles_reach(job, _role_counts(job.tasks.values(), _PIPELINED_ROLE))


def check_task_ready(job: JobInfo) -> bool:
    """Per role: allocated ∪ {Succeeded} plus best-effort Pending."""
    if not job.task_min_available:
        return True
    return _roles_reach(job, _role_counts(job.tasks.values(), READY_STATUSES))


def allocated_roles(job: JobInfo) -> Counter[str]:
    """Per role: tasks in allocated statuses or Succeeded, plus best-effort Pending ones."""
    return _role_counts(job.tasks.values(), READY_STATUSES)


def need_continue_allocating(job: JobInfo, failed_roles: Iterable[str]) -> bool:
    """Volcano's ``NeedContinueAllocating``: may allocate go on after a task found no node?

    No when every task must run (``min_available == #tasks``). When ``min_available`` is
    below the per-role minimums' sum: yes iff the ready tasks plus the Pending tasks of
    roles that have not failed can still reach ``min_available``. Otherwise: no iff a
    failed role with a minimum has fewer allocated tasks than that minimum.
    """
    if job.min_available == len(job.tasks):
        return False
    failed = set(failed_roles)
    if job.min_available < sum(job.task_min_available.values()):
        left = sum(
            1
            for task in job.tasks.values()
            if task.status == TaskStatus.PENDING and task.task_role not in failed
        )
        return ready_task_num(job) + left >= job.min_available
    allocated = allocated_roles(job)
    for role in sorted(failed):
        need = job.task_min_available.get(role, 0)
        if need and allocated[role] < need:
            return False
    return True
