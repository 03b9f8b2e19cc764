"""Behaviour level 3's quiet-tick rule: a node update no session can see wakes no tick.

Level ≤ 2 compares ``ClusterState.version`` (every watch change); level 3 compares
``sched_version``, which a node update leaving the node's model fields equal (a status
heartbeat) does not bump. The proof runs seeded scenarios with heartbeats, node changes a
session can see (cordon, taint, Ready, allocatable, zone label), Pending pods arriving,
pods going away, samples and a TDM window, simulated at both levels:

* at level 3, every tick the new rule skips while the level-2 counter moved since the
  last session (a tick level 2 would have run) is decided anyway, on the same world. It
  decides nothing, or only what time alone made due: the same world decided at the last
  session's time decides nothing (TDM's eviction budget reopens ``tdm.evict.period``
  after the last eviction; level 2 acted at the next heartbeat's tick, level 3 at the
  next evict-period firing, visible change, or :data:`QUIET_TICK_LIMIT` after its last
  session);
* both levels make the same decisions (type, pod, node, reason), each at level 3 no
  earlier and less than :data:`QUIET_TICK_LIMIT` later than at level 2, with far fewer
  sessions.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest

from controller.drive.triggers import trigger_event
from controller.policy.decide import decide
from controller.policy.loader import load_policy
from controller.policy.step import QUIET_TICK_LIMIT, Step
from controller.simulate.runner import RunResult, Simulation
from streams.events import Event, format_time
from tests.builders import JSON, at, build_node, build_pod, build_queue, node_metrics, watch

CONFIG: dict[str, Any] = {
    "actions": "allocate, shuffle",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {
            "plugins": [
                {"name": "proportion"},
                {"name": "predicates"},
                {
                    "name": "tdm",
                    "arguments": {
                        "tdm.revocable-zone.rz1": "20:06-20:14",
                        "tdm.evict.period": "1m",
                    },
                },
            ]
        },
    ],
}
NODES = 5
MINUTES = 20
ZONE = "volcano.sh/revocable-zone"


def heartbeat(node: JSON, when: datetime) -> JSON:
    """``node`` with its Ready condition's times moved to ``when`` (what a kubelet sends)."""
    out = {**node, "status": {**node["status"]}}
    out["status"]["conditions"] = [
        {**c, "lastHeartbeatTime": format_time(when)} for c in node["status"]["conditions"]
    ]
    return out


def scenario(seed: int) -> list[Event]:
    """A seeded cluster's 20 minutes: heartbeats every 3 s, a visible node change
    every ~15 s, a Pending pod every ~40 s, a pod gone every ~45 s, a sample per node a
    minute."""
    rng = random.Random(seed)
    shape: dict[str, dict[str, Any]] = {
        f"n{i}": {"cpu": rng.choice(["4", "8"]), "zone": i < 2, "taint": False, "cordon": False}
        for i in range(NODES)
    }
    shape["n4"]["ready"] = True

    def node(name: str) -> JSON:
        s = shape[name]
        return build_node(
            name,
            cpu=s["cpu"],
            labels={ZONE: "rz1"} if s["zone"] else {},
            taints=[{"key": "x", "effect": "NoSchedule"}] if s["taint"] else None,
            unschedulable=s["cordon"],
            ready=s.get("ready", True),
        )

    events = [watch("queues", build_queue())]
    events += [watch("nodes", node(name)) for name in shape]
    pods: list[JSON] = []
    for i in range(8):
        pod = build_pod("ns", f"run-{i}", node=f"n{i % NODES}", cpu=str(rng.randint(1, 3)))
        pods.append(pod)
        events.append(watch("pods", pod))
    for second in range(1, MINUTES * 60):
        when = at(second / 60)
        if second % 3 == 0:  # a heartbeat
            events.append(watch("nodes", heartbeat(node(rng.choice(list(shape))), when), when))
        if rng.random() < 1 / 15:  # a change a session can see
            name = rng.choice(list(shape))
            what = rng.choice(["cpu", "zone", "taint", "cordon", "ready"])
            s = shape[name]
            if what == "cpu":
                s["cpu"] = rng.choice(["2", "4", "8", "16"])
            else:
                s[what] = not s.get(what, True)
            events.append(watch("nodes", heartbeat(node(name), when), when, "MODIFIED"))
        if rng.random() < 1 / 40:  # a Pending pod, sometimes preemptable in the zone
            spot = rng.random() < 0.5
            pod = build_pod(
                "ns",
                f"p-{second}",
                phase="Pending",
                cpu=str(rng.randint(1, 6)),
                created=when,
                annotations={ZONE: "*", "volcano.sh/preemptable": "true"} if spot else None,
            )
            pods.append(pod)
            events.append(watch("pods", pod, when))
        if pods and rng.random() < 1 / 45:  # a pod goes away
            gone = pods.pop(rng.randrange(len(pods)))
            events.append(watch("pods", gone, when, "DELETED"))
        if second % 60 == 30:
            events += [node_metrics(name, cpu="1", memory="1Gi", when=when) for name in shape]
    return events


