"""World: one fold into every projection; History: the decision history policies read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from projections.base import BaseProjection, Projection, handles
from projections.cluster import ClusterState
from projections.history import History
from projections.oom import OOMState
from projections.pressure import PressureState
from projections.usage import UsageState
from projections.world import POLICY_MEMBERS, World
from streams.events import Event, make_event
from tests.builders import at, build_node, build_pod, watch


class Counter(BaseProjection):
    """A minimal extra projection: counts the records of one type."""

    name = "counter"

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    @handles("metrics.node")
    def _count(self, event: Event) -> None:
        self.count += 1

    def dump(self) -> bytes:
        return str(self.count).encode()

    def load(self, state: bytes) -> None:
        self.count = int(state)


def fold(projection: Any, events: list[Event]) -> Any:
    for event in events:
        projection.apply(event.with_offset(projection.position))
    return projection


def config(value: int) -> Event:
    return make_event("config.applied", at(value), {"config": {"tick": value}, "source": "x"})


def test_world_folds_into_every_member() -> None:
    counter = Counter()
    world = fold(
        World(extra=[counter]),
        [
            config(1),
            watch("nodes", build_node("n1")),
            make_event("metrics.node", at(1), {"metadata": {"name": "n1"}, "usage": {}}),
            config(2),
        ],
    )
    assert world.config == {"tick": 2}
    assert "n1" in world.cluster.nodes
    assert world.extra == {"counter": counter} and counter.count == 1
    assert world.position == world.cluster.position == world.history.position == 4
    assert counter.position == 4
    assert world.usage.position == world.oom.position == world.pressure.position == 4


def test_the_world_has_typed_policy_inputs_and_no_default_extras() -> None:
    world = World()
    assert world.extra == {}
    assert isinstance(world.usage, UsageState)
    assert isinstance(world.oom, OOMState)
    assert isinstance(world.pressure, PressureState)
    assert isinstance(world, Projection)
    assert tuple(m.name for m in world.members) == POLICY_MEMBERS


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param([Counter(), Counter()], id="twice"),
        pytest.param([History()], id="clashes-with-history"),
        pytest.param([UsageState()], id="clashes-with-usage"),
    ],
)
def test_member_names_must_be_unique(extra: list[Projection]) -> None:
    with pytest.raises(ValueError, match="two projections"):
        World(extra=extra)


def test_world_skips_offsets_it_has_folded() -> None:
    world = World()
    event = watch("pods", build_pod("ns", "a", cpu="1")).with_offset(0)
    world.apply(event)
    world.apply(event)
    assert world.cluster.version == 1 and world.position == 1


def test_events_not_yet_on_a_log_are_folded_without_moving_position() -> None:
    world = World()
    world.fold([watch("pods", build_pod("ns", "a"))])
    assert "ns/a" in world.cluster.tasks and world.position == 0


def test_world_accepts_members() -> None:
    cluster, history, usage = ClusterState(), History(), UsageState()
    world = World(cluster=cluster, history=history, usage=usage)
    assert world.cluster is cluster and world.history is history and world.usage is usage


def test_config_that_is_not_a_mapping_is_none() -> None:
    bad = make_event("config.applied", at(0), {"config": "text", "source": "x"})
    assert fold(World(), [config(1), bad]).config is None


def evict(
    node: str,
    minute: float,
    *,
    source: str = "tdm",
    zone: str | None = "rz1",
    namespace: str = "ns",
) -> Event:
    evidence = {"zone": zone} if zone is not None else {}
    return make_event(
        "decision.evict",
        at(minute),
        {
            "kind": "evict",
            "namespace": namespace,
            "pod": f"p{minute}",
            "uid": "u",
            "node": node,
            "reason": "tdm-window-closed",
            "source": source,
            "evidence": evidence,
        },
    )


def taint(kind: str, key: str, minute: float = 0) -> Event:
    return make_event(
        f"decision.{kind}",
        at(minute),
        {
            "kind": kind,
            "node": "n1",
            "taint": {"key": key, "value": "", "effect": "NoSchedule"},
            "reason": "eviction-taint",
            "source": "pressure",
            "evidence": {},
        },
    )


@pytest.mark.parametrize(
    ("events", "zone", "expected"),
    [
        pytest.param([], "rz1", None, id="never"),
        pytest.param([evict("n1", 1)], "rz1", at(1), id="one"),
        pytest.param([evict("n1", 1), evict("n1", 3)], "rz1", at(3), id="latest"),
        pytest.param([evict("n1", 3), evict("n1", 1)], "rz1", at(3), id="out-of-order"),
        pytest.param([evict("n1", 1, zone="rz2")], "rz1", None, id="other-zone"),
        pytest.param([evict("n1", 1, zone="rz2")], None, at(1), id="any-zone"),
        pytest.param([evict("n1", 1, zone=None)], "*", at(1), id="no-zone-evidence"),
        pytest.param([evict("n1", 1, source="preempt")], None, None, id="not-tdm"),
    ],
)
def test_last_tdm_eviction(
    events: list[Event], zone: str | None, expected: datetime | None
) -> None:
    assert fold(History(), events).last_tdm_eviction(zone) == expected


def test_evictions_per_node_namespace_and_overall() -> None:
    history = fold(
        History(),
        [evict("n1", 1), evict("n1", 2), evict("n2", 2, namespace="other"), evict("n1", 5)],
    )
    assert history.evictions_on_node("n1", at(0)) == 3
    assert history.evictions_on_node("n1", at(1), at(5)) == 2
    assert history.evictions_on_node("n1", at(2)) == 2
    assert history.evictions_on_node("n9", at(0)) == 0
    assert history.evictions_in_namespace("other", at(0)) == 1
    assert history.evictions_between(at(2), at(3)) == 2
    assert history.last_eviction_on_node("n1") == at(5)
    assert history.last_decision_by_source == {"tdm": at(5)}


def test_eviction_history_is_capped() -> None:
    history = fold(History(keep=3), [evict("n1", m) for m in range(6)])
    assert history.evictions_by_node["n1"] == [at(3), at(4), at(5)]
    assert history.evictions == [at(3), at(4), at(5)]


def test_taints_held_by_the_controller() -> None:
    history = fold(History(), [taint("taint", "b"), taint("taint", "a"), taint("untaint", "b", 1)])
    assert [t["key"] for t in history.held_taints("n1")] == ["a"]
    fold(history, [taint("untaint", "a", 2)])
    assert history.held_taints("n1") == [] and history.taints == {}


def test_triggers_and_failed_effects() -> None:
    fired = make_event(
        "trigger.fired",
        at(4),
        {"trigger": "resched", "kind": "interval", "scheduled": "2026-11-21T20:04:00Z"},
    )
    failed = make_event(
        "effect.failed",
        at(5),
        {"decision": "d1", "kind": "evict", "target": "ns/p", "error": "x"},
        cause="d1",
    )
    history = fold(History(), [fired, failed])
    assert history.last_fired == {"resched": at(4)}
    assert history.failed == {"d1"}


class Seen(Counter):
    """A Counter with its own ``apply`` (the World must call it for every event)."""

    name = "seen"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def apply(self, event: Event) -> None:
        self.calls += 1
        super().apply(event)


def test_world_apply_is_each_members_apply_in_turn() -> None:
    """Routing by type skips only calls that would do nothing; positions move as before."""
    events = [
        config(1),
        watch("nodes", build_node("n1")),
        make_event("metrics.node", at(1), {"metadata": {"name": "n1"}, "usage": {}}),
        watch("pods", build_pod("ns", "a", node="n1")),
        make_event("metrics.node", at(2), {"metadata": {"name": "n1"}, "usage": {}}),
    ]
    ahead, seen = Counter(), Seen()
    ahead.position = 3  # resumed from a checkpoint: offsets 0-2 are folded already
    world = World(extra=[ahead, seen])
    for offset, event in enumerate(events):
        world.apply(event.with_offset(offset))
    assert ahead.count == 1 and ahead.position == 5
    assert seen.count == 2 and seen.calls == 5 and seen.position == 5
    assert all(m.position == 5 for m in world.members)
    world.apply(events[2])  # not on a log: folded, no position moves
    assert ahead.count == 2 and world.position == 5 and ahead.position == 5


def test_fold_lines_folds_canonical_lines() -> None:
    from streams.codec import decode, encode

    events = [watch("nodes", build_node("n1")), watch("pods", build_pod("ns", "a", node="n1"))]
    lines = [encode(e) for e in events]
    world = World()
    assert world.fold_lines(lines) == 2
    reference = World()
    for line in lines:
        reference.apply(decode(line))
    assert world.dump() == reference.dump()
    assert "ns/a" in world.cluster.tasks
