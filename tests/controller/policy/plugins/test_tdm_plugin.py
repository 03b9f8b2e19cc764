"""The TDM plugin's callbacks on a session, as scenario tables (spec §6.3, seed 000 §4-7, 11).

The cluster is built from model objects directly (``FakeCluster``), and the evict timer from
a fake history (``last_tdm_eviction(zone)``, ``None`` = any zone), so each scenario states
exactly the snapshot and the log facts it depends on.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.points import FitError, FitStatus, Vote
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf, TierConf
from controller.policy.plugins.tdm import REASON_WINDOW_CLOSED, TdmPlugin, build, parse_args
from controller.policy.plugins.tdm.plugin import job_order, job_pipelined, job_starving
from projections.history import History
from projections.model import JobInfo, NodeInfo, QueueInfo, Resource, TaskInfo, TaskStatus
from projections.oom import OOMState
from projections.pdb import PDBState
from projections.pressure import PressureState
from projections.usage import UsageState
from streams.events import make_event
from tests.controller.policy.framework.scenario import FakeCluster

T0 = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
RUNNING, PENDING, BOUND = TaskStatus.RUNNING, TaskStatus.PENDING, TaskStatus.BOUND


def at(hh: int, mm: int = 0, ss: int = 0) -> datetime:
    return datetime(2026, 11, 21, hh, mm, ss, tzinfo=UTC)


def task(
    name: str,
    *,
    job: str = "ns/j",
    node: str = "",
    status: TaskStatus = RUNNING,
    preemptable: bool = True,
    zone: str = "",
    priority: int = 1,
    started: datetime | None = T0,
    best_effort: bool = False,
) -> TaskInfo:
    return TaskInfo(
        uid=f"ns-{name}",
        namespace="ns",
        name=name,
        job=job,
        status=status,
        resreq=Resource(1000, 1e9),
        init_resreq=Resource(1000, 1e9),
        priority=priority,
        preemptable=preemptable,
        revocable_zone=zone,
        node_name=node,
        start_time=started,
        best_effort=best_effort,
    )


def revocable(name: str, *, node: str, job: str = "ns/j", **kw: Any) -> TaskInfo:
    """A preemptable task that opted in to revocable zones."""
    return task(name, node=node, job=job, zone="*", **kw)


class FakeHistory(History):
    """``last_tdm_eviction(zone)``; ``zone=None`` means any zone (the shared timer)."""

    def __init__(self, last: dict[str, datetime] | None = None) -> None:
        super().__init__()
        self.last: dict[str, datetime] = last if last is not None else {}

    def last_tdm_eviction(self, zone: str | None = None) -> datetime | None:
        if zone is None:
            return max(self.last.values(), default=None)
        return self.last.get(zone)


@dataclass
class FakeWorld:
    # satisfies projections.world.PolicyInputs
    cluster: FakeCluster
    history: FakeHistory
    usage: UsageState = field(default_factory=UsageState)
    oom: OOMState = field(default_factory=OOMState)
    pressure: PressureState = field(default_factory=PressureState)
    pdbs: PDBState = field(default_factory=PDBState)


def node(name: str, zone: str = "") -> NodeInfo:
    alloc = Resource(16000, 64e9)
    return NodeInfo(name, alloc, alloc.clone(), revocable_zone=zone, idle=alloc.clone())


def world(
    nodes: Iterable[NodeInfo],
    tasks: Iterable[TaskInfo],
    *,
    jobs: dict[str, dict[str, Any]] | None = None,
    history: FakeHistory | None = None,
) -> FakeWorld:
    """A cluster: tasks placed on their nodes; jobs made from the tasks' job ids."""
    cluster = FakeCluster(
        nodes={n.name: n for n in nodes}, queues={"default": QueueInfo("default")}
    )
    for t in tasks:
        cluster.tasks[t.key] = t
        if t.node_name:
            cluster.nodes[t.node_name].tasks[t.key] = t
        if t.job not in cluster.jobs:
            namespace, _, name = t.job.partition("/")
            cluster.jobs[t.job] = JobInfo(
                uid=t.job, namespace=namespace, name=name, **(jobs or {}).get(t.job, {})
            )
        cluster.jobs[t.job].tasks[t.key] = t
    return FakeWorld(cluster, history if history is not None else FakeHistory())


