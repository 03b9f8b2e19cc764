"""Stale samples (behaviour level 4, ``stale-metrics``): a ``metrics.node`` sample older
than three resolutions when recorded is no evidence. Its check decides nothing, a later
streak skips it and says so (``stale_skipped``), and no graceful batch is decided while
the node's newest sample is stale. Logs of earlier levels keep counting it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from controller.policy.pressure.config import EvictionConfig
from projections.behaviour import STALE_METRICS
from streams.events import Event, format_time, make_event
from tests.builders import T0
from tests.controller.policy.pressure.harness import (
    Loop,
    config,
    evicted,
    node_event,
    node_sample,
    pod_event,
    seconds,
)

QUIET = {"predictiveEvict": {"enabled": False}, "faultyEvict": {"enabled": False}}


def cfg(**overrides: Any) -> EvictionConfig:
    return config(**{**QUIET, **overrides})


def level(n: int) -> Event:
    return make_event("config.applied", T0, {"behaviour": n, "config": {}})


def sample(at: float, *, measured: float | None = None, cpu: float = 95) -> Event:
    """A node sample recorded at ``at`` s, measured at ``measured`` s (default: ``at``);
    the window is 30 s, so it is stale once more than 90 s old."""
    event = node_sample("n1", seconds(at), cpu_cores=cpu)
    if measured is None:
        return event
    data = {**event.data, "timestamp": format_time(seconds(measured))}
    return make_event("metrics.node", event.at, data)


def cluster() -> list[Event]:
    events = [node_event("n1", cpu=100, memory_gi=100)]
    events += [pod_event(f"p{i}", started=T0 - timedelta(minutes=i)) for i in range(6)]
    return events


def run(behaviour: int, samples: list[Event], config_: EvictionConfig | None = None) -> Loop:
    loop = Loop(config_ or cfg())
    loop.run([level(behaviour), *cluster(), *samples])
    return loop


def test_the_change_is_level_4() -> None:
    assert STALE_METRICS.level == 4


@pytest.mark.parametrize(("behaviour", "decides"), [(4, False), (3, True)])
def test_a_stale_sample_starts_no_round(behaviour: int, decides: bool) -> None:
    # two fresh hot samples, then the kubelet's last point re-served 140 s later
    loop = run(behaviour, [sample(30), sample(60), sample(200, measured=60)])
    assert bool(evicted(loop.decisions)) is decides
    if decides:
        assert {d.at for d in loop.evictions()} == {seconds(200)}


def test_a_sample_within_three_resolutions_still_counts() -> None:
    loop = run(4, [sample(30), sample(60), sample(150, measured=60)])  # 90 s old
    assert {d.at for d in loop.evictions()} == {seconds(150)}


def test_a_later_streak_skips_the_stale_points_and_names_them() -> None:
    samples = [sample(30), sample(60), sample(200, measured=60), sample(230)]
    loop = run(4, samples)
    evictions = loop.evictions()
    assert evictions and {d.at for d in evictions} == {seconds(230)}
    evidence = evictions[0].data["evidence"]
    assert evidence["streak"] == [95.0, 95.0, 95.0]  # 30 s, 60 s and 230 s
    assert evidence["stale_skipped"] == [format_time(seconds(200))]


def test_a_cool_stale_point_does_not_break_the_streak_at_level_4() -> None:
    samples = [sample(30), sample(60), sample(200, measured=60, cpu=10), sample(230)]
    assert {d.at for d in run(4, samples).evictions()} == {seconds(230)}
    assert run(3, samples).evictions() == []  # it did: the streak read 10 %


def test_fresh_checks_carry_no_stale_evidence() -> None:
    evictions = run(4, [sample(30), sample(60), sample(90)]).evictions()
    assert evictions and all("stale_skipped" not in d.data["evidence"] for d in evictions)


GRACEFUL = {
    "gracefulEviction": {
        "enabled": True,
        "batchSize": 1,
        "batchInterval": "120s",
        "verifyAfterEviction": True,
    },
    "cpuEvict": {"enabled": True, "evictThreshold": 90, "maxEvictionPerBatch": 4},
}


@pytest.mark.parametrize(("behaviour", "batches"), [(4, 1), (3, 4)])
def test_no_graceful_batch_on_a_stale_newest_sample(behaviour: int, batches: int) -> None:
    # the round starts at 90 s; the node is not measured after that, so its newest point
    # is 120 s old when the second batch is due at 210 s (level 3: all four batches)
    loop = run(behaviour, [sample(30), sample(60), sample(90)], cfg(**GRACEFUL))
    loop.run([], until=seconds(400))
    assert len({d.at for d in loop.evictions()}) == batches
