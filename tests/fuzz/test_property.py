"""Property: any mutation of a real object (from the golden demo log) either is set aside
at import with a one-line reason, or is stored and then exports, folds without a skip
and simulates."""

from __future__ import annotations

import asyncio
import copy
import io
import json
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.cli.common import RECORD_CHECKS
from controller.policy.loader import load_policy
from controller.simulate.runner import Simulation
from projections.world import World
from streams.backends.memory import MemoryLog
from streams.codec import encode
from streams.events import Event, format_time
from streams.recording import import_recording, parse_line, read_recording
from tests.fuzz.conftest import time_limit
from tests.fuzz.corpus import BASE_CONFIG

GOLDEN = Path(__file__).parent.parent / "replay" / "golden" / "demo.jsonl"

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(
        ["1e400", "-1", "\u0663", "a/b", "2026-11-21T20:00:00Z", "0001-01-01T00:00:00Z"]
    ),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@cache
def _objects() -> list[Event]:
    """The golden demo log's inputs (watch events of every resource, a few samples)."""
    events = [e for e in read_recording(GOLDEN) if isinstance(e, Event)]
    watches = [e for e in events if e.type == "k8s.watch"]
    samples = [e for e in events if e.type.startswith("metrics.")][:40]
    return watches + samples


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            found += _paths(child, (*prefix, i))
    return found


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_real_objects_are_set_aside_or_fold(data: st.DataObject) -> None:
    base = _objects()
    event = data.draw(st.sampled_from(base))
    payload = copy.deepcopy(event.data)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(payload)
        path = data.draw(st.sampled_from(paths))
        target = payload
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = data.draw(values)
    node_events = [e for e in base if e.data.get("resource") == "nodes"][:6]
    when = format_time(max(e.at for e in node_events) + timedelta(minutes=1))  # a short run
    record = {"at": when, "type": event.type, "data": payload}
    try:
        line = orjson.dumps(record)
    except TypeError:  # an integer past 64 bits: still a valid JSON line, as a user may send
        line = json.dumps(record, ensure_ascii=False).encode()
    nodes = [encode(e) for e in node_events]
    log = MemoryLog()
    with time_limit():
        summary = asyncio.run(
            import_recording(
                io.BytesIO(b"\n".join([*nodes, line]) + b"\n"), log, extra=RECORD_CHECKS
            )
        )
    assert all(q.line == len(nodes) + 1 and "\n" not in q.reason for q in summary.set_aside)
    world = World()
    for stored in log.events:
        assert isinstance(parse_line(encode(stored), source="export", line=1), Event)
        world.apply(stored)
    assert world.cluster.skipped == 0
    policy = load_policy(dict(BASE_CONFIG))
    with time_limit():
        Simulation(policy.config, eviction=policy.eviction).run(log.events)
