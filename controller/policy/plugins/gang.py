"""The ``gang`` plugin: a job runs only when ``minAvailable`` of its tasks can.

Upstream: volcano-sh/volcano pkg/scheduler/plugins/gang/gang.go, ``gangPlugin.OnSessionOpen``.
A job is valid when it has enough valid tasks (overall and per
role); ready when enough are allocated; pipelined when enough are allocated or waiting
on releasing resources. As a preemptable function it never lets a victim break a gang:
a job gives up tasks only while its ready count stays above ``minAvailable``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from controller.policy.framework import jobs as j
from controller.policy.framework.plugin import PluginContext, no_args
from controller.policy.framework.points import Vote
from controller.policy.framework.session import Session
from projections.model import JobInfo, TaskInfo

NAME = "gang"
NOT_ENOUGH_PODS_OF_TASK = "NotEnoughPodsOfTask"
NOT_ENOUGH_PODS = "NotEnoughPods"


def parse_args(raw: Mapping[str, Any]) -> None:
    """No arguments."""
    no_args(raw)


def job_valid(job: JobInfo) -> str | None:
    """None when valid; else a reason naming Volcano's code."""
    if not j.check_task_valid(job):
        return f"{NOT_ENOUGH_PODS_OF_TASK}: not enough valid pods of each task for gang-scheduling"
    if not j.valid_at_least(job, job.min_available):
        valid = j.valid_task_num(job)
        return (
            f"{NOT_ENOUGH_PODS}: not enough valid tasks for gang-scheduling, "
            f"valid: {valid}, min: {job.min_available}"
        )
    return None


def job_order(left: JobInfo, right: JobInfo) -> int:
    """A job that is not ready yet goes before one that is."""
    lready, rready = j.is_ready(left), j.is_ready(right)
    if lready == rready:
        return 0
    return 1 if lready else -1


def job_ready(job: JobInfo) -> bool:
    return j.check_task_ready(job) and j.is_ready(job)


def job_pipelined(job: JobInfo) -> Vote:
    if j.check_task_pipelined(job) and j.is_pipelined(job):
        return Vote.PERMIT
    return Vote.REJECT


def job_starving(job: JobInfo) -> bool:
    return j.is_starving(job)


#: The attribute naming a job-order comparison's equivalent sort key (ascending = first).
SORT_KEY = "sort_key"


class GangPlugin:
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        memo: dict[str, tuple[tuple[int, int], bool]] = {}
        version = ssn.view.job_version

        def ready(job: JobInfo) -> bool:
            """``is_ready``, memoised per job version (job order asks it in every heap step)."""
            key = version(job)
            hit = memo.get(job.id)
            if hit is not None and hit[0] == key:
                return hit[1]
            value = j.is_ready(job)
            memo[job.id] = (key, value)
            return value

        def order(left: JobInfo, right: JobInfo) -> int:
            lready, rready = ready(left), ready(right)
            if lready == rready:
                return 0
            return 1 if lready else -1

        def evictable(
            preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
        ) -> tuple[list[TaskInfo], Vote]:
            del preemptor
            occupied: dict[str, int] = {}
            victims = []
            for preemptee in preemptees:
                job = ssn.jobs.lookup(preemptee.job)
                if job is None:
                    continue
                if job.id not in occupied:
                    occupied[job.id] = j.ready_task_num(job)
                if occupied[job.id] > job.min_available:
                    occupied[job.id] -= 1
                    victims.append(preemptee)
            return victims, Vote.PERMIT

        ssn.add_job_valid_fn(NAME, job_valid)
        ssn.add_preemptable_fn(NAME, evictable)
        ssn.add_reclaimable_fn(NAME, evictable)
        # the comparison as a sort key (ready jobs last), for callers that sort many jobs
        setattr(order, SORT_KEY, ready)
        # ready() is False for a job that is not ready: those sort first, as order() says
        ssn.add_job_order_fn(NAME, order, key=ready)
        ssn.add_job_ready_fn(NAME, job_ready)
        ssn.add_job_pipelined_fn(NAME, job_pipelined)
        ssn.add_job_starving_fn(NAME, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def build(args: None, ctx: PluginContext) -> GangPlugin:
    del args, ctx
    return GangPlugin()
