"""The fast evidence of a lowNodeUtilization round is byte-identical to the plain one.

``select`` builds each victim's evidence by copying the round's part and formatting the
``why`` sentence with one ``%`` format; the plugin reads pod usage as plain tuples, counts
gangs once per job and builds its victims with ``build_victim``. Each is compared here with
the plain code it replaced (kept below as the reference, as it stood), on seeded rounds and,
for the number formatting, on every kind of float hypothesis finds.
"""

from __future__ import annotations

import math
import pickle
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import FrozenInstanceError, replace
from datetime import timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from controller.policy.framework.points import Victim, build_victim
from controller.policy.framework.session import Session
from controller.policy.plugins.rescheduling.args import LnuParams
from controller.policy.plugins.rescheduling.low_node_utilization import (
    ALL_LOW,
    GIB,
    LOW_NODES_SHOWN,
    NO_HIGH,
    NO_LOW,
    STRATEGY,
    WHY,
    Choice,
    NodeLoad,
    PodLoad,
    Round,
    classify,
    select,
    victim_order,
)
from controller.policy.plugins.rescheduling.plugin import (
    CRITICAL_CLASSES,
    GangCounts,
    _candidates,
    never_victim,
    node_loads,
    round_loads,
)
from projections.cluster import ClusterState
from projections.model import JobInfo, NodeInfo, Resource, TaskInfo, TaskStatus
from projections.ownership import MIRROR
from projections.usage import Series, UsageState, from_seconds, to_seconds
from tests.builders import build_pod, build_podgroup, watch

# -- the plain code, as it was -------------------------------------------------------------


def plain_why(
    name: str,
    p_cpu: float,
    p_mem: float,
    target_text: str,
    room_cpu: float,
    room_mem: float,
    rank: int,
    u_cpu: float,
    u_mem: float,
    source: str,
) -> str:
    return (
        f"{name} averages cpu {p_cpu:.0f}%/mem {p_mem:.0f}%{target_text}"
        f"{room_cpu / 1000:.1f} cores/{room_mem / GIB:.1f}Gi headroom; rank {rank}, "
        f"uses {u_cpu / 1000:.1f} cores/{u_mem / GIB:.1f}Gi ({source})"
    )


def plain_select(
    loads: Sequence[NodeLoad],
    params: LnuParams,
    *,
    candidates: Callable[[str], Iterable[TaskInfo]],
    pod_load: Callable[[TaskInfo], tuple[float, float, str]],
    may_evict: Callable[[TaskInfo], bool],
    shared: Mapping[str, Any] | None = None,
) -> Round:
    """``select`` before the fast evidence: a dict display and an f-string per victim."""
    low, high, count = classify(loads, params)
    result = Round(low=sorted(n.name for n in low), high=sorted(n.name for n in high))
    if not low:
        result.skipped = NO_LOW
        return result
    if len(low) == count:
        result.skipped = ALL_LOW
        return result
    if not high:
        result.skipped = NO_HIGH
        return result
    target = params.target_thresholds
    t_cpu, t_mem = target["cpu"], target["memory"]
    room_cpu = sum(t_cpu * n.alloc_cpu / 100.0 - n.cpu for n in low)
    room_mem = sum(t_mem * n.alloc_memory / 100.0 - n.memory for n in low)
    common: dict[str, Any] = {
        "strategy": STRATEGY,
        "thresholds": dict(params.thresholds),
        "target_thresholds": dict(target),
        "low_nodes": result.low[:LOW_NODES_SHOWN],
        "low_node_count": len(low),
        **(shared or {}),
    }
    target_text = f" > target {t_cpu:g}%/{t_mem:g}%; {len(low)} low node(s) have "

    def hottest(load: NodeLoad) -> tuple[float, str]:
        percent = load.percent()
        return -(percent["cpu"] + percent["memory"]), load.name

    for load in sorted(high, key=hottest):
        ordered: list[TaskInfo] | None = None
        rank = 0
        while True:
            percent = load.percent()
            p_cpu, p_mem = percent["cpu"], percent["memory"]
            if not (p_cpu >= t_cpu or p_mem >= t_mem) or room_cpu <= 0 or room_mem <= 0:
                break
            if ordered is None:
                ordered = sorted(candidates(load.name), key=victim_order)
            if rank >= len(ordered):
                break
            task = ordered[rank]
            rank += 1
            if not may_evict(task):
                continue
            usage = PodLoad(*pod_load(task))
            u_cpu, u_mem = usage.cpu, usage.memory
            evidence = {
                **common,
                "node": load.name,
                "node_usage": {"cpu": round(p_cpu, 2), "memory": round(p_mem, 2)},
                "node_samples": load.samples,
                "headroom": {"cpu": int(room_cpu), "memory": int(room_mem)},
                "rank": rank,
                "victim_usage": {"cpu": int(u_cpu), "memory": int(u_mem)},
                "usage_source": usage.source,
                "why": (
                    f"{load.name} averages cpu {p_cpu:.0f}%/mem {p_mem:.0f}%{target_text}"
                    f"{room_cpu / 1000:.1f} cores/{room_mem / GIB:.1f}Gi headroom; rank {rank}, "
                    f"uses {u_cpu / 1000:.1f} cores/{u_mem / GIB:.1f}Gi ({usage.source})"
                ),
            }
            result.victims.append(Choice(task, evidence))
            load.cpu -= u_cpu
            load.memory -= u_mem
            room_cpu -= u_cpu
            room_mem -= u_mem
    return result


