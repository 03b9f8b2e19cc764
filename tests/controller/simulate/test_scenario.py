"""Scenario YAML → recording: expansion and errors that name the key and the value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from controller.simulate import scenario
from controller.simulate.scenario import ScenarioError, expand
from streams.events import format_time

START = datetime(2026, 11, 21, 6, 0, tzinfo=UTC)


def doc(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "start": "2026-11-21T06:00:00Z",
        "nodes": [{"name": "n", "count": 2, "indexed": True, "cpu": "10", "memory": "10Gi"}],
        "workloads": [
            {
                "name": "web",
                "replicas": 3,
                "cpu": "1",
                "memory": "1Gi",
                "qos": "LS",
                "nodes": ["n-0"],
            },
            {
                "name": "job",
                "replicas": 2,
                "cpu": "2",
                "at": "+1h",
                "podgroup": {"minMember": 2, "annotations": {"volcano.sh/jdb-min-available": "1"}},
            },
        ],
        "usage": [
            {
                "node": "n-0",
                "every": "30m",
                "points": [["+0m", {"cpu": "10%"}], ["+1h", {"cpu": "50%"}]],
            },
        ],
    }
    base.update(overrides)
    return base


def test_expansion() -> None:
    events, start, until = expand(doc())
    assert start == START and until is None
    kinds = [(e.type, e.data.get("resource")) for e in events]
    assert kinds.count(("k8s.watch", "nodes")) == 2
    assert kinds.count(("k8s.watch", "pods")) == 5
    assert kinds.count(("k8s.watch", "podgroups")) == 1
    pods = {
        e.data["object"]["metadata"]["name"]: e for e in events if e.data.get("resource") == "pods"
    }
    assert pods["web-0"].data["object"]["spec"]["nodeName"] == "n-0"
    assert pods["web-0"].data["object"]["status"]["phase"] == "Running"
    assert pods["job-1"].at == START + timedelta(hours=1)
    assert pods["job-1"].data["object"]["status"]["phase"] == "Pending"
    assert (
        pods["job-1"].data["object"]["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
        == "job"
    )
    samples = [e for e in events if e.type == "metrics.node"]
    # 10% → 50% of 10 cores, linearly, every 30 minutes: 1, 3, 5 cores.
    assert [s.data["usage"]["cpu"] for s in samples] == ["1000m", "3000m", "5000m"]
    assert [e.at for e in events] == sorted(e.at for e in events)


def test_expansion_is_deterministic() -> None:
    assert [e.id for e in expand(doc())[0]] == [e.id for e in expand(doc())[0]]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"start": "yesterday"}, "start: 'yesterday'"),
        ({"workloads": [{"replicas": 1}]}, "workloads[0].name: missing"),
        ({"workloads": [{"name": "w", "nodes": ["nope"]}]}, "workloads[0].nodes: 'nope'"),
        ({"usage": [{"node": "nope", "points": [["+0m", {"cpu": "1"}]]}]}, "usage[0].node: 'nope'"),
        ({"usage": [{"node": "n-0", "every": "-1m", "points": [["+0m", {}]]}]}, "usage[0].every"),
        ({"usage": [{"node": "n-0", "points": []}]}, "usage[0].points: empty"),
    ],
    ids=[
        "bad start",
        "no name",
        "unknown node",
        "usage of unknown node",
        "negative every",
        "no points",
    ],
)
def test_errors_name_the_key_and_value(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        expand(doc(**overrides))


def test_frozen_at_re_serves_the_last_point_measured() -> None:
    doc = {
        "start": "2026-11-21T12:00:00Z",
        "nodes": [{"name": "n", "cpu": "10", "memory": "10Gi"}],
        "usage": [
            {
                "node": "n",
                "every": "30s",
                "frozenAt": "+1m",
                "until": "+2m",
                "points": [["+0m", {"cpu": "10%"}], ["+2m", {"cpu": "50%"}]],
            }
        ],
    }
    events, _, _ = expand(doc)
    samples = [e for e in events if e.type == "metrics.node"]
    assert [(format_time(e.at)[11:19], e.data["timestamp"][11:19]) for e in samples] == [
        ("12:00:00", "12:00:00"),
        ("12:00:30", "12:00:30"),
        ("12:01:00", "12:01:00"),
        ("12:01:30", "12:01:00"),  # the kubelet stopped: the 12:01 point again
        ("12:02:00", "12:01:00"),
    ]
    assert len({orjson.dumps(e.data["usage"]) for e in samples[2:]}) == 1


@pytest.mark.parametrize("every", ["1us", "1ms", "999ms"])
def test_a_usage_interval_below_the_floor_names_the_key(every: str) -> None:
    usage = [{"node": "n-0", "every": every, "points": [["+0m", {"cpu": "1"}]]}]
    with pytest.raises(ScenarioError, match=rf"usage\[0\]\.every: '{every}': must be at least 1s"):
        expand(doc(usage=usage))


def test_a_usage_profile_of_too_many_samples_names_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a bound on what one profile expands to (a year every second), checked before any
    monkeypatch.setattr(scenario, "MAX_SAMPLES", 10)
    points = [["+0m", {"cpu": "1"}], ["+10s", {}]]
    with pytest.raises(ScenarioError, match=r"usage\[0\]\.every: '1s': 11 samples"):
        expand(doc(usage=[{"node": "n-0", "every": "1s", "points": points}]))
    monkeypatch.setattr(scenario, "MAX_SAMPLES", 11)
    assert expand(doc(usage=[{"node": "n-0", "every": "1s", "points": points}]))


def test_a_usage_interval_at_the_floor_expands() -> None:
    usage = [{"node": "n-0", "every": "1s", "points": [["+0m", {"cpu": "1"}], ["+10s", {}]]}]
    events, _, _ = expand(doc(usage=usage))
    assert sum(e.type == "metrics.node" for e in events) == 11