class ProbingStep(Step):
    """A step that also decides every tick the level-3 rule skips while the level-2
    counter moved since the last tick session (a tick level 2 would have run); where that
    decides something, also the same world at the last session's time."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: (tick time, its decisions, the decisions at the last session's time)
        self.probed: list[tuple[datetime, list[Event], list[Event]]] = []
        self._legacy_at_session = -1
        self._session_at = at(0)

    def on_trigger(self, trigger: Event) -> list[Event]:
        sessions, legacy = self.sessions, self.world.cluster.version
        out = super().on_trigger(trigger)
        if trigger.data.get("kind") == "tick":
            if self.sessions > sessions:
                self._legacy_at_session, self._session_at = legacy, trigger.at
            elif legacy != self._legacy_at_session:
                found = decide(self.world, trigger, self.config, self.eviction)
                earlier: list[Event] = []
                if found:
                    then = trigger_event(self._session_at, trigger.data["trigger"], "tick")
                    earlier = decide(self.world, then, self.config, self.eviction)
                self.probed.append((trigger.at, found, earlier))
        return out


def simulate(seed: int, level: int, *, probe: bool = False) -> tuple[RunResult, Step]:
    policy = load_policy({**CONFIG, "behaviour": level})
    sim = Simulation(policy.config, eviction=policy.eviction)
    if probe:
        sim.step = ProbingStep(config=policy.config, eviction=policy.eviction)
        sim.world = sim.step.world
        sim.result = RunResult(sim.log, sim.world)
    end = at(MINUTES)
    return sim.run(scenario(seed), until=end), sim.step


def decisions(result: RunResult) -> list[tuple[str, str, Any]]:
    return [(format_time(d.at), d.type, d.data) for d in result.decisions]


def what(decision: Event) -> tuple[str, str, str, str]:
    """A decision without its time and evidence: type, pod, node, reason."""
    data = decision.data
    return decision.type, data["pod"], str(data.get("node")), str(data.get("reason"))


SEEDS = [pytest.param(seed, id=f"seed-{seed}") for seed in (1, 2, 3)]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_tick_level_3_skips_decides_nothing(seed: int) -> None:
    result, step = simulate(seed, 3, probe=True)
    assert isinstance(step, ProbingStep)
    assert result.world.cluster.rules.behaviour == 3
    assert len(step.probed) > 100  # heartbeats woke these ticks at level 2
    deciding = [(when, earlier) for when, found, earlier in step.probed if found]
    assert len(deciding) < len(step.probed) / 10
    assert [(when, earlier) for when, earlier in deciding if earlier] == []  # time alone
    plain, _ = simulate(seed, 3)
    assert decisions(result) == decisions(plain)  # probing changed nothing


@pytest.mark.parametrize("seed", SEEDS)
def test_both_levels_write_the_same_decisions_with_fewer_sessions(seed: int) -> None:
    new, _ = simulate(seed, 3)
    old, _ = simulate(seed, 2)
    assert old.world.cluster.rules.behaviour == 2
    assert len(new.decisions) > 10  # binds and TDM evictions: the scenario decides things
    pairs = list(
        zip(
            sorted(new.decisions, key=lambda d: (what(d), d.at)),
            sorted(old.decisions, key=lambda d: (what(d), d.at)),
            strict=True,
        )
    )
    assert [what(a) for a, _ in pairs] == [what(b) for _, b in pairs]
    assert all(timedelta(0) <= a.at - b.at < QUIET_TICK_LIMIT for a, b in pairs)
    assert new.sessions < old.sessions / 2
