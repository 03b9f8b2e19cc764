"""A TDM window close decides the same, byte for byte, on its fast path and its plain one.

The fast path reads the fold's zone index (``projections.zonetasks``, kept up to date task
by task) and stages the evictions in one batch (``Statement.evict_all``). The plain path
is the same cycle over the same world with the fold's indexes hidden (so the plugin walks
the zone's nodes) and with the shuffle action staging victim by victim through
``Statement.evict``, as it did before the batch. Seeded clusters go through several
rounds (closes and session ticks, the decisions folded back, churn in between: pods
finishing, deleted, re-created with another priority, nodes relabelled, budgets
changed), so the index must follow every change.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import orjson
import pytest

from controller.policy.actions.shuffle import RunningTasks, ShuffleAction
from controller.policy.engine import run_cycle
from controller.policy.framework.errors import StatementError
from controller.policy.framework.session import Session
from controller.policy.loader import load_config
from projections.world import World
from streams.events import Event, format_time, make_event
from tests.builders import at, build_node, build_pod, build_podgroup, build_queue, watch

ARGS = {
    "tdm.revocable-zone.rz1": "10:00-21:00",
    "tdm.revocable-zone.rz2": "10:00-21:05",
    "tdm.evict.period": "1m",
}
CONFIG = {
    "actions": "allocate, shuffle",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {
            "plugins": [
                {"name": "predicates"},
                {"name": "proportion"},
                {"name": "nodeorder"},
                {"name": "tdm", "arguments": ARGS},
            ]
        },
    ],
    "timezone": "UTC",
    "schedulerName": "volcano",
}
OPT_IN = {"volcano.sh/revocable-zone": "*", "volcano.sh/preemptable": "true"}
BUDGETS = [
    {},
    {"volcano.sh/jdb-min-available": "2"},
    {"volcano.sh/jdb-min-available": "40%"},
    {"volcano.sh/jdb-max-unavailable": "2"},
    {"volcano.sh/jdb-max-unavailable": "60%"},
    {"volcano.sh/jdb-max-unavailable": "abc"},
]
NODES = [f"n{i}" for i in range(8)]
ZONE_OF = {"n0": "rz1", "n1": "rz1", "n2": "rz1", "n3": "rz1", "n4": "rz2", "n5": "rz2"}
START = datetime.fromisoformat("2026-11-21T20:00:00+00:00")


def _node(name: str, rng: random.Random) -> dict[str, Any]:
    zone = ZONE_OF.get(name)
    if zone is not None and rng.random() < 0.1:
        zone = "rz2" if zone == "rz1" else "rz1"  # relabelled
    labels = {"volcano.sh/revocable-zone": zone} if zone else {}
    return build_node(name, cpu="64", memory="256Gi", labels=labels, ready=rng.random() < 0.95)


def _pod(name: str, rng: random.Random) -> dict[str, Any]:
    phase = rng.choice(["Running"] * 6 + ["Pending", "Succeeded", "Failed"])
    group = rng.choice([None, *(f"g{i}" for i in range(8))])
    return build_pod(
        "ns",
        name,
        node="" if phase == "Pending" else rng.choice(NODES),
        phase=phase,
        group=group,
        priority=rng.choice([None, 0, 5]),
        annotations=dict(OPT_IN) if rng.random() < 0.85 else {},
        labels={"app": rng.choice(["web", "db"])},
        started=START + timedelta(seconds=rng.choice([0, 0, 30, 60, 90])),
    )


def _podgroup(name: str, rng: random.Random) -> dict[str, Any]:
    return build_podgroup("ns", name, annotations=dict(rng.choice(BUDGETS)))


def cluster(rng: random.Random, behaviour: int, pdb: bool) -> list[Event]:
    config = {"config": {"schedulerName": "volcano"}, "source": "t", "behaviour": behaviour}
    events = [make_event("config.applied", at(0), config), watch("queues", build_queue())]
    events += [watch("nodes", _node(name, rng)) for name in NODES]
    events += [watch("podgroups", _podgroup(f"g{i}", rng)) for i in range(8)]
    events += [watch("pods", _pod(f"p{i}", rng)) for i in range(70)]
    if pdb:
        budget = {
            "metadata": {"namespace": "ns", "name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 6},
        }
        events.append(watch("poddisruptionbudgets", budget))
    return events


def churn(rng: random.Random, when: datetime) -> list[Event]:
    """Changes between two rounds: pods re-created or deleted, nodes, budgets."""
    events = []
    for _ in range(rng.randint(5, 15)):
        roll = rng.random()
        if roll < 0.1:
            name = rng.choice(NODES)
            events.append(watch("nodes", _node(name, rng), when, "MODIFIED"))
        elif roll < 0.2:
            name = f"g{rng.randrange(8)}"
            events.append(watch("podgroups", _podgroup(name, rng), when, "MODIFIED"))
        else:
            pod = _pod(f"p{rng.randrange(80)}", rng)
            kind = rng.choice(["MODIFIED", "MODIFIED", "ADDED", "DELETED"])
            events.append(watch("pods", pod, when, kind))
    return events


class _Unindexed:
    """The cluster projection with its maintained indexes hidden (the plain path)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in ("zone_tasks", "queue_totals"):
            raise AttributeError(name)
        return getattr(self._inner, name)