def session(
    w: FakeWorld,
    now: datetime,
    arguments: dict[str, Any] | None = None,
    *,
    timezone: str = "UTC",
) -> tuple[Session, TdmPlugin]:
    """A session at ``now`` with TDM alone in one tier, every flag enabled."""
    args = parse_args(
        arguments if arguments is not None else {"tdm.revocable-zone.rz1": "10:00-21:00"}
    )
    ctx = PluginContext(ZoneInfo(timezone), "volcano")
    plugin = build(args, ctx)
    trigger = make_event(
        "trigger.fired", now, {"trigger": "t", "kind": "tick", "scheduled": now.isoformat()}
    )
    tiers = [TierConf((PluginConf.of("tdm", all_flags=True),))]
    ssn = Session(w, trigger, tiers=tiers, ctx=ctx)
    ssn.open([plugin])
    return ssn, plugin


def raw_fn(ssn: Session, point: str) -> Any:
    """The TDM callable registered for ``point`` (to see its vote, not the tier walk)."""
    return ssn.chain(point)[0][0][1]


MINUTE = timedelta(minutes=1)
RZ1_RZ2 = {
    "tdm.revocable-zone.rz1": "10:00-21:00",
    "tdm.revocable-zone.rz2": "10:00-21:00",
}
OPEN, CLOSED = at(15), at(21, 30)


# -- predicate -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_zone", "task_zone", "now", "window", "reason"),
    [
        pytest.param("", "", CLOSED, "10:00-21:00", None, id="normal node, normal task"),
        pytest.param("", "*", CLOSED, "10:00-21:00", None, id="normal node, revocable task"),
        pytest.param("rz1", "*", OPEN, "10:00-21:00", None, id="open zone, revocable task"),
        pytest.param(
            "rz1",
            "",
            OPEN,
            "10:00-21:00",
            "not allow to dispatch to revocable node",
            id="open zone, normal task",
        ),
        pytest.param(
            "rz1",
            "*",
            CLOSED,
            "10:00-21:00",
            "beyond revocable zone rz1:10:00-21:00",
            id="closed zone, revocable task",
        ),
        pytest.param(
            "rz1", "", CLOSED, "10:00-21:00", "beyond revocable zone", id="closed zone, normal task"
        ),
        pytest.param(
            "rz9",
            "*",
            OPEN,
            "10:00-21:00",
            "revocable zone rz9 not support",
            id="unconfigured zone",
        ),
        pytest.param("rz1", "*", at(1), "22:00-06:00", None, id="cross-midnight after midnight"),
        pytest.param(
            "rz1",
            "*",
            at(21) - timedelta(microseconds=1),
            "10:00-21:00",
            None,
            id="a microsecond before the end",
        ),
        pytest.param("rz1", "*", at(21), "10:00-21:00", "beyond", id="end bound exclusive"),
        pytest.param("rz1", "*", at(21, 0, 1), "10:00-21:00", "beyond", id="one second later"),
        pytest.param("rz1", "*", at(3), "23:59-23:59", None, id="equal start/end always open"),
    ],
)
def test_predicate(
    node_zone: str, task_zone: str, now: datetime, window: str, reason: str | None
) -> None:
    n = node("n1", node_zone)
    t = task("p", zone=task_zone, status=PENDING)
    ssn, _ = session(world([n], [t]), now, {"tdm.revocable-zone.rz1": window})
    if reason is None:
        ssn.predicate(t, ssn.nodes["n1"])
        return
    with pytest.raises(FitError) as err:
        ssn.predicate(t, ssn.nodes["n1"])
    assert err.value.status == FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert not err.value.resolvable_by_preemption
    assert err.value.plugin == "tdm"
    assert reason in err.value.reason


def test_predicate_reads_the_window_in_the_configured_zone() -> None:
    n = node("n1", "rz1")
    t = task("p", zone="*", status=PENDING)
    # 02:00Z is 11:00 in Tokyo: inside 10:00-21:00 there, outside it in UTC
    tokyo, _ = session(world([n], [t]), at(2), timezone="Asia/Tokyo")
    tokyo.predicate(t, tokyo.nodes["n1"])
    utc_ssn, _ = session(world([n], [t]), at(2))
    with pytest.raises(FitError):
        utc_ssn.predicate(t, utc_ssn.nodes["n1"])


