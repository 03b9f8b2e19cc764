"""The priority plugin (spec §5.2): orders and preemptable-by-priority."""

from __future__ import annotations

from controller.policy.framework import points as p
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import priority
from projections.model import TaskStatus
from tests.controller.policy.framework.scenario import cluster, ctx, job, node, session, task, tiers

RUNNING = TaskStatus.RUNNING


def test_orders_prefer_higher_priority() -> None:
    assert priority.task_order(task("a", priority=5), task("b", priority=1)) == -1
    assert priority.task_order(task("a", priority=1), task("b", priority=5)) == 1
    assert priority.task_order(task("a"), task("b")) == 0
    assert priority.job_order(job("ns/a", priority=10), job("ns/b", priority=0)) == -1


def test_preemptable_by_job_priority_or_task_priority_within_a_job() -> None:
    c = cluster(
        nodes=[node("n1")],
        jobs=[
            job("ns/high", priority=100),
            job("ns/low", priority=1),
            job("ns/same", priority=100),
        ],
        tasks=[
            task("p", job="ns/high", priority=5),
            task("low-0", job="ns/low", status=RUNNING, node="n1"),
            task("same-0", job="ns/same", status=RUNNING, node="n1"),
            task("high-lo", job="ns/high", status=RUNNING, node="n1", priority=1),
            task("high-hi", job="ns/high", status=RUNNING, node="n1", priority=9),
            task("orphan", job="ns/none", status=RUNNING, node="n1"),
        ],
    )
    del c.jobs["ns/none"]
    ssn = session(
        c, tiers([PluginConf.of("priority", p.PREEMPTABLE)]), [priority.build(None, ctx())]
    )
    preemptees = [
        ssn.tasks[k] for k in ("ns/low-0", "ns/same-0", "ns/high-lo", "ns/high-hi", "ns/orphan")
    ]
    victims = ssn.preemptable(ssn.tasks["ns/p"], preemptees)
    assert [v.name for v in victims] == ["low-0", "high-lo"]


def test_preemptor_without_job_permits_nothing() -> None:
    c = cluster(nodes=[node("n1")], tasks=[task("v", status=RUNNING, node="n1")])
    ssn = session(
        c, tiers([PluginConf.of("priority", p.PREEMPTABLE)]), [priority.build(None, ctx())]
    )
    assert ssn.preemptable(task("p", job="ns/ghost"), [ssn.tasks["ns/v"]]) == []


def test_starving_until_every_task_is_ready_or_waiting() -> None:
    j = job("ns/j", min_available=1)
    c = cluster(
        jobs=[j],
        nodes=[node("n1")],
        tasks=[task("a", job="ns/j", status=RUNNING, node="n1"), task("b", job="ns/j")],
    )
    assert priority.job_starving(c.jobs["ns/j"]) is True
    c.jobs["ns/j"].tasks["ns/b"].status = TaskStatus.PIPELINED
    assert priority.job_starving(c.jobs["ns/j"]) is False