def plain_gang(jobs: Mapping[str, JobInfo]) -> Callable[[TaskInfo], bool]:
    """The plugin's gang check before :class:`GangCounts`: a lookup per candidate."""
    left: dict[str, int] = {}

    def allows(task: TaskInfo) -> bool:
        job = jobs.get(task.job)
        if job is None:
            return False
        if not job.implicit:
            key = task.job
            count = left.get(key)
            if count is None:
                count = [t.status for t in job.tasks.values()].count(TaskStatus.RUNNING)
            if count - 1 < job.min_available:
                left[key] = count
                return False
            left[key] = count - 1
        return True

    return allows


# -- seeded rounds -------------------------------------------------------------------------

#: floats that format or round at a boundary: ties at one and two decimals, integral values,
#: a value just below a tie, huge and tiny magnitudes
AWKWARD = (0.0, 0.5, 1.5, 2.5, 0.05, 0.25, 0.35, 2.675, 1e-300, 9.99e15, 2.0**53, 1234.5678)


def awkward(rng: random.Random, scale: float) -> float:
    pick = rng.random()
    if pick < 0.2:
        return rng.choice(AWKWARD) * (1.0 if rng.random() < 0.5 else scale)
    if pick < 0.5:
        return float(rng.randrange(int(scale) + 1))
    return rng.random() * scale


def seeded_round(seed: int) -> tuple[Callable[[], list[NodeLoad]], dict[str, Any]]:
    """A cluster drawn from ``seed``: a factory of fresh node loads (a round takes victims'
    usage off them), and the round's other arguments."""
    rng = random.Random(seed)
    count = rng.randrange(3, 40)
    rows = []
    for i in range(count):
        a_cpu = rng.choice((0.0, 4000.0, 16000.0, 96000.0, awkward(rng, 1e5)))
        a_mem = rng.choice((0.0, 8 * GIB, 64 * GIB, awkward(rng, 1e12)))
        share = rng.choice((0.05, 0.5, 0.9, rng.random(), 1.3))
        cpu = a_cpu * share * rng.uniform(0.9, 1.1)
        memory = a_mem * share * rng.uniform(0.9, 1.1)
        rows.append((f"n{i:03d}", a_cpu, a_mem, cpu, memory, rng.randrange(1, 12)))
    tasks: dict[str, list[TaskInfo]] = {}
    usage: dict[str, tuple[float, float, str]] = {}
    for name, *_ in rows:
        tasks[name] = []
        for j in range(rng.randrange(0, 25)):
            uid = f"{name}-{j}"
            tasks[name].append(
                TaskInfo(
                    uid,
                    rng.choice(("a", "b")),
                    f"p{rng.randrange(50)}-{uid}",
                    "a/job",
                    TaskStatus.RUNNING,
                    Resource(),
                    Resource(),
                    pod_priority=rng.choice((-5, 0, 0, 100, 2000001000)),
                    k8s_qos=rng.choice(("BestEffort", "Burstable", "Guaranteed", "")),
                )
            )
            source = "metrics" if rng.random() < 0.7 else "request"
            usage[uid] = (awkward(rng, 8000.0), awkward(rng, 16.0 * GIB), source)
    refused = {uid for uid in usage if rng.random() < 0.1}
    lo = rng.choice((20, 20.5, 30))
    hi = rng.choice((80, 85, 70.25))
    params = LnuParams({"cpu": lo, "memory": lo}, {"cpu": hi, "memory": hi + 5})
    shared = {"metrics_period": "5m", "interval": "10m", "stale_nodes": rng.randrange(3)}

    def loads() -> list[NodeLoad]:
        return [NodeLoad(*row) for row in rows]

    arguments: dict[str, Any] = {
        "params": params,
        "candidates": lambda name: list(tasks[name]),
        "pod_load": lambda task: usage[task.uid],
        "may_evict": lambda task: task.uid not in refused,
        "shared": shared,
    }
    return loads, arguments