# -- node order ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_zone", "task_zone", "now", "score"),
    [
        pytest.param("", "*", OPEN, 0.0, id="normal node"),
        pytest.param("rz1", "*", OPEN, 100.0, id="open zone, revocable task"),
        pytest.param("rz1", "", OPEN, 0.0, id="open zone, normal task"),
        pytest.param("rz1", "*", CLOSED, 0.0, id="closed zone (upstream: error)"),
        pytest.param("rz9", "*", OPEN, 0.0, id="unconfigured zone"),
    ],
)
def test_node_order(node_zone: str, task_zone: str, now: datetime, score: float) -> None:
    n = node("n1", node_zone)
    t = task("p", zone=task_zone, status=PENDING)
    ssn, _ = session(world([n], [t]), now)
    assert ssn.node_order(t, ssn.nodes["n1"]) == score
    assert raw_fn(ssn, "node_order")(t, ssn.nodes["n1"]) == score


# -- preemptable -----------------------------------------------------------------------------


def preempt_world(**jobs: dict[str, Any]) -> FakeWorld:
    tasks = [
        task("a-old", job="ns/a", node="normal", started=T0),
        task("a-new", job="ns/a", node="normal", started=T0 + MINUTE),
        task("a-rz", job="ns/a", node="rz1-n", zone="*"),  # on a revocable node
        task("b-0", job="ns/b", node="normal"),
        task("b-bound", job="ns/b", node="normal", status=BOUND),
        task("c-keep", job="ns/c", node="normal", preemptable=False),
        task("d-ghost", job="ns/d", node="gone"),  # node not in the session
    ]
    w = world(
        [node("normal"), node("rz1-n", "rz1")],
        [t for t in tasks if t.node_name != "gone"],
        jobs=jobs,
    )
    ghost = tasks[-1]
    w.cluster.tasks[ghost.key] = ghost
    w.cluster.jobs["ns/d"] = JobInfo(uid="d", namespace="ns", name="d", tasks={ghost.key: ghost})
    return w


def all_tasks(w: FakeWorld) -> list[TaskInfo]:
    return [w.cluster.tasks[k] for k in sorted(w.cluster.tasks)]


@pytest.mark.parametrize(
    ("preemptor", "vote"),
    [
        pytest.param(
            task("p", preemptable=True, status=PENDING), Vote.REJECT, id="preemptable preemptor"
        ),
        pytest.param(
            task("p", preemptable=False, zone="*", status=PENDING),
            Vote.REJECT,
            id="revocable preemptor",
        ),
    ],
)
def test_preemptable_preemptor_is_rejected(preemptor: TaskInfo, vote: Vote) -> None:
    w = preempt_world()
    ssn, _ = session(w, OPEN)
    assert raw_fn(ssn, "preemptable")(preemptor, all_tasks(w)) == ([], vote)
    assert ssn.preemptable(preemptor, all_tasks(w)) == []


def test_preemptable_victims_on_normal_nodes_budgeted_per_job() -> None:
    w = preempt_world()
    ssn, _ = session(w, OPEN)
    preemptor = task("p", preemptable=False, status=PENDING, job="ns/p")
    victims, vote = raw_fn(ssn, "preemptable")(preemptor, all_tasks(w))
    assert vote == Vote.PERMIT
    # one per job (default budget), newest first; not the revocable-node task, not the
    # Bound one, not the non-preemptable one, not the one on a node outside the session
    assert [v.name for v in victims] == ["a-new", "b-0"]
    assert [v.name for v in ssn.preemptable(preemptor, all_tasks(w))] == ["a-new", "b-0"]


def test_preemptable_respects_the_job_budget() -> None:
    w = preempt_world(
        **{"ns/a": {"budget_max_unavailable": "100%"}, "ns/b": {"budget_min_available": "1"}}
    )
    ssn, _ = session(w, OPEN)
    preemptor = task("p", preemptable=False, status=PENDING, job="ns/p")
    victims, _ = raw_fn(ssn, "preemptable")(preemptor, all_tasks(w))
    # a: 3 tasks, 100% → 3 allowed, two candidates on the normal node; b: running 1, min 1 → 0
    assert [v.name for v in victims] == ["a-new", "a-old"]


