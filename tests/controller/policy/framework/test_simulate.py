"""The simulation seam: scratch node copies, the simulate extension points, and proof
that a dry run leaves the session, its view and its plugins' handlers untouched."""

from __future__ import annotations

from typing import Any

import pytest

from controller.policy.framework import nodes as nodes_api
from controller.policy.framework import points as p
from controller.policy.framework.errors import StatementError
from controller.policy.framework.plugin import Plugin
from controller.policy.framework.points import FitError, FitStatus
from controller.policy.framework.session import Session
from controller.policy.framework.simulate import Scratch
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import gang, predicates, proportion
from controller.policy.plugins.predicates import PredicatesArgs
from projections.model import NodeInfo, QueueInfo, Resource, TaskInfo, TaskStatus
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

# -- the extension points: registration, flags, tier order ----------------------------


class Recorder:
    """Registers every simulate hook; records its calls into a shared list."""

    def __init__(self, name: str, calls: list[str], *, refuse: bool = False) -> None:
        self.name = name
        self.calls = calls
        self.refuse = refuse

    def on_session_open(self, ssn: Session) -> None:
        name, calls = self.name, self.calls

        def add(sc: Scratch, ts: TaskInfo, t: TaskInfo, n: NodeInfo) -> None:
            calls.append(f"{name}.add")

        def remove(sc: Scratch, ts: TaskInfo, t: TaskInfo, n: NodeInfo) -> None:
            calls.append(f"{name}.remove")

        def predicate(sc: Scratch, t: TaskInfo, n: NodeInfo) -> None:
            calls.append(f"{name}.predicate")
            if self.refuse:
                raise FitError(FitStatus.UNSCHEDULABLE, "no", plugin=name)

        def allocatable(sc: Scratch, q: QueueInfo, t: TaskInfo) -> bool:
            calls.append(f"{name}.allocatable")
            return not self.refuse

        ssn.add_simulate_add_task_fn(name, add)
        ssn.add_simulate_remove_task_fn(name, remove)
        ssn.add_simulate_predicate_fn(name, predicate)
        ssn.add_simulate_allocatable_fn(name, allocatable)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def recorded(flags: tuple[str, ...], *, refuse: bool = False) -> list[str]:
    calls: list[str] = []
    c = cluster(
        nodes=[node("n1")],
        tasks=[task("p"), task("v", status=S.RUNNING, node="n1")],
    )
    rows = tiers([PluginConf.of("first", *flags)], [on("second")])
    ssn = session(c, rows, [Recorder("second", calls), Recorder("first", calls, refuse=refuse)])
    sc = Scratch(ssn, ["n1"])
    preemptor = ssn.tasks["ns/p"]
    sc.remove_task(preemptor, ssn.tasks["ns/v"])
    sc.predicate(preemptor, "n1")
    sc.allocatable(ssn.queues["default"], preemptor)
    sc.add_task(preemptor, preemptor, "n1")
    return calls


@pytest.mark.parametrize(
    ("flags", "first_calls"),
    [
        ((), []),
        ((p.PREEMPTABLE,), ["remove", "add"]),
        ((p.ALLOCATABLE,), ["remove", "allocatable", "add"]),
        ((p.PREDICATE,), ["predicate"]),
        (
            (p.PREEMPTABLE, p.ALLOCATABLE, p.PREDICATE),
            ["remove", "predicate", "allocatable", "add"],
        ),
    ],
)
def test_simulate_points_are_gated_by_volcanos_flags_and_walked_in_tier_order(
    flags: tuple[str, ...], first_calls: list[str]
) -> None:
    calls = recorded(flags)
    firsts = [c.split(".")[1] for c in calls if c.startswith("first.")]
    assert firsts == first_calls
    seconds = [c.split(".")[1] for c in calls if c.startswith("second.")]
    assert seconds == ["remove", "predicate", "allocatable", "add"]
    for point in first_calls:  # the earlier tier's hook runs first
        assert calls.index(f"first.{point}") < calls.index(f"second.{point}")


def test_a_refusing_hook_stops_the_walk() -> None:
    calls = recorded((p.PREDICATE, p.ALLOCATABLE), refuse=True)
    assert "first.predicate" in calls and "second.predicate" not in calls
    assert "first.allocatable" in calls and "second.allocatable" not in calls


def test_scratch_refuses_nodes_and_tasks_it_does_not_hold() -> None:
    ssn = session(cluster(nodes=[node("n1"), node("n2")], tasks=[task("p")]))
    with pytest.raises(StatementError, match="not in the session"):
        Scratch(ssn, ["nope"])
    sc = Scratch(ssn, ["n2", "n1", "n1"])
    assert list(sc.nodes) == ["n1", "n2"]
    t = ssn.tasks["ns/p"]
    with pytest.raises(StatementError, match="not on a scratch node"):
        sc.remove_task(t, t, node="n1")
    with pytest.raises(StatementError, match="not in the scratch"):
        sc.add_task(t, t, "n3")
    sc.add_task(t, t, "n1")
    with pytest.raises(StatementError, match="already on scratch node"):
        sc.add_task(t, t, "n1")


