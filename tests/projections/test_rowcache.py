"""The cluster's rows of format 3 (``projections.rowcache``): a writer keeping its rows
between dumps writes the bytes a writer that never dumped writes, whatever the fold did in
between (the fold marks the tasks it changes in place), and they load back into the same
cluster."""

from __future__ import annotations

from functools import cache
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.base import decode_state
from projections.cluster import ClusterState
from projections.rowcache import RowCache, cluster_part, map_name
from projections.snapshot_rows import load_rows
from projections.world import World
from streams.events import Event, make_event
from tests.builders import T0, at, build_node, build_pod, build_podgroup, watch
from tests.projections.test_checkpoints_by_position import _records as golden_records

LABELS = {"app": "web", "team": "ads"}
PREEMPTABLE = "volcano.sh/preemptable"


def _bytes(state: ClusterState, rows: RowCache | None) -> bytes:
    return b"".join(cluster_part(state, rows))


def _decision(kind: str, name: str, node: str = "n1") -> Event:
    data = {
        "kind": kind,
        "namespace": "ns",
        "pod": name,
        "uid": f"ns-{name}",
        "node": node,
        "reason": "test",
        "source": "test",
        "evidence": {},
    }
    return make_event(f"decision.{kind}", at(1), data)


def _failed(decision: Event) -> Event:
    data: dict[str, Any] = {
        "decision": decision.id,
        "kind": decision.data["kind"],
        "target": f"ns/{decision.data['pod']}",
        "error": "refused",
    }
    return make_event("effect.failed", at(2), data, cause=decision.id)


def _applied(config: dict[str, Any], behaviour: int = 2) -> Event:
    return make_event(
        "config.applied", T0, {"config": config, "source": "t", "behaviour": behaviour}
    )


def _pod(i: int, **kwargs: Any) -> dict[str, Any]:
    annotations = {"cni.projectcalico.org/podIP": f"10.0.0.{i}/32"}
    kwargs.setdefault("node", f"n{i % 2 + 1}")
    return build_pod("ns", f"p{i}", labels=LABELS, annotations=annotations, group="g", **kwargs)


def _start() -> list[Event]:
    events = [_applied({}), watch("nodes", build_node("n1")), watch("nodes", build_node("n2"))]
    events += [watch("pods", _pod(i)) for i in range(6)]
    events.append(watch("pods", build_pod("ns", "waiting", phase="Pending")))
    events.append(watch("podgroups", build_podgroup("ns", "h", priority_class="high")))
    events.append(watch("pods", build_pod("ns", "q", node="n2", group="h")))
    return events


def _of_class(name: str, value: int) -> dict[str, Any]:
    """A pod of PriorityClass ``name`` (the fold learns its value from it)."""
    pod = build_pod("ns", "r", node="n1")
    pod["spec"].update(priorityClassName=name, priority=value)
    return pod


def _rows(dump: bytes) -> Any:
    body = decode_state("cluster", dump, fmt=3)[1]
    return body["tasks"], body["maps"], body["jobs"]


def _fold(state: ClusterState, events: list[Event]) -> None:
    for event in events:
        state.apply(event.with_offset(state.position))


_EVICT = _decision("evict", "p2")
#: the fold's changes after a first dump: (name, records, whether the rows change)
CHANGES: list[tuple[str, list[Event], bool]] = [
    ("pod updated", [watch("pods", _pod(2, cpu="2"), event="MODIFIED")], True),
    ("pod updated alike", [watch("pods", _pod(2), event="MODIFIED")], False),
    (
        "new annotations",
        [watch("pods", build_pod("ns", "p2", node="n1", group="g"), event="MODIFIED")],
        True,
    ),
    ("pod deleted", [watch("pods", _pod(3), event="DELETED")], True),
    (
        "implicit job's pod deleted",
        [watch("pods", build_pod("ns", "waiting", phase="Pending"), event="DELETED")],
        True,
    ),
    ("pod added", [watch("pods", _pod(9))], True),
    ("evicted (in place)", [_EVICT], True),
    ("evict failed (in place, back)", [_EVICT, _failed(_EVICT)], False),
    ("bound (in place)", [_decision("bind", "waiting", "n2")], True),
    (
        "podgroup arrives (its tasks derived again)",
        [watch("podgroups", build_podgroup("ns", "g"))],
        True,
    ),
    (
        "podgroup marks its tasks preemptable",
        [watch("podgroups", build_podgroup("ns", "g", annotations={PREEMPTABLE: "true"}))],
        True,
    ),
    ("rules changed", [_applied({"preemptableByDefault": True})], True),
    ("node updated", [watch("nodes", build_node("n1", cpu="64"), event="MODIFIED")], False),
    ("podgroup deleted", [watch("podgroups", build_podgroup("ns", "h"), event="DELETED")], True),
    ("priority class learned", [watch("pods", _of_class("high", 1000))], True),
]


