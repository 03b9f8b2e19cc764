"""The proportion plugin (spec §5.4): water-filling, allocatable, overused, queue order."""

from __future__ import annotations

from controller.policy.framework.session import Session
from controller.policy.framework.simulate import Scratch
from controller.policy.plugins import proportion
from controller.policy.plugins.proportion import QueueAttr, water_fill
from projections.model import QueueInfo, Resource, TaskStatus
from tests.controller.policy.framework.scenario import (
    GI,
    cluster,
    ctx,
    job,
    node,
    on,
    session,
    task,
    tiers,
)

S = TaskStatus


def attr(
    name: str, weight: int, cpu: float, *, guarantee: float = 0, cap: float | None = None
) -> QueueAttr:
    return QueueAttr(
        name,
        weight,
        guarantee=Resource(guarantee, 0),
        real_capability=None if cap is None else Resource(cap, float("inf")),
        request=Resource(cpu, 0),
    )


def test_water_filling_redistributes_what_a_small_queue_leaves() -> None:
    small, big = attr("small", 1, 2000), attr("big", 1, 20000)
    water_fill([small, big], Resource(12000, 0))
    assert small.deserved.milli_cpu == 2000
    assert big.deserved.milli_cpu == 10000


def test_water_filling_by_weight_capability_and_guarantee() -> None:
    a, b = attr("a", 1, 50000), attr("b", 3, 50000)
    water_fill([a, b], Resource(12000, 0))
    assert (a.deserved.milli_cpu, b.deserved.milli_cpu) == (3000, 9000)
    capped, other = attr("capped", 1, 50000, cap=1000), attr("other", 1, 50000)
    water_fill([capped, other], Resource(12000, 0))
    assert (capped.deserved.milli_cpu, other.deserved.milli_cpu) == (1000, 11000)
    idle = attr("idle", 1, 0, guarantee=500)
    water_fill([idle], Resource(12000, 0))
    assert idle.deserved.milli_cpu == 500  # raised to its guarantee


def two_queue_session(running_a: int = 0) -> Session:
    """qa asks for 4 cpu (4 pods), qb for 8: of 8 cpu each deserves 4."""
    tasks = [task(f"a{i}", job="ns/a", cpu=1000, memory=GI) for i in range(4 - running_a)]
    tasks += [
        task(f"r{i}", job="ns/a", status=S.RUNNING, node="n1", cpu=1000, memory=GI)
        for i in range(running_a)
    ]
    tasks += [task(f"b{i}", job="ns/b", cpu=1000, memory=GI) for i in range(8)]
    c = cluster(
        nodes=[node("n1", cpu=8000, memory=8 * GI)],
        jobs=[job("ns/a", queue="qa"), job("ns/b", queue="qb")],
        queues=[QueueInfo("qa", weight=1), QueueInfo("qb", weight=1)],
        tasks=tasks,
    )
    return session(c, tiers([on("proportion")]), [proportion.build(None, ctx())])


def test_allocatable_until_deserved_then_overused() -> None:
    ssn = two_queue_session()
    qa, qb = ssn.queues["qa"], ssn.queues["qb"]
    stmt = ssn.statement()
    for name, queue in [(f"a{i}", qa) for i in range(4)] + [(f"b{i}", qb) for i in range(4)]:
        t = ssn.tasks[f"ns/{name}"]
        assert ssn.allocatable(queue, t), name
        stmt.allocate(t, "n1", source="test")
    assert not ssn.allocatable(qb, ssn.tasks["ns/b4"])  # qb deserves 4 cpu of 8
    assert ssn.overused(qa)
    # Volcano's overused compares every dimension of deserved, the ``pods`` scalar too:
    # qb deserves its 8 requested pods, so 4 allocated pods do not make it overused.
    assert not ssn.overused(qb)
    stmt.discard()
    assert ssn.allocatable(qb, ssn.tasks["ns/b4"]) and not ssn.overused(qa)


def test_queue_order_by_share_then_priority() -> None:
    ssn = two_queue_session(running_a=2)
    qa, qb = ssn.queues["qa"], ssn.queues["qb"]
    assert ssn.queue_order_compare(qb, qa) < 0  # qb has the smaller share
    qa.priority = 5
    assert ssn.queue_order_compare(qa, qb) < 0  # spec priority first


def test_closed_queue_is_not_allocatable() -> None:
    ssn = two_queue_session()
    ssn.queues["qa"].state = "Closed"
    assert not ssn.allocatable(ssn.queues["qa"], ssn.tasks["ns/a0"])


def test_lazy_attributes_equal_eager_ones() -> None:
    """Events before the first question are replayed onto the attributes."""
    eager, lazy = two_queue_session(running_a=1), two_queue_session(running_a=1)
    assert eager.overused(eager.queues["qa"]) is False  # computes now
    for ssn in (eager, lazy):
        stmt = ssn.statement()
        stmt.evict(ssn.tasks["ns/r0"], "r", source="s")
        for i in range(3):
            stmt.allocate(ssn.tasks[f"ns/a{i}"], "n1", source="s")
        stmt.allocate(ssn.tasks["ns/b0"], "n1", source="s")
    results = []
    for ssn in (eager, lazy):
        qa, qb = ssn.queues["qa"], ssn.queues["qb"]
        results.append(
            (
                ssn.overused(qa),
                ssn.allocatable(qb, ssn.tasks["ns/b1"]),
                ssn.queue_order_compare(qa, qb),
            )
        )
    assert results[0] == results[1] == (False, True, 1)


def test_simulate_hooks_move_scratch_shares_only() -> None:
    """The allocatable walk of ``test_allocatable_until_deserved_then_overused``, on a
    scratch: the same answers, and the session's own answers do not move."""
    ssn = two_queue_session()
    qa, qb = ssn.queues["qa"], ssn.queues["qb"]
    sc = Scratch(ssn, ["n1"])
    for name, queue in [(f"a{i}", qa) for i in range(4)] + [(f"b{i}", qb) for i in range(4)]:
        t = ssn.tasks[f"ns/{name}"]
        assert sc.allocatable(queue, t), name
        sc.add_task(t, t, "n1")
    b4 = ssn.tasks["ns/b4"]
    assert not sc.allocatable(qb, b4)  # qb deserves 4 cpu of 8
    assert ssn.allocatable(qb, b4) and not ssn.overused(qa)  # the session is untouched
    sc.remove_task(b4, ssn.tasks["ns/b0"], node="n1")
    assert sc.allocatable(qb, b4)
    closed = QueueInfo("qb", state="Closed")
    assert not sc.allocatable(closed, b4)
