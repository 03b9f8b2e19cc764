"""The ``priority`` plugin: order jobs and tasks by priority; victims of lower priority.

Upstream: volcano-sh/volcano pkg/scheduler/plugins/priority/priority.go,
``priorityPlugin.OnSessionOpen``. Higher ``task.priority`` (``volcano.sh/task-priority``, else
``spec.priority``, default 1) schedules first; higher ``job.priority`` (the PodGroup's
PriorityClass value) schedules first. As a preemptable function it lets a preemptor
evict tasks of lower-priority jobs, or lower-priority tasks of its own job. It registers
no ``job_pipelined`` function (enabling that flag for priority has no effect).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controller.policy.framework.jobs import ready_task_num, waiting_task_num
from controller.policy.framework.plugin import PluginContext, no_args
from controller.policy.framework.points import Vote
from controller.policy.framework.session import Session
from projections.model import JobInfo, TaskInfo

NAME = "priority"


def parse_args(raw: Mapping[str, Any]) -> None:
    """No arguments."""
    no_args(raw)


def _higher_first(left: int, right: int) -> int:
    return -1 if left > right else (1 if left < right else 0)


def task_order(left: TaskInfo, right: TaskInfo) -> int:
    """Higher task priority first; equal → no opinion."""
    return _higher_first(left.priority, right.priority)


def job_order(left: JobInfo, right: JobInfo) -> int:
    """Higher job priority first; equal → no opinion."""
    return _higher_first(left.priority, right.priority)


def job_order_key(job: JobInfo) -> int:
    """A sort key equal to :func:`job_order` (ascending = first): higher priority first."""
    return -job.priority


def job_starving(job: JobInfo) -> bool:
    """A job starves while some of its tasks are neither ready nor pipelined."""
    return ready_task_num(job) + waiting_task_num(job) < len(job.tasks)


class PriorityPlugin:
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        def preemptable(
            preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
        ) -> tuple[list[TaskInfo], Vote]:
            # only the jobs' own fields are read: peek, and once per job (no clone forced)
            peek = ssn.jobs.peek
            preemptor_job = peek(preemptor.job)
            if preemptor_job is None:
                return [], Vote.PERMIT
            priorities: dict[str, int | None] = {}
            victims = []
            for preemptee in preemptees:
                job_id = preemptee.job
                try:
                    priority = priorities[job_id]
                except KeyError:
                    job = peek(job_id)
                    priority = priorities[job_id] = None if job is None else job.priority
                if priority is None:
                    continue
                if job_id != preemptor.job:
                    if priority < preemptor_job.priority:
                        victims.append(preemptee)
                elif preemptee.priority < preemptor.priority:
                    victims.append(preemptee)
            return victims, Vote.PERMIT

        ssn.add_task_order_fn(NAME, task_order)
        ssn.add_job_order_fn(NAME, job_order, key=job_order_key)
        ssn.add_preemptable_fn(NAME, preemptable)
        ssn.add_job_starving_fn(NAME, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def build(args: None, ctx: PluginContext) -> PriorityPlugin:
    del args, ctx
    return PriorityPlugin()