def test_preemptable_ignores_jobs_outside_the_session() -> None:
    w = preempt_world()
    w.cluster.jobs["ns/a"].placeholder = True  # PodGroup not seen: not in the session
    ssn, _ = session(w, OPEN)
    preemptor = task("p", preemptable=False, status=PENDING, job="ns/p")
    victims, vote = raw_fn(ssn, "preemptable")(preemptor, all_tasks(w))
    assert ([v.name for v in victims], vote) == (["b-0"], Vote.PERMIT)


def test_preemptable_with_no_candidates_permits_nothing() -> None:
    w = world([node("normal")], [task("keep", node="normal", preemptable=False)])
    ssn, _ = session(w, OPEN)
    preemptor = task("p", preemptable=False, status=PENDING, job="ns/p")
    assert raw_fn(ssn, "preemptable")(preemptor, all_tasks(w)) == ([], Vote.PERMIT)


# -- job order / pipelined / starving ------------------------------------------------------


def j(
    preemptable: bool = False,
    *statuses: TaskStatus,
    min_available: int = 1,
    best_effort: bool = False,
) -> JobInfo:
    tasks = {
        f"ns/t{i}": task(f"t{i}", status=s, best_effort=best_effort) for i, s in enumerate(statuses)
    }
    return JobInfo(
        uid="j",
        namespace="ns",
        name="j",
        preemptable=preemptable,
        min_available=min_available,
        tasks=tasks,
    )


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        pytest.param(j(False), j(True), -1, id="non-preemptable first"),
        pytest.param(j(True), j(False), 1, id="preemptable last"),
        pytest.param(j(True), j(True), 0, id="both preemptable"),
        pytest.param(j(False), j(False), 0, id="neither"),
    ],
)
def test_job_order(left: JobInfo, right: JobInfo, expected: int) -> None:
    assert job_order(left, right) == expected


@pytest.mark.parametrize(
    ("job", "vote"),
    [
        pytest.param(
            j(False, RUNNING, TaskStatus.PIPELINED, min_available=2),
            Vote.PERMIT,
            id="running + pipelined reach min",
        ),
        pytest.param(
            j(False, RUNNING, PENDING, min_available=2), Vote.REJECT, id="pending does not count"
        ),
        pytest.param(
            j(False, RUNNING, PENDING, min_available=2, best_effort=True),
            Vote.PERMIT,
            id="pending best-effort counts",
        ),
        pytest.param(
            j(False, TaskStatus.SUCCEEDED, BOUND, min_available=2),
            Vote.PERMIT,
            id="succeeded and bound are ready",
        ),
        pytest.param(
            j(False, TaskStatus.FAILED, min_available=1), Vote.REJECT, id="failed is not ready"
        ),
        pytest.param(j(False, min_available=0), Vote.PERMIT, id="min 0"),
    ],
)
def test_job_pipelined(job: JobInfo, vote: Vote) -> None:
    assert job_pipelined(job) == vote


@pytest.mark.parametrize(
    ("job", "starving"),
    [
        pytest.param(j(True, PENDING), False, id="preemptable job never starves"),
        pytest.param(j(False, PENDING, RUNNING), True, id="non-preemptable with pending"),
        pytest.param(j(False, RUNNING), False, id="non-preemptable, nothing pending"),
        pytest.param(j(False, TaskStatus.PIPELINED), False, id="pipelined is not pending"),
    ],
)
def test_job_starving(job: JobInfo, starving: bool) -> None:
    assert job_starving(job) is starving


def test_job_callbacks_are_registered_on_the_session() -> None:
    w = world([node("n")], [task("x", node="n")])
    ssn, _ = session(w, OPEN)
    assert ssn.job_order_compare(j(False), j(True)) == -1
    assert ssn.job_starving(j(False, PENDING)) is True
    assert ssn.job_pipelined(j(False, PENDING, min_available=1)) is False


# -- victim tasks ----------------------------------------------------------------------------


def victims_of(
    w: FakeWorld,
    now: datetime,
    arguments: dict[str, Any] | None = None,
    *,
    timezone: str = "UTC",
) -> list[tuple[str, str]]:
    """``(task name, zone)`` of the victims, in the plugin's own order."""
    ssn, _ = session(w, now, arguments, timezone=timezone)
    found = raw_fn(ssn, "victim_tasks")([])
    assert all(v.reason == REASON_WINDOW_CLOSED for v in found)
    return [(v.task.name, v.evidence["zone"]) for v in found]