def outcome(result: Round) -> list[Any]:
    """Everything a round decided; each evidence as its ``repr`` (key order, exact floats,
    ``-0.0``; orjson refuses the huge integers some seeds give)."""
    return [
        result.skipped,
        result.low,
        result.high,
        [(c.task.uid, repr(c.evidence)) for c in result.victims],
    ]


@pytest.mark.parametrize("seed", range(60))
def test_select_evidence_is_the_plain_evidence(seed: int) -> None:
    loads, arguments = seeded_round(seed)
    fast = select(loads(), **arguments)
    plain = plain_select(loads(), **arguments)
    assert outcome(fast) == outcome(plain)


def test_seeded_rounds_reach_victims_and_every_skip() -> None:
    """The seeds above are worth comparing: most rounds choose victims, some skip."""
    results = [select(loads(), **arguments) for loads, arguments in map(seeded_round, range(60))]
    assert sum(len(r.victims) for r in results) > 300
    assert {r.skipped for r in results} >= {"", NO_HIGH}


def test_a_wrong_format_would_be_caught() -> None:
    """The comparison fails on a one-character difference in one victim's sentence."""
    loads, arguments = seeded_round(1)
    fast = select(loads(), **arguments)
    assert fast.victims
    fast.victims[-1].evidence["why"] = fast.victims[-1].evidence["why"].replace(".", ",", 1)
    assert outcome(fast) != outcome(plain_select(loads(), **arguments))


# -- the sentence's number formatting --------------------------------------------------------

EDGES = (math.nan, math.inf, -math.inf, -0.0, 0.0, 5e-324, 1.7976931348623157e308, 0.5, 2.5)


@given(
    name=st.text(max_size=20),
    p_cpu=st.floats(),
    p_mem=st.floats(),
    target_text=st.text(max_size=30),
    room_cpu=st.floats(),
    room_mem=st.floats(),
    rank=st.integers(),
    u_cpu=st.floats(),
    u_mem=st.floats(),
    source=st.sampled_from(("metrics", "request")),
)
@example("n", math.nan, math.inf, "%", -math.inf, -0.0, 0, 5e-324, 1.7976931348623157e308, "x")
@example("n%s", 0.5, 2.5, "%d%%", 50.0, 1.5 * GIB, -1, 1050.0, 0.05 * GIB, "request")
@example("n", 99.5, 100.5, "", 1e22, 1e300, 2**80, 0.04999, 2.675 * GIB, "metrics")
def test_why_format_is_the_f_string(
    name: str,
    p_cpu: float,
    p_mem: float,
    target_text: str,
    room_cpu: float,
    room_mem: float,
    rank: int,
    u_cpu: float,
    u_mem: float,
    source: str,
) -> None:
    expected = plain_why(
        name, p_cpu, p_mem, target_text, room_cpu, room_mem, rank, u_cpu, u_mem, source
    )
    fields = (name, p_cpu, p_mem, target_text, room_cpu / 1000, room_mem / GIB, rank)
    assert WHY % (*fields, u_cpu / 1000, u_mem / GIB, source) == expected


@pytest.mark.parametrize("value", EDGES, ids=[repr(v) for v in EDGES])
def test_why_format_edges(value: float) -> None:
    args = ("n", value, value, " t ", value, value, 3, value, value, "metrics")
    fields = ("n", value, value, " t ", value / 1000, value / GIB, 3)
    assert WHY % (*fields, value / 1000, value / GIB, "metrics") == plain_why(*args)


# -- the plugin's parts ----------------------------------------------------------------------


def job(key: str, statuses: list[TaskStatus], minimum: int, *, implicit: bool = False) -> JobInfo:
    namespace, name = key.split("/")
    tasks = {
        f"{namespace}/{name}-{i}": TaskInfo(
            f"{name}-{i}", namespace, f"{name}-{i}", key, status, Resource(), Resource()
        )
        for i, status in enumerate(statuses)
    }
    return JobInfo(key, namespace, name, min_available=minimum, implicit=implicit, tasks=tasks)


