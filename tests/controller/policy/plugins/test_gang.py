"""The gang plugin (spec §5.1): validity, readiness, pipelining, and victims within gangs."""

from __future__ import annotations

import pytest

from controller.policy.framework import points as p
from controller.policy.framework.points import Vote
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import gang
from projections.model import JobInfo, TaskStatus
from tests.controller.policy.framework.scenario import cluster, ctx, job, node, session, task, tiers

S = TaskStatus


def gang_job(
    min_available: int,
    *statuses: TaskStatus,
    task_min: dict[str, int] | None = None,
    roles: list[str] | None = None,
) -> JobInfo:
    j = job("ns/g", min_available=min_available, task_min=task_min)
    for i, status in enumerate(statuses):
        t = task(
            f"g-{i}",
            job="ns/g",
            status=status,
            role=(roles or [""] * 99)[i],
            node="n1" if status != S.PENDING else "",
        )
        j.tasks[t.key] = t
    return j


@pytest.mark.parametrize(
    ("j", "valid"),
    [
        (gang_job(2, S.PENDING, S.PENDING), True),
        (gang_job(3, S.PENDING, S.PENDING), False),
        (gang_job(2, S.RUNNING, S.FAILED), False),
        (gang_job(2, S.PIPELINED, S.SUCCEEDED), True),
        (
            gang_job(
                2, S.PENDING, S.PENDING, task_min={"ps": 1, "worker": 1}, roles=["worker", "worker"]
            ),
            False,
        ),
    ],
)
def test_job_valid(j: JobInfo, valid: bool) -> None:
    reason = gang.job_valid(j)
    assert (reason is None) is valid
    if not valid:
        assert reason is not None and reason.startswith(("NotEnoughPods", "NotEnoughPodsOfTask"))


def test_ready_pipelined_starving() -> None:
    ready = gang_job(2, S.RUNNING, S.ALLOCATED, S.PENDING)
    waiting = gang_job(2, S.RUNNING, S.PIPELINED)
    short = gang_job(2, S.RUNNING, S.PENDING)
    assert gang.job_ready(ready) and not gang.job_ready(waiting)
    assert gang.job_pipelined(waiting) == Vote.PERMIT
    assert gang.job_pipelined(short) == Vote.REJECT
    assert gang.job_starving(short) and not gang.job_starving(waiting)


def test_job_order_puts_unready_jobs_first() -> None:
    ready, unready = gang_job(1, S.RUNNING), gang_job(1, S.PENDING)
    assert gang.job_order(unready, ready) == -1
    assert gang.job_order(ready, unready) == 1
    assert gang.job_order(ready, ready) == 0


def test_victims_never_break_a_gang() -> None:
    c = cluster(
        nodes=[node("n1")],
        jobs=[job("ns/g", min_available=2), job("ns/solo", min_available=1)],
        tasks=[
            *(task(f"g-{i}", job="ns/g", status=S.RUNNING, node="n1") for i in range(3)),
            task("solo-0", job="ns/solo", status=S.RUNNING, node="n1"),
            task("ghost", job="ns/ghost", status=S.RUNNING, node="n1"),
        ],
    )
    del c.jobs["ns/ghost"]
    ssn = session(c, tiers([PluginConf.of("gang", p.PREEMPTABLE)]), [gang.build(None, ctx())])
    preemptees = [ssn.tasks[k] for k in ("ns/g-0", "ns/g-1", "ns/g-2", "ns/solo-0", "ns/ghost")]
    victims = ssn.preemptable(task("p"), preemptees)
    assert [v.name for v in victims] == ["g-0"]  # 3 ready > 2 once; solo at its minimum