@dataclass
class _PlainWorld:
    cluster: Any
    history: Any
    usage: Any
    oom: Any
    pressure: Any
    pdbs: Any


def plain(world: World) -> Any:
    return _PlainWorld(
        _Unindexed(world.cluster), world.history, world.usage, world.oom, world.pressure, world.pdbs
    )


def one_by_one(self: ShuffleAction, ssn: Session) -> None:
    """The shuffle action as it staged before the batch: ``Statement.evict`` per victim."""
    del self
    victims = ssn.victim_tasks(RunningTasks(ssn))
    if not victims:
        return
    stmt = ssn.statement()
    for victim in victims:
        try:
            stmt.evict(victim.task, victim.reason, source=victim.source, evidence=victim.evidence)
        except StatementError:
            continue
    stmt.commit()


def trigger(when: datetime, kind: str) -> Event:
    data = {"trigger": f"t-{kind}", "kind": kind, "scheduled": format_time(when)}
    if kind == "window-end":
        data["zone"] = "rz1"
    return make_event("trigger.fired", when, data)


def encoded(decisions: list[Event]) -> list[tuple[str, str, bytes]]:
    return [
        (event.type, event.id, orjson.dumps(event.data, option=orjson.OPT_SORT_KEYS))
        for event in decisions
    ]


#: (seed, behaviour level, a PodDisruptionBudget on the web pods)
CASES = [
    pytest.param(1, 2, False, id="seed1-level2"),
    pytest.param(2, 2, True, id="seed2-level2-pdb"),
    pytest.param(3, 1, False, id="seed3-legacy"),
    pytest.param(4, 1, True, id="seed4-legacy-pdb"),
    pytest.param(5, 2, False, id="seed5-level2"),
]


@pytest.mark.parametrize(("seed", "behaviour", "pdb"), CASES)
def test_close_decides_the_same_on_both_paths(
    seed: int, behaviour: int, pdb: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    world = World()
    for event in cluster(rng, behaviour, pdb):
        world.apply(event.with_offset(world.position))
    config = load_config(CONFIG)
    evicted = 0
    # rz1 closes at 21:00, rz2 at 21:05; a round every evict period, ticks between
    when = datetime.fromisoformat("2026-11-21T21:00:01+00:00")
    for round_ in range(8):
        fired = trigger(when, "tick" if round_ % 3 == 2 else "window-end")
        fast = run_cycle(world, fired, config)
        with monkeypatch.context() as patched:
            patched.setattr(ShuffleAction, "execute", one_by_one)
            slow = run_cycle(plain(world), fired, config)
        assert encoded(fast) == encoded(slow), f"round {round_}"
        evicted += sum(event.type == "decision.evict" for event in fast)
        for event in [fired, *fast, *churn(rng, when)]:
            world.apply(event.with_offset(world.position))
        when += timedelta(minutes=1, seconds=rng.choice([0, 5]))
    assert evicted >= 8  # the rounds do evict (several per round)
