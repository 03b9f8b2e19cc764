"""preempt's victim order computed by groups equals the pairwise comparison it replaced
(Volcano's ``BuildVictimsPriorityQueue`` comparator, ending in the task key)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cmp_to_key

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.policy.actions.preempt.victims import victim_order
from controller.policy.engine import build_cycle
from controller.policy.framework.session import Session, open_session
from controller.policy.loader import load_config
from projections.model import TaskInfo
from tests.builders import at, watch
from tests.controller.policy.actions.preempt.cases import (
    UPSTREAM_TIERS,
    config,
    group,
    node,
    pod,
    queue,
)
from tests.controller.policy.framework.scenario import trigger, world_of


def pairwise(ssn: Session, preemptor: TaskInfo, victims: Sequence[TaskInfo]) -> list[TaskInfo]:
    """The reference: every pair compared, as the action did before."""
    jobs = ssn.jobs

    def inner(left: TaskInfo, right: TaskInfo) -> int:
        if left.job == right.job:
            return -ssn.task_order_compare(left, right)
        lj, rj = jobs.lookup(left.job), jobs.lookup(right.job)
        if lj is None or rj is None:
            if lj is None and rj is not None:
                return -1
            if rj is None and lj is not None:
                return 1
            return -ssn.task_order_compare(left, right)
        pj = jobs.lookup(preemptor.job)
        if pj is not None and lj.queue != rj.queue:
            lq, rq = ssn.queues.get(lj.queue), ssn.queues.get(rj.queue)
            if lq is not None and rq is not None:
                return -ssn.queue_order_compare(lq, rq)
        return -ssn.job_order_compare(lj, rj) or -ssn.task_order_compare(left, right)

    def compare(left: TaskInfo, right: TaskInfo) -> int:
        return inner(left, right) or (left.key > right.key) - (left.key < right.key)

    return sorted(victims, key=cmp_to_key(compare))


VICTIM = st.tuples(
    st.integers(0, 3),  # job
    st.integers(0, 2),  # pod priority
    st.integers(0, 30),  # creation minute
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(VICTIM, min_size=1, max_size=14), st.permutations(range(14)))
def test_grouped_order_equals_pairwise(
    victims: list[tuple[int, int, int]], perm: list[int]
) -> None:
    events = [watch("queues", queue("q1")), watch("queues", queue("q2"))]
    events.append(watch("nodes", node("n1", "64", "64G", pods="100")))
    for j in range(4):
        events.append(watch("podgroups", group(f"pg{j}", 1, queue=f"q{1 + j % 2}")))
    for i, (j, prio, minute) in enumerate(victims):
        events.append(
            watch("pods", pod(f"v-{i}", f"pg{j}", node="n1", priority=prio, created=at(minute)))
        )
    events.append(watch("pods", pod("urgent", "pg0", priority=100)))
    conf = load_config(config(tiers=UPSTREAM_TIERS))
    built = build_cycle(conf)
    ssn = open_session(
        world_of(events), trigger(at(40)), tiers=conf.tiers, plugins=built.plugins, ctx=built.ctx
    )
    tasks = [ssn.tasks[f"c1/v-{i}"] for i in range(len(victims))]
    shuffled = [tasks[k] for k in perm if k < len(tasks)]
    preemptor = ssn.tasks["c1/urgent"]
    assert [t.key for t in victim_order(ssn, preemptor, shuffled)] == [
        t.key for t in pairwise(ssn, preemptor, shuffled)
    ]