@pytest.mark.parametrize(
    ("records", "changes"), [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES]
)
def test_a_dump_after_the_fold_moved_is_the_fresh_dump(records: list[Event], changes: bool) -> None:
    state, rows = ClusterState(), RowCache()
    _fold(state, _start())
    first = _bytes(state, rows)
    assert _bytes(state, rows) == first == _bytes(state, None)
    version = state.version
    _fold(state, records)
    assert state.version > version  # the records did reach the fold
    again = _bytes(state, rows)
    assert again == _bytes(state, None)
    assert (_rows(again) != _rows(first)) == changes
    restored = ClusterState()
    load_rows(restored, decode_state("cluster", again, fmt=3)[1], 3)
    restored.position = state.position
    assert restored.dump() == state.dump()


def test_a_cache_tracks_one_cluster_at_a_time() -> None:
    """Dumping another cluster stops the first one's tracking; the first is then dumped
    whole again (a loaded cluster is another one too)."""
    one, two, rows = ClusterState(), ClusterState(), RowCache()
    _fold(one, _start())
    _fold(two, _start()[:4])
    _bytes(one, rows)
    assert one.touched is not None
    assert _bytes(two, rows) == _bytes(two, None)
    assert one.touched is None and two.touched is not None
    _fold(one, [_EVICT])
    assert _bytes(one, rows) == _bytes(one, None)
    loaded = ClusterState()
    loaded.load(one.dump())
    assert loaded.touched is None
    _fold(loaded, [_failed(_EVICT)])
    assert _bytes(loaded, rows) == _bytes(loaded, None)


def test_maps_are_named_by_their_content() -> None:
    state = ClusterState()
    _fold(state, _start())
    part = _bytes(state, None)
    # the pieces joined are what orjson writes for their content (sorted keys, compact)
    assert orjson.dumps(orjson.loads(part), option=orjson.OPT_SORT_KEYS) == part
    body = decode_state("cluster", part, fmt=3)[1]
    names = {map_name(b'{"app":"web","team":"ads"}'), map_name(b"{}"), map_name(b"[]")}
    assert names <= set(body["maps"])
    assert len(map_name(b"{}")) == 24


#: a golden log's records, decoded once for the session (hypothesis draws them again)
_records = cache(golden_records)


def _kept_along(records: list[Event], cuts: list[int]) -> None:
    """Fold ``records``, dumping at each of ``cuts`` (ascending) with one cache: each
    dump is the fresh one."""
    world, rows = World(), RowCache()
    done = 0
    for cut in cuts:
        world.fold(records[done:cut])
        done = cut
        assert _bytes(world.cluster, rows) == _bytes(world.cluster, None), cut


LOGS = (
    "ownership.jsonl",
    "pressure-graceful.jsonl",
    "rescheduling-hot-cold.jsonl",
    "tdm-budgets.jsonl",
    "allocate-gang.jsonl",
    "stale-metrics.jsonl",
)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(LOGS), data=st.data())
def test_dumps_kept_along_a_golden_log_are_fresh_dumps(name: str, data: st.DataObject) -> None:
    """Whatever the records between two dumps (decisions, outcomes, configuration,
    deletions), the cached dump is the fresh one."""
    records = _records(name)
    cuts = data.draw(st.sets(st.integers(1, len(records)), min_size=1, max_size=8), label="cuts")
    _kept_along(records, sorted(cuts))


def test_dumps_kept_along_the_demo_are_fresh_dumps() -> None:
    records = _records("demo.jsonl")
    _kept_along(records, list(range(250, len(records), 250)))


def test_two_maps_under_one_name_raise_and_the_next_dump_is_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A name collision is never written: the dump raises, and the writer's cache, half
    brought up to date, is dropped (its next dump is the fresh one)."""
    import projections.rowcache as rowcache

    state, rows = ClusterState(), RowCache()
    _fold(state, _start())
    _bytes(state, rows)
    _fold(state, [watch("pods", _pod(2, cpu="2"), event="MODIFIED"), watch("pods", _pod(9))])
    with monkeypatch.context() as patched:
        patched.setattr(rowcache, "map_name", lambda encoding: "same")
        with pytest.raises(RuntimeError, match="two maps are named same"):
            _bytes(state, rows)
    assert rows.touched is None
    assert _bytes(state, rows) == _bytes(state, None)


def test_rows_kept_that_miss_a_task_or_job_are_not_written() -> None:
    """A task or job the cache was not told of (nothing in the fold does this: the guard
    behind its marks) makes the dump whole instead of one of stale rows."""
    for gone in ("task", "job"):
        state, rows = ClusterState(), RowCache()
        _fold(state, _start())
        _bytes(state, rows)
        if gone == "task":
            del state.tasks["ns/waiting"]  # behind the fold's back: no mark
        else:
            del state.jobs["ns/waiting"]
        assert rows.touched is not None and not rows.touched.tasks | rows.touched.jobs
        assert _bytes(state, rows) == _bytes(state, None), gone
        assert rows.touched is state.touched is not None  # tracking again