# -- a dry run changes nothing ---------------------------------------------------------


class Counter:
    """Counts the session's allocate / deallocate events."""

    name = "counter"

    def __init__(self) -> None:
        self.allocate = 0
        self.deallocate = 0

    def on_session_open(self, ssn: Session) -> None:
        def up(t: TaskInfo) -> None:
            self.allocate += 1

        def down(t: TaskInfo) -> None:
            self.deallocate += 1

        ssn.add_event_handler(self.name, allocate=up, deallocate=down)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def preempt_world(**node_args: Any) -> tuple[Session, Counter]:
    """n1 (4 cpu, 3 pods) full of low-queue victims; n2 half used; n3 tainted; a pending
    high-queue preemptor asking 3 cpu."""
    low = [
        task("v1", job="ns/low1", status=S.RUNNING, node="n1", cpu=1500, memory=GI),
        task("v2", job="ns/low2", status=S.RUNNING, node="n1", cpu=1500, memory=GI),
        task("v3", job="ns/low3", status=S.RUNNING, node="n1", cpu=500, memory=GI),
        task("w1", job="ns/low4", status=S.RUNNING, node="n2", cpu=2000, memory=GI),
        task("t1", job="ns/low5", status=S.RUNNING, node="n3", cpu=4000, memory=GI),
    ]
    c = cluster(
        nodes=[
            node("n1", cpu=4000, memory=8 * GI, pods=3, **node_args),
            node("n2", cpu=4000, memory=8 * GI),
            node("n3", cpu=4000, memory=8 * GI, taints=[{"key": "k", "effect": "NoSchedule"}]),
        ],
        jobs=[job(f"ns/low{i}", queue="qlow") for i in range(1, 6)] + [job("ns/hi", queue="qhigh")],
        queues=[QueueInfo("qlow"), QueueInfo("qhigh")],
        tasks=[*low, task("p", job="ns/hi", cpu=3000, memory=GI, priority=9)],
    )
    counter = Counter()
    plugins: list[Plugin] = [
        gang.build(None, ctx()),
        predicates.build(PredicatesArgs(), ctx()),
        proportion.build(None, ctx()),
        counter,
    ]
    rows = tiers([on("gang"), on("counter")], [on("predicates"), on("proportion")])
    return session(c, rows, plugins), counter


def _res(r: Resource) -> tuple[float, float, list[tuple[str, float]]]:
    return r.milli_cpu, r.memory, sorted(r.scalars.items())


def snapshot(ssn: Session, counter: Counter) -> Any:
    """Everything a dry run could disturb, as plain data (node identities included: a
    scratch must not make the view clone a node)."""
    view = ssn.view
    nodes = [
        (
            n.name,
            id(n),
            _res(n.idle),
            _res(n.used),
            _res(n.releasing),
            _res(n.pipelined),
            sorted((k, t.status, t.node_name) for k, t in n.tasks.items()),
        )
        for n in view.node_list
    ]
    jobs = {
        jid: sorted((k, t.status, t.node_name) for k, t in ssn.jobs[jid].tasks.items())
        for jid in ssn.jobs
    }
    tasks = {k: (t.status, t.node_name) for k, t in ssn.tasks.items()}
    p_ = ssn.tasks["ns/p"]
    answers = {
        q: (ssn.allocatable(ssn.queues[q], p_), ssn.overused(ssn.queues[q])) for q in ssn.queues
    }
    order = ssn.queue_order_compare(ssn.queues["qlow"], ssn.queues["qhigh"])
    return (
        nodes,
        list(view.versions),
        jobs,
        tasks,
        answers,
        order,
        [ssn.job_ready(ssn.jobs[j]) for j in ssn.jobs],
        ssn.predicate_cursor,
        len(ssn.decisions),
        (counter.allocate, counter.deallocate),
    )


