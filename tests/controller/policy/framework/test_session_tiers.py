"""Tier-walk semantics of the session (spec ``volcano.md`` §2.2, §2.3), with fake plugins."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import pytest

from controller.policy.framework import points as p
from controller.policy.framework.points import FitError, FitStatus, Victim, Vote
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf
from projections.model import JobInfo, TaskInfo, TaskStatus
from tests.builders import T0
from tests.controller.policy.framework.scenario import cluster, job, node, session, task, tiers

Register = Callable[[Session], None]


class Fake:
    """A plugin whose ``on_session_open`` runs the given registration."""

    def __init__(self, name: str, register: Register) -> None:
        self.name = name
        self.register = register

    def on_session_open(self, ssn: Session) -> None:
        self.register(ssn)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def open_with(rows: Sequence[Sequence[PluginConf]], *fakes: Fake, **kw: Any) -> Session:
    c = cluster(
        nodes=[node("n1")],
        tasks=[task("a", status=TaskStatus.RUNNING, node="n1"), task("b")],
    )
    return session(c, tiers(*rows), fakes, **kw)


def jobs_ab() -> tuple[JobInfo, JobInfo]:
    return job("ns/a", created=T0), job("ns/b", created=T0 + timedelta(seconds=1))


# -- comparisons ---------------------------------------------------------------------


def test_first_non_zero_comparison_wins_in_tier_order() -> None:
    first = Fake("first", lambda s: s.add_job_order_fn("first", lambda a, b: 0))
    second = Fake("second", lambda s: s.add_job_order_fn("second", lambda a, b: 1))
    third = Fake("third", lambda s: s.add_job_order_fn("third", lambda a, b: -1))
    ssn = open_with(
        [
            [PluginConf.of("first", p.JOB_ORDER), PluginConf.of("second", p.JOB_ORDER)],
            [PluginConf.of("third", p.JOB_ORDER)],
        ],
        first,
        second,
        third,
    )
    a, b = jobs_ab()
    assert ssn.job_order_compare(a, b) == 1


def test_comparison_skips_plugins_whose_flag_is_unset() -> None:
    fake = Fake("x", lambda s: s.add_job_order_fn("x", lambda a, b: 1))
    ssn = open_with([[PluginConf.of("x")]], fake)  # hand-built: enableJobOrder unset = off
    a, b = jobs_ab()
    assert ssn.job_order_compare(a, b) == -1  # fallback: a created first


def test_a_file_style_entry_enables_every_flag() -> None:
    fake = Fake("x", lambda s: s.add_job_order_fn("x", lambda a, b: 1))
    ssn = open_with([[PluginConf.of("x", all_flags=True)]], fake)
    a, b = jobs_ab()
    assert ssn.job_order_compare(a, b) == 1


def test_registered_plugin_absent_from_tiers_is_not_consulted() -> None:
    fake = Fake("x", lambda s: s.add_job_order_fn("x", lambda a, b: 1))
    ssn = open_with([], fake)
    a, b = jobs_ab()
    assert ssn.job_order_compare(a, b) == -1


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (job("ns/a", created=T0), job("ns/b", created=T0 + timedelta(1)), -1),
        (job("ns/b", created=T0), job("ns/a", created=T0), 1),  # same time → uid pg-ns-a first
        (job("ns/a"), job("ns/a"), 0),
    ],
)
def test_job_fallback_creation_then_uid(left: JobInfo, right: JobInfo, expected: int) -> None:
    ssn = open_with([])
    assert ssn.job_order_compare(left, right) == expected


def test_task_fallback_uses_pod_index_then_creation_then_uid() -> None:
    ssn = open_with([])
    t2 = task("job-worker-2", created=T0)
    t10 = task("job-worker-10", created=T0 - timedelta(hours=1))
    assert ssn.task_order_compare(t2, t10) < 0  # index 2 < 10 beats the earlier creation
    early, late = task("x-a", created=T0), task("w-b", created=T0 + timedelta(1))
    assert ssn.task_order_compare(early, late) < 0
    assert ssn.task_order_compare(task("b"), task("a")) > 0  # uid ns-a < ns-b


# -- preemptable (spec §2.3) -----------------------------------------------------------

A, B, C = (task(n, status=TaskStatus.RUNNING) for n in "abc")
Evict = Callable[[TaskInfo, Sequence[TaskInfo]], tuple[list[TaskInfo], Vote]]


def fixed(victims: list[TaskInfo], vote: Vote = Vote.PERMIT) -> Evict:
    return lambda preemptor, preemptees: (list(victims), vote)


def registering(name: str, fn: Evict) -> Register:
    return lambda s: s.add_preemptable_fn(name, fn)


def preemptable_of(rows: list[list[tuple[str, Evict]]]) -> list[str]:
    fakes: list[Fake] = []
    entries = []
    for row in rows:
        entries.append([PluginConf.of(name, p.PREEMPTABLE) for name, _ in row])
        fakes.extend(Fake(name, registering(name, fn)) for name, fn in row)
    ssn = open_with(entries, *fakes)
    return [t.name for t in ssn.preemptable(task("p"), [A, B, C])]


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        pytest.param([[("x", fixed([A, B, C])), ("y", fixed([C, B]))]], ["b", "c"], id="intersect"),
        pytest.param(
            [[("x", fixed([A])), ("y", fixed([]))], [("z", fixed([B]))]],
            ["b"],
            id="empty-cancels-tier-only",
        ),
        pytest.param(
            [[("x", fixed([A], Vote.ABSTAIN)), ("y", fixed([B]))]], ["b"], id="abstain-skipped"
        ),
        pytest.param(
            [[("x", fixed([A])), ("y", fixed([B])), ("z", fixed([C]))]],
            ["c"],
            id="empty-intersection-reseeded",
        ),
        pytest.param([[("x", fixed([A, B], Vote.REJECT))]], ["a", "b"], id="reject-with-list"),
        pytest.param([[("x", fixed([]))], [("y", fixed([]))]], [], id="none"),
        pytest.param(
            [[("x", fixed([B, A]))], [("y", fixed([C]))]], ["b", "a"], id="first-tier-decides"
        ),
    ],
)
def test_preemptable_intersection(rows: list[list[tuple[str, Evict]]], expected: list[str]) -> None:
    assert preemptable_of(rows) == expected


def test_preemptable_needs_its_flag() -> None:
    fake = Fake("x", lambda s: s.add_preemptable_fn("x", fixed([A])))
    ssn = open_with([[PluginConf.of("x", p.RECLAIMABLE)]], fake)
    assert ssn.preemptable(task("p"), [A]) == []


# -- votes, AND / OR -------------------------------------------------------------------


def voter(name: str, vote: Vote) -> tuple[PluginConf, Fake]:
    return PluginConf.of(name, p.JOB_PIPELINED), Fake(
        name, lambda s: s.add_job_pipelined_fn(name, lambda j: vote)
    )


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ([[Vote.PERMIT], [Vote.REJECT]], True),  # a tier with a permit decides
        ([[Vote.PERMIT, Vote.REJECT]], False),  # any reject in the tier → false
        ([[Vote.ABSTAIN], [Vote.REJECT]], False),
        ([[Vote.ABSTAIN], [Vote.ABSTAIN]], True),  # all abstain → true
        ([], True),
    ],
)
def test_job_pipelined_votes(votes: list[list[Vote]], expected: bool) -> None:
    rows, fakes = [], []
    for i, row in enumerate(votes):
        entries = []
        for k, vote in enumerate(row):
            conf, fake = voter(f"v{i}{k}", vote)
            entries.append(conf)
            fakes.append(fake)
        rows.append(entries)
    assert open_with(rows, *fakes).job_pipelined(job("ns/a")) is expected


def test_job_starving_first_tier_with_a_function_decides() -> None:
    yes = Fake("yes", lambda s: s.add_job_starving_fn("yes", lambda j: True))
    no = Fake("no", lambda s: s.add_job_starving_fn("no", lambda j: False))
    idle = Fake("idle", lambda s: None)
    starving = p.JOB_STARVING
    ssn = open_with(
        [
            [PluginConf.of("idle", starving)],
            [PluginConf.of("yes", starving)],
            [PluginConf.of("no", starving)],
        ],
        idle,
        yes,
        no,
    )
    assert ssn.job_starving(job("ns/a")) is True
    assert open_with([[PluginConf.of("idle", starving)]], idle).job_starving(job("ns/a")) is False


def test_ready_and_allocatable_are_and_overused_is_or() -> None:
    def reg(s: Session) -> None:
        s.add_job_ready_fn("t", lambda j: True)
        s.add_allocatable_fn("t", lambda q, t: True)
        s.add_overused_fn("t", lambda q: False)

    def reg_f(s: Session) -> None:
        s.add_job_ready_fn("f", lambda j: False)
        s.add_allocatable_fn("f", lambda q, t: False)
        s.add_overused_fn("f", lambda q: True)

    flags = (p.JOB_READY, p.ALLOCATABLE, p.OVERUSED)
    ssn = open_with([[PluginConf.of("t", *flags)]], Fake("t", reg))
    queue = ssn.queues["default"]
    assert ssn.job_ready(job("ns/a")) and ssn.allocatable(queue, task("b"))
    assert not ssn.overused(queue)
    ssn = open_with(
        [[PluginConf.of("t", *flags), PluginConf.of("f", *flags)]], Fake("t", reg), Fake("f", reg_f)
    )
    assert not ssn.job_ready(job("ns/a")) and not ssn.allocatable(queue, task("b"))
    assert ssn.overused(queue)
    assert open_with([]).job_ready(job("ns/a"))  # default true


def test_job_valid_checks_no_flag_and_returns_the_first_reason() -> None:
    ok = Fake("ok", lambda s: s.add_job_valid_fn("ok", lambda j: None))
    bad = Fake("bad", lambda s: s.add_job_valid_fn("bad", lambda j: "NotEnoughPods"))
    worse = Fake("worse", lambda s: s.add_job_valid_fn("worse", lambda j: "other"))
    ssn = open_with(
        [[PluginConf.of("ok"), PluginConf.of("bad")], [PluginConf.of("worse")]], ok, bad, worse
    )
    assert ssn.job_valid(job("ns/a")) == "NotEnoughPods"
    assert open_with([[PluginConf.of("ok")]], ok).job_valid(job("ns/a")) is None


# -- predicates and scores --------------------------------------------------------------


def test_predicate_raises_the_first_error_and_node_order_sums() -> None:
    def fail(reason: str) -> Callable[[TaskInfo, Any], None]:
        def fn(t: TaskInfo, n: Any) -> None:
            raise FitError(FitStatus.UNSCHEDULABLE, reason)

        return fn

    def reg(name: str, score: float, reason: str) -> Fake:
        def register(s: Session) -> None:
            s.add_predicate_fn(name, fail(reason))
            s.add_node_order_fn(name, lambda t, n: score)

        return Fake(name, register)

    flags = (p.PREDICATE, p.NODE_ORDER)
    ssn = open_with(
        [[PluginConf.of("x", *flags)], [PluginConf.of("y", *flags)]],
        reg("x", 10, "first"),
        reg("y", 5, "second"),
    )
    n1 = ssn.nodes["n1"]
    with pytest.raises(FitError, match="first"):
        ssn.predicate(task("b"), n1)
    assert ssn.node_order(task("b"), n1) == 15


def test_a_raising_node_order_zeroes_the_node() -> None:
    def boom(t: TaskInfo, n: Any) -> float:
        raise FitError(FitStatus.UNSCHEDULABLE, "zone closed")

    x = Fake("x", lambda s: s.add_node_order_fn("x", lambda t, n: 50))
    y = Fake("y", lambda s: s.add_node_order_fn("y", boom))
    ssn = open_with([[PluginConf.of("x", p.NODE_ORDER), PluginConf.of("y", p.NODE_ORDER)]], x, y)
    assert ssn.node_order(task("b"), ssn.nodes["n1"]) == 0.0


# -- victims -------------------------------------------------------------------------


def nominate(name: str, *names: str, reason: str = "r") -> Fake:
    def fn(tasks: Sequence[TaskInfo]) -> list[Victim]:
        return [
            Victim(task(n, status=TaskStatus.RUNNING), f"{reason}-{name}", {"by": name})
            for n in names
        ]

    return Fake(name, lambda s: s.add_victim_tasks_fn(name, fn))


def victims_of(rows: list[list[Fake]]) -> list[tuple[str, str, str]]:
    entries = [[PluginConf.of(f.name, p.VICTIM) for f in row] for row in rows]
    ssn = open_with(entries, *[f for row in rows for f in row])
    return [(v.task.name, v.reason, v.source) for v in ssn.victim_tasks([])]


def test_victims_union_dedupe_and_sort_within_the_first_non_empty_tier() -> None:
    rows = [
        [nominate("empty")],
        [nominate("x", "c", "a"), nominate("y", "a", "b")],
        [nominate("z", "d")],
    ]
    assert victims_of(rows) == [("a", "r-x", "x"), ("b", "r-y", "y"), ("c", "r-x", "x")]


def test_victims_none_when_every_tier_is_empty_and_flag_gates() -> None:
    assert victims_of([[nominate("x")]]) == []
    fake = nominate("x", "a")
    ssn = open_with([[PluginConf.of("x")]], fake)
    assert ssn.victim_tasks([]) == []


def test_a_plugin_may_register_several_victim_functions() -> None:
    def register(s: Session) -> None:
        s.add_victim_tasks_fn("x", lambda ts: [Victim(task("b"), "one")])
        s.add_victim_tasks_fn("x", lambda ts: [Victim(task("a"), "two")])

    ssn = open_with([[PluginConf.of("x", p.VICTIM)]], Fake("x", register))
    assert [(v.task.name, v.reason) for v in ssn.victim_tasks([])] == [("a", "two"), ("b", "one")]
