"""preempt's room bound (controller/policy/actions/preempt/roombound.py) changes no decision.

The full-cluster benchmark's scenario (benchmarks/fulltrace.py), scaled down, is simulated
with the action's shortcuts and on the plain path (``PreemptAction(fast=False)``: no
bound, no rank, no light dry run), every record of the two logs compared; the bound
applies only where the session's ``preemptable`` answer is a subset of priority's; and a
bound kept with the fold's reading of a node follows a job whose priority changed while
the node did not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from benchmarks.bench_fullpreempt import check_preemptions
from benchmarks.bench_fullpreempt import config as bench_config
from benchmarks.fulltrace import TraceScale, at, generate
from controller.policy.actions import preempt as preempt_mod
from controller.policy.actions.preempt import PreemptAction
from controller.policy.actions.preempt.roombound import RoomBound
from controller.policy.builtins import BUILTIN_ACTIONS
from controller.policy.engine import build_cycle, run_cycle
from controller.policy.framework.plugin import ActionSpec
from controller.policy.framework.session import Session, open_session
from controller.policy.loader import load_config
from controller.simulate.runner import Simulation
from projections.world import World
from tests.builders import at as minutes
from tests.builders import watch
from tests.controller.policy.actions.preempt.cases import (
    UPSTREAM_TIERS,
    config,
    entry,
    group,
    node,
    pod,
    queue,
)
from tests.controller.policy.framework.scenario import trigger, world_of

JSON = dict[str, Any]
#: the benchmark's tiers with a second tier that registers a preemptable of its own
SECOND_TIER = [
    bench_config("allocate, preempt")["tiers"][0],
    {"plugins": [{"name": "conformance"}, {"name": "predicates"}, {"name": "proportion"}]},
]


@dataclass(frozen=True)
class Row:
    name: str
    scale: TraceScale
    topology: bool = False
    tiers: list[JSON] | None = None
    #: whether the bound takes part (priority in every tier registering a preemptable)
    bounded: bool = True


ROWS = [
    Row("full cluster, seed 28", TraceScale(nodes=30, seconds=20.0, rate=3.0, seed=28)),
    Row("full cluster, seed 7", TraceScale(nodes=40, seconds=20.0, rate=4.0, seed=7)),
    Row(
        "full cluster, many departures",
        TraceScale(nodes=30, seconds=30.0, rate=3.0, seed=3, departing=0.4),
    ),
    Row(
        "topology-aware (no bound there)",
        TraceScale(nodes=30, seconds=20.0, rate=3.0, seed=28),
        topology=True,
    ),
    Row(
        "conformance alone in a second tier: no bound",
        TraceScale(nodes=30, seconds=20.0, rate=3.0, seed=28),
        tiers=SECOND_TIER,
        bounded=False,
    ),
]


def _conf(row: Row) -> JSON:
    conf = bench_config("allocate, preempt")
    if row.tiers is not None:
        conf["tiers"] = row.tiers
    conf["configurations"] = [
        {"name": "preempt", "arguments": {"enableTopologyAwarePreemption": row.topology}}
    ]
    return conf


def _session(raw: JSON) -> Session:
    """A session of configuration ``raw`` on an empty world."""
    conf = load_config(raw)
    built = build_cycle(conf)
    return open_session(
        World(), trigger(minutes(1)), tiers=conf.tiers, plugins=built.plugins, ctx=built.ctx
    )


def _simulate(row: Row, *, fast: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], int]:
    """Every record of the run's log, and how many evictions it decided."""
    spec = ActionSpec(
        preempt_mod.NAME, preempt_mod.parse_args, lambda args: PreemptAction(args, fast=fast)
    )
    recording = generate(row.scale)
    with monkeypatch.context() as patch:
        patch.setitem(BUILTIN_ACTIONS, preempt_mod.NAME, spec)
        sim = Simulation(load_config(_conf(row)))
        result = sim.run(recording, until=at(row.scale.seconds + 5.0))
    evictions = [d for d in result.decisions if d.type == "decision.evict"]
    if row.bounded:  # else a second tier may evict without priority's consent (Volcano's rule)
        assert check_preemptions(recording, evictions) == []
    return [repr(event) for event in sim.log.events], len(evictions)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.name)
def test_the_bound_decides_as_the_plain_path(row: Row, monkeypatch: pytest.MonkeyPatch) -> None:
    fast, evicted = _simulate(row, fast=True, monkeypatch=monkeypatch)
    plain, _ = _simulate(row, fast=False, monkeypatch=monkeypatch)
    assert evicted > 0  # the cluster is full: the scenario really preempts
    assert len(fast) == len(plain)
    assert fast == plain
    assert (RoomBound.of(_session(_conf(row))) is not None) is row.bounded


@pytest.mark.parametrize(
    ("tiers", "bounded"),
    [
        (UPSTREAM_TIERS, True),  # conformance, gang and priority in one tier
        ([{"plugins": [entry("priority", "enablePreemptable")]}], True),
        ([{"plugins": [entry("gang", "enablePreemptable")]}], False),  # no priority
        ([{"plugins": [entry("priority", "enableTaskOrder")]}], False),  # no preemptable
        (
            [
                {"plugins": [entry("priority", "enablePreemptable")]},
                {"plugins": [entry("gang", "enablePreemptable")]},
            ],
            False,  # tier 2 may decide without priority
        ),
        (
            [
                {"plugins": [entry("priority", "enablePreemptable")]},
                {"plugins": [entry("priority", "enablePreemptable"), entry("gang")]},
            ],
            True,
        ),
        (
            [
                {"plugins": [entry("gang")]},  # registers no preemptable here
                {"plugins": [entry("priority", "enablePreemptable")]},
            ],
            True,
        ),
    ],
    ids=["upstream", "priority", "gang", "none", "second-tier", "twice", "later-tier"],
)
def test_the_bound_applies_only_under_priority(tiers: list[JSON], bounded: bool) -> None:
    assert (RoomBound.of(_session(config(tiers=tiers))) is not None) is bounded


