"""The stale-sample rule: a sample older than three resolutions (its ``window``, at least
10 s, 60 s when absent) at the record's ``at`` is no evidence; the usage fold keeps each
node's newest own time and the points that were stale when recorded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from projections.base import CheckpointError, decode_state, encode_state
from projections.usage import UsageState
from projections.usage_fresh import freshness, is_stale, parse_window
from streams.events import Event, format_time, make_event
from tests.builders import build_node, watch

T = datetime(2026, 1, 1, tzinfo=UTC)


def sample(stamp: str | None, window: str | None = "30s") -> dict[str, Any]:
    data: dict[str, Any] = {"metadata": {"name": "n1"}, "usage": {"cpu": "1", "memory": "1Gi"}}
    if stamp is not None:
        data["timestamp"] = stamp
    if window is not None:
        data["window"] = window
    return data


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30.0), ("1m0.5s", 60.5), ("20.001s", 20.001), ("1h", 3600.0), ("500ms", 0.5)],
)
def test_a_go_duration_is_read(text: str, seconds: float) -> None:
    assert parse_window(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "30", "s", "30s junk", "-5s", 30])
def test_anything_else_is_no_window(text: object) -> None:
    assert parse_window(text) is None


@pytest.mark.parametrize(
    ("window", "age", "stale"),
    [
        ("30s", 90, False),  # exactly three resolutions: still evidence
        ("30s", 91, True),
        ("15s", 46, True),
        ("1s", 30, False),  # a resolution is at least 10 s
        ("1s", 31, True),
        (None, 180, False),  # no window: metrics-server's default 60 s
        (None, 181, True),
        ("30s", -600, False),  # a kubelet clock ahead of tide's: nothing to hold against it
    ],
)
def test_stale_beyond_three_resolutions(window: str | None, age: float, stale: bool) -> None:
    data = sample(format_time(T), window)
    assert is_stale(data, T + timedelta(seconds=age)) is stale


@pytest.mark.parametrize("stamp", [None, "yesterday", "2026-01-01T00:00:00"])
def test_a_sample_without_a_readable_time_is_never_stale(stamp: str | None) -> None:
    assert freshness(sample(stamp)) is None
    assert not is_stale(sample(stamp), T + timedelta(days=1))


def node_record(at: float, stamp: float) -> Event:
    own = format_time(T + timedelta(seconds=stamp))
    return make_event("metrics.node", T + timedelta(seconds=at), sample(own))


def test_the_fold_keeps_the_newest_own_time_and_the_stale_points() -> None:
    usage = UsageState(horizon=timedelta(seconds=300))
    for at, stamp in [(0, 0), (30, 30), (200, 30), (230, 230), (260, 30)]:
        usage.apply(node_record(at, stamp))
    base = T.timestamp()
    assert usage.stale_points("n1") == [base + 200, base + 260]
    assert usage.stale_node("n1", T + timedelta(seconds=260)) is not None  # newest: 30 s
    restored = UsageState()
    restored.load(usage.dump())
    assert restored.node_fresh == usage.node_fresh
    assert restored.node_stale == usage.node_stale
    # the horizon drops the first stale point with the series' point
    usage.apply(node_record(505, 505))
    assert usage.stale_points("n1") == [base + 260]
    assert usage.stale_node("n1", T + timedelta(seconds=505)) is None
    assert usage.stale_node("n1", T + timedelta(seconds=596)) is not None
    deleted = watch("nodes", build_node("n1"), T + timedelta(seconds=600), "DELETED")
    usage.apply(deleted)
    assert usage.stale_points("n1") == [] and "n1" not in usage.node_fresh


def test_a_checkpoint_written_before_is_refused_so_the_fold_is_redone() -> None:
    # loaded without the own times, a World would judge no node stale until its next
    # sample, unlike the fold of the same log: the format moved to 2 so it is refolded
    usage = UsageState()
    usage.apply(node_record(0, 0))
    position, body = decode_state("usage", usage.dump(), fmt=2)
    del body["node_fresh"], body["node_stale"]
    with pytest.raises(CheckpointError, match="format 1, expected 2"):
        UsageState().load(encode_state("usage", position, body))
    again = UsageState()
    again.load(usage.dump())
    assert again.dump() == usage.dump()
    assert orjson.dumps(again.nodes["n1"].to_json()) == orjson.dumps(usage.nodes["n1"].to_json())