@pytest.mark.parametrize("seed", range(20))
def test_gang_counts_decide_as_the_plain_check(seed: int) -> None:
    rng = random.Random(seed)
    jobs: dict[str, JobInfo] = {}
    for i in range(12):
        size = rng.randrange(0, 30)
        statuses = [
            rng.choice((TaskStatus.RUNNING,) * 3 + (TaskStatus.PENDING,)) for _ in range(size)
        ]
        jobs[f"ns/j{i}"] = job(
            f"ns/j{i}", statuses, rng.randrange(0, size + 2), implicit=i % 5 == 0
        )
    asked = [t for j in jobs.values() for t in j.tasks.values()]
    asked += [TaskInfo("x", "ns", "x", "ns/gone", TaskStatus.RUNNING, Resource(), Resource())]
    rng.shuffle(asked)
    asked += asked[: len(asked) // 3]  # asked again: a refused job stays refused
    session = cast(Session, SimpleNamespace(jobs=SimpleNamespace(lookup=jobs.get)))
    fast = GangCounts(session)
    plain = plain_gang(jobs)
    decisions = [(fast.take(t), plain(t)) for t in asked]
    assert [f for f, _ in decisions] == [p for _, p in decisions]
    assert {f for f, _ in decisions} == {True, False}


def test_build_victim_is_the_constructed_victim() -> None:
    task = TaskInfo("u", "ns", "p", "ns/j", TaskStatus.RUNNING, Resource(), Resource())
    evidence = {"why": "because"}
    built = build_victim(task, "low-node-utilization", evidence, "rescheduling")
    constructed = Victim(task, "low-node-utilization", evidence, "rescheduling")
    assert built == constructed
    assert vars(built) == vars(constructed)
    assert list(vars(built)) == list(vars(constructed))
    assert built.evidence is evidence
    assert pickle.loads(pickle.dumps(built)) == constructed
    with pytest.raises(FrozenInstanceError):
        built.reason = "other"  # type: ignore[misc]


@pytest.mark.parametrize("seed", range(10))
def test_candidates_are_the_plain_filter(seed: int) -> None:
    """``_candidates`` inlines :func:`never_victim` and ``is_system`` and builds the sort
    keys in the same pass: the tasks of the plain filter, for tasks preemptable whatever
    their kind (at behaviour level 1 a DaemonSet pod may be), sorted by
    :func:`victim_order`."""
    rng = random.Random(seed)
    tasks: dict[str, TaskInfo] = {}
    for i in range(60):
        task = TaskInfo(
            f"u{i}",
            rng.choice(("ns", "kube-system", "other")),
            f"p{i}",
            "ns/j",
            rng.choice((TaskStatus.RUNNING, TaskStatus.RUNNING, TaskStatus.PENDING)),
            Resource(),
            Resource(),
            preemptable=rng.random() < 0.8,
            priority_class=rng.choice(("", "prod", *sorted(CRITICAL_CLASSES))),
            owner_kind=rng.choice(("", "ReplicaSet", "Job", "DaemonSet")),
            annotations=rng.choice(({}, {"a": "b"}, {MIRROR: "x"})),
            pod_priority=rng.choice((0, 0, 100, -5)),
            k8s_qos=rng.choice(
                ("BestEffort", "Burstable", "Guaranteed", "" if seed % 2 else "Burstable")
            ),
            best_effort=rng.random() < 0.5,
        )
        tasks[task.key] = task
    session = cast(Session, SimpleNamespace(nodes={"n": SimpleNamespace(tasks=tasks)}))
    plain = [
        t
        for t in tasks.values()
        if t.status == TaskStatus.RUNNING and t.preemptable and not never_victim(t)
    ]
    assert _candidates(session, "n") == sorted(plain, key=victim_order)
    assert 0 < len(plain) < len(tasks)


def folded_gangs(seed: int) -> ClusterState:
    """A folded cluster of PodGroup jobs with Running and Pending pods, and some pods of
    no PodGroup."""
    rng = random.Random(seed)
    events = []
    for g in range(8):
        events.append(
            watch("podgroups", build_podgroup("ns", f"g{g}", min_member=rng.randrange(5)))
        )
        for i in range(rng.randrange(7)):
            phase = rng.choice(("Running", "Running", "Pending", "Succeeded"))
            node = "" if phase == "Pending" else "n1"
            events.append(
                watch("pods", build_pod("ns", f"g{g}-{i}", group=f"g{g}", node=node, phase=phase))
            )
    events += [watch("pods", build_pod("ns", f"solo{i}", node="n1")) for i in range(3)]
    state = ClusterState()
    for event in events:
        state.apply(event.with_offset(state.position))
    return state


def gang_session(state: ClusterState, jobs: Mapping[str, JobInfo]) -> Session:
    """A session double over a folded cluster whose lookups return ``jobs``' objects."""
    world = SimpleNamespace(cluster=state)
    return cast(Session, SimpleNamespace(jobs=SimpleNamespace(lookup=jobs.get), world=world))


@pytest.mark.parametrize("seed", range(12))
def test_gang_counts_from_the_index_decide_as_counting(seed: int) -> None:
    """Jobs the session has not changed are counted by the projection's running index; the
    decisions are those of counting every task (break the index: this fails)."""
    state = folded_gangs(seed)
    asked = sorted(state.tasks.values(), key=lambda t: t.uid) * 2
    random.Random(seed).shuffle(asked)
    fast = GangCounts(gang_session(state, state.jobs))
    plain = plain_gang(state.jobs)
    decisions = [(fast.take(t), plain(t)) for t in asked]
    assert [f for f, _ in decisions] == [p for _, p in decisions]


def test_a_job_the_session_changed_is_counted_not_read_from_the_index() -> None:
    """The session staged a change to a job (its lookup is a clone): the count is of the
    clone's tasks, not the fold's."""
    events = [watch("podgroups", build_podgroup("ns", "g", min_member=2))]
    events += [watch("pods", build_pod("ns", f"g-{i}", group="g", node="n1")) for i in range(3)]
    state = ClusterState()
    for event in events:
        state.apply(event.with_offset(state.position))
    job = state.jobs["ns/g"]
    staged = {key: replace(task) for key, task in job.tasks.items()}
    staged["ns/g-0"].status = TaskStatus.RELEASING  # e.g. evicted earlier in the session
    clones = {"ns/g": replace(job, tasks=staged)}
    task = job.tasks["ns/g-1"]
    assert GangCounts(gang_session(state, state.jobs)).take(task)  # 3 Running, minimum 2
    assert not GangCounts(gang_session(state, clones)).take(task)  # 2 Running in the session


@pytest.mark.parametrize("seed", range(60))
def test_a_round_over_the_low_and_high_loads_is_the_whole_round(seed: int) -> None:
    """The plugin hands ``select`` only the low and high nodes and the count of all: the
    same round as over every node."""
    loads, arguments = seeded_round(seed)
    everyone = loads()
    low, high, count = classify(everyone, arguments["params"])
    kept = {load.name for load in (*low, *high)}
    fewer = [load for load in loads() if load.name in kept]
    assert outcome(select(fewer, taking_part=count, **arguments)) == outcome(
        select(everyone, **arguments)
    )


@pytest.mark.parametrize("seed", range(20))
def test_round_loads_are_node_loads_less_the_nodes_neither_low_nor_high(seed: int) -> None:
    rng = random.Random(seed)
    usage = UsageState()
    nodes = []
    for i in range(40):
        a_cpu = rng.choice((0.0, 4000.0, 16000.0))
        a_mem = rng.choice((0.0, 8.0 * GIB, 64.0 * GIB))
        node = NodeInfo(f"n{i:02d}", Resource(a_cpu, a_mem), Resource(a_cpu, a_mem))
        node.unschedulable = rng.random() < 0.1
        node.ready = rng.random() < 0.9
        nodes.append(node)
        if rng.random() < 0.1:
            continue  # no series: stale
        series = usage.nodes[node.name] = Series()
        for t in range(rng.randrange(4)):  # none: stale too
            share = rng.choice((0.05, 0.19, 0.2, 0.5, 0.8, 0.85, 0.9, 1.2))
            cpu, memory = float(int(a_cpu * share)), float(int(a_mem * share))
            series.add(1000.0 + 30 * t, cpu, memory, keep_after=0.0, limit=100)
    params = LnuParams({"cpu": 20, "memory": 20}, {"cpu": 80, "memory": 85})
    now = from_seconds(1100.0)
    period = timedelta(minutes=5)
    every, stale = node_loads(nodes, usage, now, period)
    low, high, count = classify(every, params)
    kept = {load.name for load in (*low, *high)}
    loads, stale_too, taking_part = round_loads(
        nodes, usage, to_seconds(now), period.total_seconds(), params
    )
    assert [vars_of(load) for load in loads] == [
        vars_of(load) for load in every if load.name in kept
    ]
    assert (stale_too, taking_part) == (stale, count)
    assert len(loads) < count  # some nodes are neither low nor high


def vars_of(load: NodeLoad) -> tuple[Any, ...]:
    return (load.name, load.alloc_cpu, load.alloc_memory, load.cpu, load.memory, load.samples)
