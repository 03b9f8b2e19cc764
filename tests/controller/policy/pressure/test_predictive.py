"""Predictive eviction: trend, prediction, thresholds, stability, amount to free."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pytest

from controller.policy.pressure.predictive import amount_to_free, predict_at, stable_prediction
from projections.usage import Series
from tests.builders import T0
from tests.controller.policy.pressure.harness import (
    Loop,
    config,
    node_event,
    node_sample,
    pod_event,
    pod_sample,
)

CFG = config()
CAP = 100_000.0  # 100 cores in milli


def series(points: list[tuple[float, float]]) -> Series:
    """(minute, cpu %) points on a 100-core node."""
    s = Series()
    for minute, pct in points:
        t = (T0 + timedelta(minutes=minute)).timestamp()
        s.add(t, pct * 1000, 0.0, keep_after=0, limit=10_000)
    return s


def test_seed_9_7_arithmetic() -> None:
    # 60 % → 80 % over 10 minutes: 2 %/min, 100 % predicted, free 20 %
    s = series([(0, 60), (10, 80)])
    p = predict_at(s, 1, CAP, "cpu", CFG)
    assert p is not None
    assert p.trend * 60 == pytest.approx(2.0)
    assert p.predicted == pytest.approx(100.0)
    assert p.eta(90) == pytest.approx(300.0)  # 5 minutes to 90 %
    assert amount_to_free(p, CAP, CFG) == pytest.approx(20_000)


@pytest.mark.parametrize(
    ("points", "predicted"),
    [
        pytest.param([(0, 60), (10, 80)], 100.0, id="exactly-one-window"),
        pytest.param([(0, 60), (5, 70), (10, 80)], 100.0, id="baseline-is-10-minutes-ago"),
        pytest.param([(0, 60), (12, 84)], 104.0, id="gap-uses-elapsed-time"),
        pytest.param([(5, 60), (10, 80)], None, id="history-shorter-than-window"),
        pytest.param([(0, 60), (21, 80)], None, id="baseline-older-than-two-windows"),
    ],
)
def test_prediction_baseline(points: list[tuple[float, float]], predicted: float | None) -> None:
    p = predict_at(series(points), len(points) - 1, CAP, "cpu", CFG)
    assert (round(p.predicted, 6) if p else None) == predicted


def ramp(values: Sequence[float]) -> Series:
    return series([(m, v) for m, v in enumerate(values)])


@pytest.mark.parametrize(
    ("values", "triggers"),
    [
        # 1 %/min over 10 min → +10 in the next 10: at 81+ the prediction exceeds 90
        pytest.param([70 + m for m in range(14)], True, id="rising-steadily"),
        pytest.param([70 + m for m in range(11)] + [90, 60], False, id="dip-at-the-end"),
        pytest.param([70] * 13, False, id="flat"),
        pytest.param([95 - m for m in range(13)], False, id="falling-even-if-high"),
        # 80 → 85 in 10 min: predicted 90.0 at the last check — not above
        pytest.param([80 + m / 2 for m in range(11)], False, id="predicted-exactly-threshold"),
    ],
)
def test_stable_prediction(values: list[float], triggers: bool) -> None:
    assert (stable_prediction(ramp(values), CAP, "cpu", CFG) is not None) is triggers


def test_prediction_must_hold_for_the_stable_checks() -> None:
    values = [50] * 10 + [50, 50, 95]  # a single spike: only the last check predicts high
    assert stable_prediction(ramp(values), CAP, "cpu", CFG) is None
    one = config(pressureStableThreshold=1)
    assert stable_prediction(ramp(values), CAP, "cpu", one) is not None


def scenario(values: Sequence[float], **overrides: Any) -> Loop:
    """One sample a minute from T0 - 10 min (so trends exist from T0 on)."""
    events = [node_event("n1", cpu=100)]
    for i in range(6):
        events.append(pod_event(f"p{i}", started=T0 - timedelta(hours=i + 1)))
        events.append(pod_sample(f"p{i}", T0, cpu_cores=4))
    events += [
        node_sample("n1", T0 + timedelta(minutes=m), cpu_cores=v)
        for m, v in enumerate(values, start=-10)
    ]
    loop = Loop(config(**overrides))
    loop.run(events)
    return loop


RAMP = [60 + 2 * m for m in range(-10, 11)]  # 2 %/min, 60 % at T0, 80 % at +10 min


def test_predictive_round_frees_predicted_minus_target() -> None:
    # predictions 92, 94, 96 at +6, +7, +8 min: stable at +8 (76 %, predicted 96 %)
    loop = scenario(RAMP)
    first = loop.evictions()[0]
    assert first.at == T0 + timedelta(minutes=8)
    assert first.data["reason"] == "predicted-pressure"
    evidence = first.data["evidence"]
    assert evidence["pressure"] == 76
    assert evidence["target"] == pytest.approx(16_000)  # (96 - 80) % of 100 cores
    assert evidence["prediction"]["eta_seconds"] == pytest.approx(420)
    assert len([d for d in loop.evictions() if d.at == first.at]) == 3  # per-batch limit


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"predictiveEvict": {"enabled": False}}, id="predictive-off"),
        pytest.param({"cpuEvict": {"enabled": False}}, id="cpu-eviction-off"),
        pytest.param({"predictiveEvict": {"advanceEvictThreshold": 100}}, id="threshold-100"),
    ],
)
def test_predictive_switches(overrides: dict[str, Any]) -> None:
    assert scenario(RAMP, **overrides).evictions() == []


def test_prediction_window_is_configurable() -> None:
    # 2 %/min: with a 5-minute horizon the prediction passes 90 from 82 % (+11 min) on
    loop = scenario(
        [60 + 2 * m for m in range(-10, 14)],
        predictiveEvict={"predictionWindow": "300s", "targetPercent": 70},
    )
    assert loop.evictions()[0].at == T0 + timedelta(minutes=13)


def test_predictive_and_reactive_share_the_cooldown() -> None:
    values = [*RAMP, 92, 94, 96]  # reactive pressure stable at +13 min, inside the cooldown
    loop = scenario(values, cpuEvict={"cooldownPeriod": "10m"})
    assert {d.at for d in loop.evictions()} == {T0 + timedelta(minutes=8)}
