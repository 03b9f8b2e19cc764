"""Adaptive cooldown: verification verdicts, halving, doubling, floor, cap, quiet reset."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import pytest

from controller.policy.pressure.ratecontrol import next_factor, split
from projections.pressure import RECOVERED, STEADY, STILL_HIGH, Cooldown
from tests.builders import T0
from tests.controller.policy.pressure.harness import (
    Loop,
    config,
    node_event,
    node_sample,
    pod_event,
    pod_sample,
    seconds,
)

CFG = config()
CPU = CFG.cpu  # cooldown 60 s


def held(verdict: str, factor: float = 1.0, until: float = 60) -> Cooldown:
    return Cooldown(
        until=seconds(until),
        factor=factor,
        configured=60,
        threshold=90,
        margin=5,
        capacity=100_000,
        verdict=verdict,
    )


@pytest.mark.parametrize(
    ("verdict", "factor", "expected"),
    [
        pytest.param(RECOVERED, 1.0, 0.5, id="recovered-halves"),
        pytest.param(RECOVERED, 0.5, 0.25, id="halves-to-floor"),
        pytest.param(RECOVERED, 0.25, 0.25, id="floor-quarter"),
        pytest.param(STILL_HIGH, 1.0, 2.0, id="still-high-doubles"),
        pytest.param(STILL_HIGH, 2.0, 4.0, id="doubles-to-cap"),
        pytest.param(STILL_HIGH, 4.0, 4.0, id="cap-four"),
        pytest.param(STEADY, 2.0, 2.0, id="steady-keeps"),
        pytest.param("", 2.0, 2.0, id="not-verified-keeps"),
    ],
)
def test_next_factor(verdict: str, factor: float, expected: float) -> None:
    assert next_factor(held(verdict, factor), CPU, CFG, seconds(61)) == expected


@pytest.mark.parametrize(
    ("quiet_seconds", "expected"),
    [pytest.param(599, 4.0, id="nine-and-a-bit-periods"), pytest.param(600, 1.0, id="ten-periods")],
)
def test_ten_quiet_periods_reset_the_factor(quiet_seconds: int, expected: float) -> None:
    now = seconds(60 + quiet_seconds)
    assert next_factor(held(STILL_HIGH, 4.0), CPU, CFG, now) == expected


def test_adaptive_off_or_first_round_is_factor_one() -> None:
    assert next_factor(None, CPU, CFG, seconds(0)) == 1.0
    off = config(adaptiveCooldown=False)
    assert next_factor(held(STILL_HIGH, 2.0), off.cpu, off, seconds(61)) == 1.0


def test_split_into_batches() -> None:
    assert split([1, 2, 3, 4, 5, 6, 7], CFG) == [[1, 2, 3], [4, 5, 6], [7]]
    assert split([1, 2], config(gracefulEviction={"enabled": False})) == [[1, 2]]
    assert split([1, 2, 3, 4], config(gracefulEviction={"batchInterval": 0})) == [[1, 2, 3, 4]]
    assert split([], CFG) == []


def scenario(pressure: Sequence[tuple[float, float]]) -> Loop:
    events = [node_event("n1", cpu=100)]
    for i in range(40):
        events.append(pod_event(f"p{i:02}", started=T0 - timedelta(minutes=i)))
        events.append(pod_sample(f"p{i:02}", T0, cpu_cores=1))
    events += [node_sample("n1", seconds(t), cpu_cores=v) for t, v in pressure]
    # the simulated cluster deletes victims (30 s grace), so they stop counting as freed
    loop = Loop(config(predictiveEvict={"enabled": False}), sim=True)
    loop.run(events)
    return loop


def rounds(loop: Loop) -> list[tuple[int, float]]:
    seen: dict[int, float] = {}
    for d in loop.evictions():
        seen[int((d.at - T0).total_seconds())] = d.data["evidence"]["cooldown"]["seconds"]
    return sorted(seen.items())


def test_recovery_at_verification_halves_the_next_cooldown() -> None:
    pressure = [
        (1, 95),
        (2, 95),
        (3, 95),
        (63, 80),
        (64, 95),
        (65, 95),
        (66, 95),
        (95, 95),
        (96, 95),
    ]
    # verified at 63 (80 < 85) → next round at 66 cools for 30 s → a round again at 96
    assert rounds(scenario(pressure)) == [(3, 60), (66, 30), (96, 60)]


def test_pressure_still_high_doubles_up_to_four_times() -> None:
    pressure = [(t, 95.0) for t in range(1, 4)]
    pressure += [(t, 95.0) for t in (63, 183, 423, 662, 663)]
    # 3: 60 s; 63 still high → 120 s; 183 → 240 s; 423 → 240 s (cap 4x)
    assert rounds(scenario(pressure)) == [(3, 60), (63, 120), (183, 240), (423, 240), (663, 240)]


def test_cooldown_state_is_the_projection() -> None:
    loop = scenario([(1, 95), (2, 95), (3, 95), (63, 80)])
    state = loop.world.pressure
    cooldown = state.cooldown("n1", "cpu")
    assert cooldown is not None
    assert cooldown.until == seconds(63)
    assert cooldown.verdict == RECOVERED and cooldown.after == 80
    assert not state.cooling("n1", "cpu", seconds(63))
    assert state.cooling("n1", "cpu", seconds(62))
