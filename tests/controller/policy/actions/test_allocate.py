"""The allocate action as Volcano-style scenario tables: given a cluster (builder JSON folded
through the real World) and tiers, expect these binds (spec ``volcano.md`` §8)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.policy.builtins import BUILTIN_PLUGINS
from controller.policy.engine import run_cycle
from controller.policy.framework.config import TideConfig
from controller.policy.framework.plugin import PluginContext, PluginSpec
from controller.policy.framework.session import Session
from controller.policy.loader import load_config
from projections.model import NodeInfo, TaskInfo, TaskStatus
from projections.world import World
from streams.events import Event
from tests.builders import at, build_node, build_pod, build_podgroup, build_queue, watch
from tests.controller.policy.framework.scenario import binds, session, trigger, world_of

JSON = dict[str, Any]
CONF: dict[str, Any] = {
    "actions": "allocate",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}]},
    ],
}
TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def pending(name: str, **kw: Any) -> JSON:
    return build_pod("ns", name, phase="Pending", **kw)


def running(name: str, node: str, **kw: Any) -> JSON:
    return build_pod("ns", name, node=node, phase="Running", **kw)


@dataclass
class Case:
    name: str
    nodes: list[JSON]
    pods: list[JSON]
    expect: dict[str, str]
    podgroups: list[JSON] = field(default_factory=list)
    queues: list[JSON] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=lambda: CONF)

    def events(self) -> list[Event]:
        out = [watch("queues", q) for q in self.queues]
        out += [watch("nodes", n) for n in self.nodes]
        out += [watch("podgroups", g) for g in self.podgroups]
        out += [watch("pods", p) for p in self.pods]
        return out


CASES = [
    Case(
        "fits-only-the-bigger-node",
        nodes=[build_node("n1", cpu="2"), build_node("n2", cpu="4")],
        pods=[pending("p", cpu="3")],
        expect={"ns/p": "n2"},
    ),
    Case(
        "lowest-name-wins-a-tie",
        nodes=[build_node("n3"), build_node("n1"), build_node("n2")],
        pods=[pending("p")],
        expect={"ns/p": "n1"},
    ),
    Case(
        "gang-ready-binds-all",
        nodes=[build_node("n1", cpu="2"), build_node("n2", cpu="1")],
        podgroups=[build_podgroup("ns", "g", min_member=3)],
        pods=[pending(f"g-{i}", group="g") for i in range(3)],
        expect={"ns/g-0": "n1", "ns/g-1": "n1", "ns/g-2": "n2"},
    ),
    Case(
        "gang-not-ready-binds-nothing",
        nodes=[build_node("n1", cpu="2")],
        podgroups=[build_podgroup("ns", "g", min_member=3)],
        pods=[pending(f"g-{i}", group="g") for i in range(3)],
        expect={},
    ),
    Case(
        "gang-invalid-is-skipped",
        nodes=[build_node("n1", cpu="8")],
        podgroups=[build_podgroup("ns", "g", min_member=3)],
        pods=[pending(f"g-{i}", group="g") for i in range(2)],
        expect={},
    ),
    Case(
        "gang-partial-min-binds-what-is-ready",
        nodes=[build_node("n1", cpu="2")],
        podgroups=[build_podgroup("ns", "g", min_member=2)],
        pods=[pending(f"g-{i}", group="g") for i in range(3)],
        expect={"ns/g-0": "n1", "ns/g-1": "n1"},
    ),
    Case(
        "releasing-room-is-pipelined-not-bound",
        nodes=[build_node("n1", cpu="2")],
        pods=[running("old", "n1", cpu="2", deleting=at(0)), pending("p", cpu="2")],
        expect={},
    ),
    Case(
        "selector-and-taints-steer",
        nodes=[
            build_node("a-tainted", taints=[TAINT]),
            build_node("b-plain"),
            build_node("c-ssd", labels={"disk": "ssd"}),
        ],
        pods=[
            pending("wants-ssd", memory="1Gi", annotations={}, labels={}),
            pending("any"),
        ],
        expect={"ns/wants-ssd": "c-ssd", "ns/any": "b-plain"},
    ),
    Case(
        "scheduler-name-filter",
        nodes=[build_node("n1")],
        pods=[pending("mine"), pending("theirs", scheduler="default-scheduler")],
        expect={"ns/mine": "n1"},
    ),
    Case(
        "best-effort-is-left-to-backfill",
        nodes=[build_node("n1")],
        pods=[pending("be", cpu=None, memory=None)],
        expect={},
    ),
    Case(
        "pod-count-limit",
        nodes=[build_node("n1", pods="1"), build_node("n2")],
        pods=[running("r", "n1"), pending("p")],
        expect={"ns/p": "n2"},
    ),
    Case(
        "higher-priority-job-first-for-the-last-slot",
        nodes=[build_node("n1", cpu="1")],
        pods=[pending("low", priority=1), pending("high", priority=100)],
        expect={"ns/high": "n1"},
    ),
    Case(
        "queue-capability-caps-allocation",
        queues=[build_queue("default"), build_queue("small", capability={"cpu": "2"})],
        nodes=[build_node("n1", cpu="8")],
        podgroups=[build_podgroup("ns", f"j{i}", queue="small") for i in range(3)],
        pods=[pending(f"j{i}", group=f"j{i}") for i in range(3)],
        expect={"ns/j0": "n1", "ns/j1": "n1"},
    ),
    Case(
        "missing-queue-job-is-skipped",
        nodes=[build_node("n1")],
        podgroups=[build_podgroup("ns", "g", queue="nowhere")],
        pods=[pending("g-0", group="g")],
        expect={},
    ),
]
# the selector case needs a nodeSelector on the pod
CASES[7].pods[0]["spec"]["nodeSelector"] = {"disk": "ssd"}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_allocate(case: Case) -> None:
    world = world_of(case.events())
    decisions = run_cycle(world, trigger(at(1)), load_config(case.config))
    assert binds(decisions) == case.expect
    for event in decisions:
        assert event.data["reason"] == "allocate" and event.data["source"] == "allocate"
        assert event.at == at(1)
        assert {"node", "score", "gradient", "feasible", "job", "queue"} <= set(
            event.data["evidence"]
        )


def test_the_projection_is_not_mutated() -> None:
    case = CASES[2]
    world = world_of(case.events())
    before = {k: (t.status, t.node_name) for k, t in world.cluster.tasks.items()}
    idle = {n: node.idle.clone() for n, node in world.cluster.nodes.items()}
    assert len(binds(run_cycle(world, trigger(at(1)), load_config(CONF)))) == 3
    assert {k: (t.status, t.node_name) for k, t in world.cluster.tasks.items()} == before
    assert {n: node.idle for n, node in world.cluster.nodes.items()} == idle


def test_a_pipelined_only_statement_stays_staged() -> None:
    """Gang of 2: one task fits idle, one only future idle → neither committed nor discarded."""
    world = world_of(
        [
            watch("nodes", build_node("n1", cpu="2")),
            watch("nodes", build_node("n2", cpu="1")),
            watch("pods", running("old", "n1", cpu="2", deleting=at(0))),
            watch("podgroups", build_podgroup("ns", "g", min_member=2)),
            watch("pods", pending("g-0", group="g", cpu="1")),
            watch("pods", pending("g-1", group="g", cpu="2")),
        ]
    )
    config = load_config(CONF)
    ssn = _session(world, config)
    from controller.policy.actions.allocate import AllocateAction, AllocateArgs

    AllocateAction(AllocateArgs()).execute(ssn)
    assert ssn.decisions == []
    statuses = {k: ssn.tasks[k].status for k in ("ns/g-0", "ns/g-1")}
    assert statuses == {"ns/g-0": TaskStatus.ALLOCATED, "ns/g-1": TaskStatus.PIPELINED}


def _session(world: World, config: TideConfig) -> Session:
    from controller.policy.engine import build_cycle

    built = build_cycle(config)
    return session(world, config.tiers, built.plugins)


# -- node order, through a custom registry ------------------------------------------


class Scorer:
    name = "scorer"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_node_order_fn(self.name, lambda t, n: self.scores.get(n.name, 0.0))

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def with_scorer(scores: dict[str, float]) -> tuple[dict[str, PluginSpec], dict[str, Any]]:
    def build(args: Any, ctx: PluginContext) -> Scorer:
        return Scorer(scores)

    registry = {**BUILTIN_PLUGINS, "scorer": PluginSpec("scorer", lambda raw: None, build)}
    conf = {**CONF, "tiers": [*CONF["tiers"], {"plugins": [{"name": "scorer"}]}]}
    return registry, conf


def test_node_order_picks_the_highest_score_within_the_idle_gradient() -> None:
    registry, conf = with_scorer({"n1": 1, "n2": 50, "n3": 90})
    world = world_of(
        [
            watch("nodes", build_node("n1")),
            watch("nodes", build_node("n2")),
            watch("nodes", build_node("n3", cpu="2")),
            watch("pods", running("old", "n3", cpu="2", deleting=at(0))),
            watch("pods", pending("p")),
        ]
    )
    config = load_config(conf, plugins=registry)
    decisions = run_cycle(world, trigger(at(1)), config, registry=registry)
    # n3 scores best but fits only future idle: the idle gradient wins first
    assert binds(decisions) == {"ns/p": "n2"}
    assert decisions[0].data["evidence"]["score"] == 50


def test_predicate_error_cache_skips_nodes_failed_by_the_same_role() -> None:
    calls: list[str] = []

    class Counting:
        name = "counting"

        def on_session_open(self, ssn: Session) -> None:
            def predicate(t: TaskInfo, n: NodeInfo) -> None:
                calls.append(n.name)
                from controller.policy.framework.points import FitError, FitStatus

                if n.name == "n1":
                    raise FitError(FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE, "no")

            ssn.add_predicate_fn(self.name, predicate)

        def on_session_close(self, ssn: Session) -> None:
            del ssn

    registry = {
        **BUILTIN_PLUGINS,
        "counting": PluginSpec("counting", lambda raw: None, lambda a, c: Counting()),
    }
    conf = {**CONF, "tiers": [{"plugins": [{"name": "gang"}, {"name": "counting"}]}]}
    role = {"volcano.sh/task-spec": "worker"}
    events = [
        watch("nodes", build_node("n1")),
        watch("nodes", build_node("n2", cpu="1")),
        watch("podgroups", build_podgroup("ns", "g", min_member=1)),
        *(watch("pods", pending(f"g-{i}", group="g", annotations=role)) for i in range(2)),
    ]
    decisions = run_cycle(
        world_of(events), trigger(at(1)), load_config(conf, plugins=registry), registry=registry
    )
    assert list(binds(decisions).values()) == ["n2"]
    assert calls.count("n1") == 1  # the second worker did not ask n1 again