def zone_world(history: FakeHistory | None = None, /, **jobs: dict[str, Any]) -> FakeWorld:
    """rz1: job a (3 running) + odd tasks; rz2: job b (2 running); a normal node."""
    tasks = [
        revocable("a-0", node="rz1-n1", job="ns/a", started=T0),
        revocable("a-1", node="rz1-n1", job="ns/a", started=T0 + MINUTE),
        revocable("a-2", node="rz1-n2", job="ns/a", started=T0 + 2 * MINUTE),
        revocable("bound", node="rz1-n2", job="ns/x", status=BOUND),
        task("keep", node="rz1-n2", job="ns/y", preemptable=False),
        revocable("b-0", node="rz2-n1", job="ns/b"),
        revocable("b-1", node="rz2-n1", job="ns/b", priority=0),
        revocable("normal-0", node="normal", job="ns/c"),
    ]
    nodes = [node("rz1-n1", "rz1"), node("rz1-n2", "rz1"), node("rz2-n1", "rz2"), node("normal")]
    return world(nodes, tasks, jobs=jobs, history=history)


def test_no_victims_while_the_window_is_open() -> None:
    assert victims_of(zone_world(), OPEN, RZ1_RZ2) == []


def test_closed_zones_lose_one_task_per_job_in_the_defined_order() -> None:
    # default budget 1 per job: a's newest (a-2), b's lowest priority (b-1)
    assert victims_of(zone_world(), CLOSED, RZ1_RZ2) == [("a-2", "rz1"), ("b-1", "rz2")]


def test_only_closed_zones_are_emptied() -> None:
    args = {"tdm.revocable-zone.rz1": "10:00-21:00", "tdm.revocable-zone.rz2": "10:00-23:00"}
    assert victims_of(zone_world(), CLOSED, args) == [("a-2", "rz1")]


def test_cross_midnight_zone_is_kept_after_midnight() -> None:
    args = {"tdm.revocable-zone.rz1": "22:00-06:00", "tdm.revocable-zone.rz2": "22:00-06:00"}
    assert victims_of(zone_world(), at(1), args) == []
    assert victims_of(zone_world(), at(6, 0, 1), args) == [("a-2", "rz1"), ("b-1", "rz2")]


def test_zone_read_in_the_configured_timezone() -> None:
    # 13:00Z is 22:00 in Tokyo: rz1 (10:00-21:00 JST) closed, in UTC it would be open
    args = {"tdm.revocable-zone.rz1": "10:00-21:00"}
    assert victims_of(zone_world(), at(13), args, timezone="Asia/Tokyo") == [("a-2", "rz1")]
    assert victims_of(zone_world(), at(13), args) == []


def test_nodes_of_unconfigured_zones_are_left_alone() -> None:
    # upstream §11.1-11: rz2 is not configured, its tasks are never nominated
    assert victims_of(zone_world(), CLOSED, {"tdm.revocable-zone.rz1": "10:00-21:00"}) == [
        ("a-2", "rz1")
    ]


@pytest.mark.parametrize(
    ("last", "period", "expected"),
    [
        pytest.param(None, "1m", [("a-2", "rz1")], id="never evicted"),
        pytest.param(CLOSED - timedelta(seconds=30), "1m", [], id="within the period"),
        pytest.param(CLOSED - MINUTE, "1m", [("a-2", "rz1")], id="period just elapsed"),
        pytest.param(
            CLOSED - timedelta(seconds=59, microseconds=999_999), "1m", [], id="a microsecond short"
        ),
        pytest.param(CLOSED - timedelta(minutes=3), "5m", [], id="longer period"),
        pytest.param(CLOSED - timedelta(hours=2), "1h30m", [("a-2", "rz1")], id="1h30m"),
    ],
)
def test_evict_period_per_zone(last: datetime | None, period: str, expected: list[Any]) -> None:
    history = FakeHistory({"rz1": last} if last else {})
    args = {"tdm.revocable-zone.rz1": "10:00-21:00", "tdm.evict.period": period}
    assert victims_of(zone_world(history), CLOSED, args) == expected


