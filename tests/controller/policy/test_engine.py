"""The engine: one trigger in, decisions out; pure, cached per config, deterministic."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from controller.policy.builtins import BUILTIN_PLUGINS
from controller.policy.engine import build_cycle, run_cycle
from controller.policy.framework.config import TideConfig
from controller.policy.framework.plugin import PluginContext, PluginSpec
from controller.policy.framework.points import Victim
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf, TierConf
from controller.policy.loader import load_config
from projections.model import TaskInfo
from streams.events import Event
from tests.builders import at, build_node, build_pod, build_podgroup, watch
from tests.controller.policy.framework.scenario import binds, evicts, trigger, world_of

BASE: dict[str, Any] = {
    "actions": "allocate, shuffle",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "evictor"}]},
    ],
}


class Evictor:
    """Nominates every Running task on nodes labelled ``drain=yes``."""

    name = "evictor"
    built = 0

    def on_session_open(self, ssn: Session) -> None:
        def victims(tasks: Sequence[TaskInfo]) -> list[Victim]:
            return [
                Victim(t, "low-node-utilization", {"node": t.node_name})
                for t in tasks
                if ssn.nodes.get(t.node_name) is not None
                and ssn.nodes[t.node_name].labels.get("drain") == "yes"
            ]

        ssn.add_victim_tasks_fn(self.name, victims)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def build_evictor(args: Any, ctx: PluginContext) -> Evictor:
    Evictor.built += 1
    return Evictor()


REGISTRY = {**BUILTIN_PLUGINS, "evictor": PluginSpec("evictor", lambda raw: None, build_evictor)}


def config() -> TideConfig:
    return load_config(BASE, plugins=REGISTRY)


def scenario() -> list[Event]:
    events = [watch("nodes", build_node(f"n{i:02d}", cpu="4")) for i in range(12)]
    events.append(watch("nodes", build_node("drained", labels={"drain": "yes"})))
    events += [watch("pods", build_pod("ns", f"r{i}", node="drained")) for i in range(3)]
    events += [
        watch("pods", build_pod("ns", f"busy{i}", node=f"n{i:02d}", cpu="3")) for i in range(6)
    ]
    for g in range(5):
        events.append(watch("podgroups", build_podgroup("ns", f"g{g}", min_member=2)))
        events += [
            watch(
                "pods",
                build_pod("ns", f"g{g}-{k}", group=f"g{g}", phase="Pending", cpu="2", priority=g),
            )
            for k in range(3)
        ]
    events += [
        watch("pods", build_pod("ns", f"solo{i}", phase="Pending", cpu="1")) for i in range(8)
    ]
    return events


def test_actions_run_in_order_and_decisions_carry_the_trigger() -> None:
    fired = trigger(at(5))
    decisions = run_cycle(world_of(scenario()), fired, config(), registry=REGISTRY)
    kinds = [e.type for e in decisions]
    assert kinds == sorted(kinds)  # all binds (allocate) before all evictions (shuffle)
    assert evicts(decisions) == ["ns/r0", "ns/r1", "ns/r2"]
    placed = binds(decisions)
    # every solo pod and every gang's minimum; third members only where 2 cpu remain
    assert sorted(placed) == sorted(
        [f"ns/solo{i}" for i in range(8)]
        + [f"ns/g{g}-{k}" for g in range(5) for k in range(2)]
        + ["ns/g0-2", "ns/g1-2"]
    )
    assert all(e.at == at(5) and e.cause == fired.id for e in decisions)
    assert len({e.id for e in decisions}) == len(decisions)


def test_the_world_is_not_changed() -> None:
    world = world_of(scenario())
    version = world.cluster.version
    pending = sorted(world.cluster.pending)
    first = run_cycle(world, trigger(at(5)), config(), registry=REGISTRY)
    assert world.cluster.version == version and sorted(world.cluster.pending) == pending
    assert run_cycle(world, trigger(at(5)), config(), registry=REGISTRY) == first


def test_plugins_are_built_once_per_config() -> None:
    conf = config()
    before = Evictor.built
    world = world_of(scenario())
    for minute in range(3):
        run_cycle(world, trigger(at(minute)), conf, registry=REGISTRY)
    assert Evictor.built == before + 1
    assert build_cycle(conf, registry=REGISTRY) is build_cycle(conf, registry=REGISTRY)


def test_hand_built_config_parses_args_and_skips_unknown_names() -> None:
    conf = TideConfig(
        actions=("reclaim", "allocate"),
        tiers=(TierConf((PluginConf.of("gang", all_flags=True), PluginConf.of("drf"))),),
    )
    built = build_cycle(conf)
    assert [p.name for p in built.plugins] == ["gang"]
    assert [a.name for a in built.actions] == ["allocate"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_same_inputs_in_any_insertion_order_give_identical_decisions(seed: int) -> None:
    """Watch events of distinct objects commute; only dict insertion order differs."""
    reference = run_cycle(world_of(scenario()), trigger(at(5)), config(), registry=REGISTRY)
    events = scenario()
    nodes = [e for e in events if e.data["resource"] == "nodes"]
    others = [e for e in events if e.data["resource"] != "nodes"]
    rng = random.Random(seed)
    rng.shuffle(nodes)
    rng.shuffle(others)
    shuffled = run_cycle(world_of(nodes + others), trigger(at(5)), config(), registry=REGISTRY)
    assert [(e.id, e.data) for e in shuffled] == [(e.id, e.data) for e in reference]


def test_allocate_runs_on_ticks_only_and_shuffle_on_every_trigger() -> None:
    world = world_of(scenario())
    for kind, has_binds in (("tick", True), ("window-end", False), ("evict-period", False)):
        decisions = run_cycle(world, trigger(at(5), kind=kind), config(), registry=REGISTRY)
        assert bool(binds(decisions)) is has_binds, kind
        assert evicts(decisions) == ["ns/r0", "ns/r1", "ns/r2"], kind
