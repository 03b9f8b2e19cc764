"""A format-3 cluster part decoded row by row (``projections.rowslices``) and the rows kept
from it (``projections.rowcache.seeded``): the cut gives what one parse of the whole part
gives, or nothing (the caller then parses the part whole), whatever the bytes; a dump of
the loaded cluster after any further fold, from the rows kept, is the fresh dump."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projections.base import CheckpointError, decode_state
from projections.checkpoint_codec import Snapshot, decode_checked, encode_snapshot, world_part
from projections.cluster import ClusterState
from projections.effects import EffectsState
from projections.rowcache import cluster_part, seeded
from projections.rowslices import cut
from projections.snapshot_rows import load_rows
from projections.world import World
from streams.events import Event
from tests.builders import build_pod, watch
from tests.projections.test_checkpoints_by_position import LOGS
from tests.projections.test_checkpoints_by_position import _records as golden_records
from tests.projections.test_rowcache import CHANGES, _bytes, _fold, _rows, _start

#: a pod whose key holds what a row's end looks like (``]],[``), and one with a quote
ODD = [
    watch("pods", build_pod("ns", "x]],[y", node="n1")),
    watch("pods", build_pod("ns", 'q"]],["r', node="n2", cpu="2")),
]


def _part(records: list[Event]) -> tuple[ClusterState, bytes]:
    state = ClusterState()
    _fold(state, records)
    return state, b"".join(cluster_part(state))


def _loaded(part: bytes) -> tuple[ClusterState, Any]:
    """The cluster loaded from ``part`` cut row by row, and the rows kept from it."""
    found = cut(part)
    assert found is not None
    fresh = ClusterState()
    load_rows(fresh, found.body, 3)
    fresh.position = found.position
    return fresh, seeded(fresh, found.pieces, found.body["tasks"], found.body["maps"])


@pytest.mark.parametrize("odd", [False, True], ids=["plain keys", "keys like a row's end"])
def test_the_cut_is_the_whole_parse(odd: bool) -> None:
    _, part = _part(_start() + (ODD if odd else []))
    found = cut(part)
    assert found is not None
    position, body = decode_state("cluster", part, fmt=3)
    assert (found.position, found.body) == (position, body)
    # each piece is its row's bytes, in order
    assert [orjson.loads(piece) for piece in found.pieces] == body["tasks"]
    assert b",".join(found.pieces) in part


@pytest.mark.parametrize(
    ("records", "changes"), [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES]
)
def test_a_dump_from_the_rows_loaded_is_the_fresh_dump(records: list[Event], changes: bool) -> None:
    _, part = _part(_start() + ODD)
    state, rows = _loaded(part)
    assert rows is not None
    assert _bytes(state, rows) == part  # nothing folded yet: the bytes it was loaded from
    _fold(state, records)
    again = _bytes(state, None)
    assert (_rows(again) != _rows(part)) == changes
    assert _bytes(state, rows) == again
    _fold(state, [watch("pods", build_pod("ns", "late", node="n1"))])  # and on from there
    assert _bytes(state, rows) == _bytes(state, None)


def _mutated(part: bytes, at: int, how: str, char: bytes) -> bytes:
    if how == "delete":
        return part[:at] + part[at + 1 :]
    if how == "insert":
        return part[:at] + char + part[at:]
    return part[:at] + char + part[at + 1 :]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    data=st.data(),
    how=st.sampled_from(["delete", "insert", "replace"]),
    char=st.sampled_from([b"[", b"]", b"{", b"}", b",", b'"', b":", b"0", b"x", b"]],["]),
    near=st.booleans(),
)
def test_bytes_that_are_not_a_part_cut_as_the_whole_parse_or_not_at_all(
    data: st.DataObject, how: str, char: bytes, near: bool
) -> None:
    _, part = _part(_start() + ODD)
    rows_at = part.rfind(b',"tasks":[')
    low = rows_at - 40 if near else 0  # near the rows' array, where the cut looks
    at = data.draw(st.integers(max(0, low), len(part) - 1), label="at")
    bad = _mutated(part, at, how, char)
    found = cut(bad)
    try:
        position, body = decode_state("cluster", bad, fmt=3)
    except CheckpointError:
        assert found is None  # what one parse refuses is never cut
        return
    if found is not None:
        assert (found.position, found.body) == (position, body)


def test_rows_not_those_of_a_dump_are_not_kept() -> None:
    _, part = _part(_start())
    found = cut(part)
    assert found is not None
    tasks, maps = found.body["tasks"], found.body["maps"]
    fresh = ClusterState()
    load_rows(fresh, found.body, 3)
    assert seeded(fresh, found.pieces, tasks, maps) is not None
    # out of key order; a map named otherwise than by its encoding; an entry nobody names
    assert seeded(fresh, found.pieces[::-1], tasks[::-1], maps) is None
    name = next(iter(maps))
    assert seeded(fresh, found.pieces, tasks, {**maps, name: {"other": "map"}}) is None
    assert seeded(fresh, found.pieces, tasks, {**maps, "0" * 24: {"a": "b"}}) is None


@pytest.mark.parametrize("name", LOGS)
@pytest.mark.parametrize(("start", "stop"), [(0.25, 0.5), (0.4, 1.0), (0.75, 0.8)])
def test_a_checkpoint_decoded_with_its_rows_digests_its_fold_as_the_fold_from_zero(
    name: str, start: float, stop: float
) -> None:
    records = golden_records(name)
    first, last = int(len(records) * start), int(len(records) * stop)
    world = World().fold(records[:first])
    effects = EffectsState()
    effects.fold(records[:first])
    data = encode_snapshot(Snapshot(first, "", None, world, effects, None))
    loaded, _ = decode_checked(data, keep_rows=True)
    assert loaded.rows is not None
    assert loaded.world.dump() == world.dump()
    loaded.world.fold(records[first:last])
    fresh = World().fold(records[:last])
    assert b"".join(world_part(loaded.world, cache=loaded.rows)) == b"".join(world_part(fresh))
    plain, _ = decode_checked(data)
    assert plain.rows is None


def test_a_row_full_of_row_ends_is_left_to_the_whole_parse() -> None:
    records = [*_start(), watch("pods", build_pod("ns", "z" + "]],[" * 100, node="n1"))]
    _, part = _part(records)
    assert cut(part) is None
    world = World().fold(r.with_offset(i) for i, r in enumerate(records))
    data = encode_snapshot(Snapshot(len(records), "", None, world, EffectsState(), None))
    loaded, _ = decode_checked(data, keep_rows=True)
    assert loaded.rows is None  # decoded whole: nothing kept
    assert loaded.world.dump() == world.dump()