def test_one_zones_eviction_does_not_silence_the_others() -> None:
    history = FakeHistory({"rz1": CLOSED - timedelta(seconds=10)})
    assert victims_of(zone_world(history), CLOSED, RZ1_RZ2) == [("b-1", "rz2")]


@pytest.mark.parametrize(
    ("last", "expected"),
    [
        pytest.param({"rz1": CLOSED - timedelta(seconds=10)}, [], id="rz1 evicted: all wait"),
        pytest.param({"rz2": CLOSED - timedelta(seconds=10)}, [], id="rz2 evicted: all wait"),
        pytest.param(
            {"rz1": CLOSED - MINUTE, "rz2": CLOSED - 2 * MINUTE},
            [("a-2", "rz1"), ("b-1", "rz2")],
            id="latest is a period ago",
        ),
        pytest.param(
            {"rz1": CLOSED - 2 * MINUTE, "rz2": CLOSED - timedelta(seconds=1)},
            [],
            id="latest in any zone counts",
        ),
    ],
)
def test_shared_timer_restores_volcanos_single_timer(
    last: dict[str, datetime], expected: list[Any]
) -> None:
    args = {**RZ1_RZ2, "tdm.evict.shared-timer": True}
    assert victims_of(zone_world(FakeHistory(last)), CLOSED, args) == expected


def test_timer_is_only_read_never_written() -> None:
    history = FakeHistory()
    w = zone_world(history)
    victims_of(w, CLOSED, RZ1_RZ2)
    victims_of(w, CLOSED, RZ1_RZ2)
    assert history.last == {}  # advancing the timer is the log's job (decision.evict)


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        pytest.param({}, ["a-2"], id="none: 1"),
        pytest.param({"budget_max_unavailable": "2"}, ["a-2", "a-1"], id="max-unavailable 2"),
        pytest.param(
            {"budget_max_unavailable": "34%"},
            ["a-2", "a-1"],
            id="max-unavailable 34% of 3 rounds up to 2",
        ),
        pytest.param({"budget_max_unavailable": "100%"}, ["a-2", "a-1", "a-0"], id="100%"),
        pytest.param({"budget_max_unavailable": "0"}, [], id="max-unavailable 0"),
        pytest.param({"budget_min_available": "1"}, ["a-2", "a-1"], id="min-available 1"),
        pytest.param({"budget_min_available": "3"}, [], id="min-available == running"),
        pytest.param({"budget_min_available": "5"}, [], id="running < min: 0 (upstream 1)"),
        pytest.param(
            {"budget_min_available": "34%"},
            ["a-2"],
            id="min-available 34% of 3 rounds up: 2 kept, 1 evicted",
        ),
    ],
)
def test_budget_forms_in_victims(budget: dict[str, Any], expected: list[str]) -> None:
    w = zone_world(**{"ns/a": budget})
    found = victims_of(w, CLOSED, {"tdm.revocable-zone.rz1": "10:00-21:00"})
    assert [name for name, _ in found] == expected


def test_max_unavailable_counts_other_unavailable_tasks_of_the_job() -> None:
    w = zone_world(**{"ns/a": {"budget_max_unavailable": "2"}})
    pending = task("a-pending", job="ns/a", status=PENDING)
    done = task("a-done", job="ns/a", status=TaskStatus.SUCCEEDED)
    for extra in (pending, done):
        w.cluster.tasks[extra.key] = extra
        w.cluster.jobs["ns/a"].tasks[extra.key] = extra
    # total 5, final 1, running 3 → 1 unavailable → 1 more may go
    assert victims_of(w, CLOSED, {"tdm.revocable-zone.rz1": "10:00-21:00"}) == [("a-2", "rz1")]


@pytest.mark.parametrize("value", ["150%", "abc", "30.5%", " 30%"])
def test_invalid_budget_evicts_nothing_for_that_job(value: str) -> None:
    w = zone_world(**{"ns/a": {"budget_max_unavailable": value}})
    ssn, plugin = session(w, CLOSED, RZ1_RZ2)
    found = raw_fn(ssn, "victim_tasks")([])
    assert [v.task.name for v in found] == ["b-1"]
    assert plugin.budget_errors == [
        {
            "zone": "rz1",
            "job": "ns/a",
            "form": "max-unavailable",
            "value": value,
            "total": 3,
            "running": 3,
            "final": 0,
            "max_evict": 0,
            "error": plugin.budget_errors[0]["error"],
        }
    ]
    assert value in plugin.budget_errors[0]["error"]
    # an error in rz1 is not listed on rz2's victims
    assert "skipped_jobs" not in found[0].evidence


