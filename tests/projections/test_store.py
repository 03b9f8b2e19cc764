"""Checkpoints: state and position in one write; a resumed projection equals a refold."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from projections.base import CheckpointError, Projection
from projections.cluster import ClusterState
from projections.history import History
from projections.store import resume, run_projection
from projections.world import World
from streams.backends.checkpoints import MemoryCheckpointStore
from streams.backends.memory import MemoryLog
from streams.backends.sqlite_checkpoints import SQLiteCheckpointStore
from streams.events import Event, make_event
from tests.builders import (
    at,
    build_node,
    build_pod,
    build_podgroup,
    build_queue,
    node_metrics,
    pod_metrics,
    watch,
)


def decision(kind: str, name: str, minute: float, **extra: Any) -> Event:
    data = {
        "kind": kind,
        "namespace": "ns",
        "pod": name,
        "uid": f"ns-{name}",
        "node": "n1",
        "reason": "preempt",
        "source": "preempt",
        "evidence": {},
    }
    data.update(extra)
    return make_event(f"decision.{kind}", at(minute), data)


def scenario() -> list[Event]:
    """A small cluster life: every event type the world folds, in a plausible order."""
    events: list[Event] = [
        make_event("config.applied", at(0), {"config": {"actions": "allocate"}, "source": "t"}),
        watch("queues", build_queue()),
        watch("nodes", build_node("n1", labels={"volcano.sh/revocable-zone": "rz1"})),
        watch("nodes", build_node("n2", cpu="4")),
        watch("pods", build_pod("ns", "w0", node="n1", group="job", priority=10)),
        watch("pods", build_pod("ns", "w1", phase="Pending", group="job")),
        watch(
            "podgroups",
            build_podgroup(
                "ns", "job", min_member=2, annotations={"volcano.sh/jdb-max-unavailable": "1"}
            ),
        ),
        watch(
            "pods",
            build_pod(
                "ns", "solo", node="n2", cpu="500m", annotations={"volcano.sh/preemptable": "true"}
            ),
        ),
        watch("pods", build_pod("ns", "late", node="n3")),
        node_metrics("n1", cpu="2", memory="3Gi", when=at(1)),
        pod_metrics("ns", "w0", cpu="900m", memory="1Gi", when=at(1)),
        make_event(
            "trigger.fired",
            at(1),
            {"trigger": "tick", "kind": "tick", "scheduled": "2026-11-21T20:01:00Z"},
        ),
    ]
    bind = decision("bind", "w1", 1, node="n2")
    evict = decision(
        "evict", "solo", 1, source="tdm", reason="tdm-window-closed", evidence={"zone": "rz1"}
    )
    taint = make_event(
        "decision.taint",
        at(1),
        {
            "kind": "taint",
            "node": "n1",
            "taint": {"key": "tide/evict", "value": "", "effect": "NoSchedule"},
            "reason": "eviction-taint",
            "source": "pressure",
            "evidence": {},
        },
    )
    events += [bind, evict, taint]
    events += [
        make_event(
            "effect.applied",
            at(2),
            {"decision": bind.id, "kind": "bind", "target": "ns/w1"},
            cause=bind.id,
        ),
        watch(
            "pods",
            build_pod("ns", "w1", node="n2", phase="Pending", group="job"),
            at(2),
            "MODIFIED",
        ),
        make_event(
            "effect.failed",
            at(2),
            {"decision": evict.id, "kind": "evict", "target": "ns/solo", "error": "pdb"},
            cause=evict.id,
        ),
        decision("evict", "w0", 3),
        watch(
            "pods", build_pod("ns", "w0", node="n1", group="job", deleting=at(3)), at(3), "MODIFIED"
        ),
        watch("nodes", build_node("n3", cpu="2"), at(4)),
        watch("pods", build_pod("ns", "w0", node="n1", group="job"), at(5), "DELETED"),
        watch(
            "podgroups",
            build_podgroup("ns", "job", min_member=2, phase="Inqueue"),
            at(5),
            "MODIFIED",
        ),
        node_metrics("n1", cpu="1", memory="2Gi", when=at(5)),
        watch("nodes", build_node("n2", cpu="4"), at(6), "DELETED"),
        watch("queues", build_queue("batch", weight=2), at(6)),
    ]
    return events


def logged(events: list[Event]) -> MemoryLog:
    log = MemoryLog()
    log.append_now(events)
    return log


FACTORIES: dict[str, Callable[[], Projection]] = {
    "cluster": ClusterState,
    "history": History,
    "world": lambda: World(),
    "world-with-extras": World,
}


def full_fold(make: Any, events: list[Event]) -> Projection:
    projection: Projection = make()
    for event in logged(events).events:
        projection.apply(event)
    return projection


@pytest.mark.parametrize("kind", sorted(FACTORIES))
async def test_resumed_projection_equals_a_full_refold_at_every_cut(kind: str) -> None:
    make = FACTORIES[kind]
    events = scenario()
    log = logged(events)
    expected = full_fold(make, events).dump()
    for cut in range(len(events) + 1):
        store = MemoryCheckpointStore()
        await run_projection(log, make(), store, stop=cut)
        resumed = make()
        folded = await run_projection(log, resumed, store)
        assert folded == len(events) - cut
        assert resumed.dump() == expected, f"differs after resuming at {cut}"


async def test_resume_in_the_logs_sqlite_file(tmp_path: Path) -> None:
    pytest.importorskip("streams.backends.sqlite")
    from streams.backends.sqlite import SQLiteLog

    path = tmp_path / "tide.db"
    events = scenario()
    log = await SQLiteLog.open(path)
    await log.append(events)
    expected = full_fold(lambda: World(), events).dump()
    for cut in (0, 1, 5, 13, len(events)):
        store = await SQLiteCheckpointStore.open(path)
        await store.delete("world")
        await run_projection(log, World(), store, stop=cut)
        await store.close()
        store = await SQLiteCheckpointStore.open(path)
        checkpoint = await store.load("world")
        if cut:
            assert checkpoint is not None and checkpoint.position == cut
        else:
            assert checkpoint is None  # nothing folded, nothing written
        resumed = World()
        await run_projection(log, resumed, store)
        await store.close()
        assert resumed.dump() == expected
    await log.close()


class CountingStore(MemoryCheckpointStore):
    def __init__(self) -> None:
        super().__init__()
        self.saved: list[int] = []

    async def save(self, name: str, position: int, state: bytes) -> None:
        self.saved.append(position)
        await super().save(name, position, state)


@pytest.mark.parametrize(
    ("every", "saved"),
    [(1, list(range(1, 11))), (4, [4, 8, 10]), (5, [5, 10]), (100, [10])],
)
async def test_checkpoint_every(every: int, saved: list[int]) -> None:
    log = logged(scenario()[:10])
    store = CountingStore()
    assert await run_projection(log, History(), store, checkpoint_every=every) == 10
    assert store.saved == saved
    assert await run_projection(log, History(), store) == 0  # resumed at the head


async def test_checkpoint_position_and_state_agree() -> None:
    log = logged(scenario())
    store = MemoryCheckpointStore()
    await run_projection(log, ClusterState(), store, stop=9)
    checkpoint = await store.load("cluster")
    assert checkpoint is not None
    restored = ClusterState()
    restored.load(checkpoint.state)
    assert restored.position == checkpoint.position == 9


async def test_a_foreign_checkpoint_is_ignored_and_the_log_refolded() -> None:
    events = scenario()
    log = logged(events)
    store = MemoryCheckpointStore()
    await store.save("cluster", 5, b'{"projection": "cluster", "format": 99}')
    state = ClusterState()
    assert not await resume(state, store)
    assert await run_projection(log, state, store) == len(events)
    assert state.dump() == full_fold(ClusterState, events).dump()


async def test_a_checkpoint_whose_row_and_state_disagree_is_an_error() -> None:
    state = ClusterState()
    store = MemoryCheckpointStore()
    await store.save("cluster", 3, state.dump())
    with pytest.raises(CheckpointError):
        await resume(state, store)


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (b"not json", "not JSON"),
        (b'{"projection": "history", "format": 1, "position": 0, "state": {}}', "history"),
        (b'{"projection": "cluster", "format": 1, "position": -1, "state": {}}', "malformed"),
        (b'{"projection": "cluster", "format": 1, "position": 0, "state": {"x": 1}}', "malformed"),
    ],
)
def test_bad_checkpoints_leave_the_projection_untouched(state: bytes, message: str) -> None:
    cluster = full_fold(ClusterState, scenario()[:8])
    before = cluster.dump()
    with pytest.raises(CheckpointError, match=message):
        cluster.load(state)
    assert cluster.dump() == before


def test_world_load_is_all_or_nothing() -> None:
    world = full_fold(lambda: World(), scenario()[:8])
    assert isinstance(world, World)
    before = world.dump()
    other = full_fold(lambda: World(), scenario())
    assert isinstance(other, World)
    import base64

    import orjson

    envelope = orjson.loads(other.dump())
    envelope["state"]["members"]["history"] = base64.b64encode(b"garbage").decode()
    with pytest.raises(CheckpointError):
        world.load(orjson.dumps(envelope))
    assert world.dump() == before


@pytest.mark.parametrize("kind", sorted(FACTORIES))
def test_dumps_are_deterministic_and_round_trip(kind: str) -> None:
    make = FACTORIES[kind]
    first = full_fold(make, scenario()).dump()
    assert full_fold(make, scenario()).dump() == first
    restored: Projection = make()
    restored.load(first)
    assert restored.dump() == first


# -- the World checkpoint kept with a log ----------------------------------------------


async def test_checkpoint_world_resumes_and_equals_a_refold(tmp_path: Path) -> None:
    from projections.checkpoint_codec import decode_snapshot
    from projections.store import checkpoint_world
    from streams.backends.checkpoints import open_log_store
    from streams.backends.sqlite import SQLiteLog

    records = scenario()
    path = tmp_path / "log.db"
    async with await SQLiteLog.open(path) as log:
        await log.append(records[:5])
        store = await open_log_store(f"sqlite:///{path}", create=True)
        assert store is not None
        async with store:
            assert await checkpoint_world(log, store) == 5
            await log.append(records[5:])
            assert await checkpoint_world(log, store) == len(records)
            assert [s.position for s in await store.stored()] == [5, len(records)]
            saved = await store.load_at(len(records))
    assert saved is not None
    assert decode_snapshot(saved).world.dump() == World().fold(await_all(records)).dump()


def await_all(records: list[Event]) -> list[Event]:
    return [e.with_offset(i) for i, e in enumerate(records)]