def test_a_kept_bound_follows_a_priority_class_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The victims' job has PriorityClass ``late``, 100 at first: the preemptor (class
    ``mid``, 50) may not evict it, and the bound kept with the fold's reading of the node
    leaves the node out. Then a pod of class ``late`` shows its value is now 1: the fold
    lowers the job's priority without touching the node (the pod is Pending), so the
    reading and the bound kept with it stay, but the bound must now take the node."""
    events = [
        watch("queues", queue("q1")),
        watch("nodes", node("n0", "2", "2G")),
        watch("pods", pod("late-class", "late-class", klass="late", priority=100)),
        watch("pods", pod("mid-class", "mid-class", klass="mid", priority=50)),
        watch("podgroups", group("low", 1, "late")),
        watch("podgroups", group("hi", 1, "mid")),
        watch("pods", pod("low-0", "low", node="n0", cpu="2", memory="1G", preemptable="true")),
        watch("pods", pod("hi-0", "hi", cpu="2", memory="1G", klass="mid", priority=50)),
    ]
    tiers = [{"plugins": [entry("priority", "enablePreemptable", "enableJobStarving")]}]

    def decide(world: World, *, fast: bool, when: float) -> list[str]:
        spec = ActionSpec(
            preempt_mod.NAME, preempt_mod.parse_args, lambda args: PreemptAction(args, fast=fast)
        )
        with monkeypatch.context() as patch:
            patch.setitem(BUILTIN_ACTIONS, preempt_mod.NAME, spec)
            decided = run_cycle(world, trigger(minutes(when)), load_config(config(tiers=tiers)))
        return [f"{e.type} {e.data.get('pod')}" for e in decided]

    fast_world, plain_world = world_of(events), world_of(events)
    assert fast_world.cluster.jobs["c1/low"].priority == 100
    assert decide(fast_world, fast=True, when=1) == []
    assert decide(plain_world, fast=False, when=1) == []
    lowered = watch("pods", pod("late-again", "late-again", klass="late", priority=1))
    for world in (fast_world, plain_world):
        world.apply(lowered.with_offset(len(events)))
    assert fast_world.cluster.jobs["c1/low"].priority == 1
    assert decide(plain_world, fast=False, when=2) == ["decision.evict low-0"]
    assert decide(fast_world, fast=True, when=2) == ["decision.evict low-0"]


@pytest.mark.parametrize(
    ("cpu", "gpus", "phase", "expected"),
    [
        ("1", 0, "inter-job", ["free", "gpu"]),  # fits the future idle of two nodes
        ("1", 0, "intra-job", ["free", "gpu"]),
        ("2", 0, "inter-job", ["free"]),  # exactly the free room
        ("3", 0, "inter-job", []),  # more than any node has free
        ("3", 0, "intra-job", []),
        ("1", 1, "inter-job", ["gpu"]),  # only the GPU node has a GPU free
        ("1", 2, "inter-job", []),
    ],
)
def test_a_preemptor_without_victims_keeps_the_nodes_it_fits(
    cpu: str, gpus: int, phase: str, expected: list[str]
) -> None:
    """A preemptor whose job is no higher than any job (the bound is the future idle):
    answered from allocate's free columns, it keeps exactly the nodes whose future idle
    holds it (``free`` has 2 cpu free, ``gpu`` 1 cpu and 1 GPU, ``full`` nothing)."""
    gpu = node("gpu", "4", "8G")
    for key in ("allocatable", "capacity"):
        gpu["status"][key]["nvidia.com/gpu"] = "2"
    used = pod("used-gpu", "used-gpu", node="gpu", cpu="3", memory="1G", priority=0)
    used["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    waiting = pod("p", "p", cpu=cpu, memory="1G", priority=0)
    if gpus:
        waiting["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = str(gpus)
    events = [
        watch("queues", queue("q1")),
        watch("nodes", node("free", "4", "8G")),
        watch("nodes", node("full", "4", "8G")),
        watch("nodes", gpu),
        watch("podgroups", group("run", 1)),
        watch("podgroups", group("p", 1)),
        watch("pods", pod("run-0", "run", node="free", cpu="2", memory="1G", priority=0)),
        watch("pods", pod("run-1", "run", node="full", cpu="4", memory="1G", priority=0)),
        watch("pods", used),
        watch("pods", waiting),
    ]
    conf = load_config(config(tiers=UPSTREAM_TIERS))
    built = build_cycle(conf)
    ssn = open_session(
        world_of(events),
        trigger(minutes(1)),
        tiers=conf.tiers,
        plugins=built.plugins,
        ctx=built.ctx,
    )
    bound = RoomBound.of(ssn)
    assert bound is not None
    task = ssn.tasks["c1/p"]
    kept = bound.nodes(task, list(ssn.view.node_list), phase=phase)
    assert [n.name for n in kept] == expected