def test_invalid_budget_is_listed_on_the_zones_other_victims() -> None:
    w = zone_world(**{"ns/a": {"budget_min_available": "abc"}})
    extra = revocable("z-0", node="rz1-n1", job="ns/z")
    w.cluster.tasks[extra.key] = extra
    w.cluster.nodes["rz1-n1"].tasks[extra.key] = extra
    w.cluster.jobs["ns/z"] = JobInfo(uid="z", namespace="ns", name="z", tasks={extra.key: extra})
    ssn, _ = session(w, CLOSED, {"tdm.revocable-zone.rz1": "10:00-21:00"})
    (victim,) = raw_fn(ssn, "victim_tasks")([])
    assert victim.task.name == "z-0"
    assert [s["job"] for s in victim.evidence["skipped_jobs"]] == ["ns/a"]


def test_one_budget_per_job_across_zones() -> None:
    # job a spans both zones; upstream recomputes the budget per zone (loses 2)
    tasks = [
        revocable("a-0", node="rz1-n", job="ns/a", started=T0),
        revocable("a-1", node="rz2-n", job="ns/a", started=T0 + MINUTE),
    ]
    w = world([node("rz1-n", "rz1"), node("rz2-n", "rz2")], tasks)
    assert victims_of(w, CLOSED, RZ1_RZ2) == [("a-0", "rz1")]
    w2 = world(
        [node("rz1-n", "rz1"), node("rz2-n", "rz2")],
        tasks,
        jobs={"ns/a": {"budget_max_unavailable": "2"}},
    )
    assert victims_of(w2, CLOSED, RZ1_RZ2) == [("a-0", "rz1"), ("a-1", "rz2")]


def test_jobs_outside_the_session_are_skipped() -> None:
    w = zone_world()
    w.cluster.jobs["ns/a"].placeholder = True
    assert victims_of(w, CLOSED, RZ1_RZ2) == [("b-1", "rz2")]


def test_victims_do_not_depend_on_insertion_order() -> None:
    base = victims_of(zone_world(**{"ns/a": {"budget_max_unavailable": "2"}}), CLOSED, RZ1_RZ2)
    rng = random.Random(7)
    for _ in range(5):
        w = zone_world(**{"ns/a": {"budget_max_unavailable": "2"}})
        for n in w.cluster.nodes.values():
            items = list(n.tasks.items())
            rng.shuffle(items)
            n.tasks = dict(items)
        assert victims_of(w, CLOSED, RZ1_RZ2) == base


def test_victim_evidence() -> None:
    history = FakeHistory({"rz1": CLOSED - timedelta(minutes=2)})
    w = zone_world(history, **{"ns/a": {"budget_max_unavailable": "2"}})
    ssn, _ = session(w, CLOSED, {"tdm.revocable-zone.rz1": "10:00-21:00", "tdm.evict.period": "1m"})
    first, second = raw_fn(ssn, "victim_tasks")(list(w.cluster.tasks.values()))
    assert first.evidence == {
        "zone": "rz1",
        "window": "10:00-21:00",
        "timezone": "UTC",
        "job": "ns/a",
        "budget": {
            "form": "max-unavailable",
            "value": "2",
            "limit": 2,
            "total": 3,
            "running": 3,
            "final": 0,
            "max_evict": 2,
        },
        "order": {
            "position": 1,
            "candidates": 3,
            "by": "priority asc, start time desc (none = newest), namespace, name, uid",
        },
        "evict_period": "1m0s",
        "evict_timer": "per-zone",
        "last_eviction": "2026-11-21T21:28:00Z",
    }
    assert second.evidence["order"]["position"] == 2
    assert (first.task.name, second.task.name) == ("a-2", "a-1")


def test_session_victim_tasks_names_tdm_as_source() -> None:
    ssn, _ = session(zone_world(), CLOSED, RZ1_RZ2)
    found = ssn.victim_tasks([])
    assert {v.source for v in found} == {"tdm"}
    assert {v.task.name for v in found} == {"a-2", "b-1"}