def test_a_dry_run_leaves_the_session_its_view_and_its_handlers_untouched() -> None:
    ssn, counter = preempt_world()
    before = snapshot(ssn, counter)
    preemptor = ssn.tasks["ns/p"]
    sc = Scratch(ssn, ["n1", "n2"])
    sc.remove_task(preemptor, ssn.tasks["ns/v1"])
    sc.remove_task(preemptor, ssn.tasks["ns/v2"])
    sc.add_task(preemptor, preemptor, "n1")
    sc.remove_task(preemptor, ssn.tasks["ns/w1"])
    sc.add_task(preemptor, ssn.tasks["ns/v1"], "n2", status=S.PIPELINED)
    sc.remove_task(preemptor, preemptor, node="n1")
    assert sc.predicate(preemptor, "n1") is None
    assert sc.allocatable(ssn.queues["qhigh"], preemptor)
    assert sc.fits(preemptor, "n1")
    assert snapshot(ssn, counter) == before
    # the scratch itself did change: the copy of n1 lost two victims and the preemptor
    n1 = sc.node("n1")
    assert sorted(n1.tasks) == ["ns/v3"]
    assert n1.idle.milli_cpu == 3500
    assert [t.name for t in sc.nodes["n1"].removed] == ["v1", "v2", "p"]
    assert [(t.name, t.status) for t in sc.nodes["n2"].added] == [("v1", S.PIPELINED)]
    assert sc.node("n2").pipelined.milli_cpu == 1500
    assert ssn.nodes["n1"].idle.milli_cpu == 500  # the session's node did not


def test_scratch_state_is_per_scratch() -> None:
    ssn, _ = preempt_world()
    preemptor = ssn.tasks["ns/p"]
    one, two = Scratch(ssn, ["n1"]), Scratch(ssn, ["n1"])
    one.remove_task(preemptor, ssn.tasks["ns/v1"])
    assert one.node("n1").idle.milli_cpu == 2000
    assert two.node("n1").idle.milli_cpu == 500
    made: list[int] = []

    def make() -> int:
        made.append(1)
        return len(made)

    assert one.state("x", make) == 1
    assert one.state("x", make) == 1  # made once
    assert two.state("x", make) == 2


# -- a preempt-like what-if, through the public API only -------------------------------


def what_if(ssn: Session, preemptor: TaskInfo, node_name: str, victims: list[str]) -> str:
    """Would ``preemptor`` fit ``node_name`` and pass its predicates once ``victims`` left?"""
    sc = Scratch(ssn, [node_name])
    for key in victims:
        sc.remove_task(preemptor, ssn.tasks[key])
    error = sc.predicate(preemptor, node_name)
    if error is not None:
        return f"predicate: {error.reason}"
    if not sc.fits(preemptor, node_name):
        return "insufficient"
    job = ssn.jobs[preemptor.job]
    if not sc.allocatable(ssn.queues[job.queue], preemptor):
        return "queue"
    return "fits"


@pytest.mark.parametrize(
    ("node_name", "victims", "expected"),
    [
        ("n1", ["ns/v1", "ns/v2"], "fits"),
        ("n1", ["ns/v1", "ns/v3"], "insufficient"),
        ("n1", ["ns/v1"], "insufficient"),
        ("n1", [], "predicate: node(s) pod number exceeded"),
        ("n2", [], "insufficient"),
        ("n2", ["ns/w1"], "fits"),
        ("n3", ["ns/t1"], "predicate: node(s) had untolerated taint {k: None}"),
    ],
)
def test_preempt_like_what_if(node_name: str, victims: list[str], expected: str) -> None:
    ssn, counter = preempt_world()
    before = snapshot(ssn, counter)
    assert what_if(ssn, ssn.tasks["ns/p"], node_name, victims) == expected
    assert snapshot(ssn, counter) == before


def test_what_if_asks_the_queue_on_scratch_shares() -> None:
    """qhigh's deserved share is small: the preemptor's queue refuses it in the scratch
    exactly when the session's ``allocatable`` would."""
    ssn, _ = preempt_world()
    qhigh = ssn.queues["qhigh"]
    preemptor = ssn.tasks["ns/p"]
    assert ssn.allocatable(qhigh, preemptor)
    sc = Scratch(ssn, ["n1", "n2"])
    sc.add_task(preemptor, ssn.tasks["ns/p"], "n2")  # qhigh now holds 3 cpu in the scratch
    assert not sc.allocatable(qhigh, preemptor)
    assert ssn.allocatable(qhigh, preemptor)
    sc.remove_task(preemptor, preemptor, node="n2")
    assert sc.allocatable(qhigh, preemptor)


def test_node_search_over_scratch_copies_leaves_the_cursor() -> None:
    """The one node-search API runs over scratch copies too (preempt's dry run)."""
    ssn, counter = preempt_world()
    ssn.predicate_cursor = 2
    before = snapshot(ssn, counter)
    preemptor = ssn.tasks["ns/p"]
    sc = Scratch(ssn, ["n1", "n2", "n3"])
    sc.remove_task(preemptor, ssn.tasks["ns/v1"])
    sc.remove_task(preemptor, ssn.tasks["ns/v2"])
    copies = [sc.node(n) for n in sc.nodes]
    found = nodes_api.predicate_nodes(
        ssn, preemptor, nodes_api.allocate_check(ssn), nodes=copies, move_cursor=False
    )
    assert [n.name for n in found.feasible] == ["n1"]
    assert sorted(found.errors) == ["n2", "n3"]
    assert snapshot(ssn, counter) == before
