"""parse_eviction_config: seed keys and defaults, the §9.10 profiles, invalid values."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml

from controller.policy.framework.errors import ConfigError
from controller.policy.pressure.config import EvictionConfig, parse_eviction_config

S = timedelta(seconds=1)

SEED_9_9 = """
cpuEvict:
  enabled: true
  evictThreshold: 90
  cooldownPeriod: 60s
  maxEvictionPerBatch: 3
  maxEvictionPerMinute: 5
memoryEvict:
  enabled: true
  evictThreshold: 85
  oomRiskThreshold: 90
  cooldownPeriod: 120s
  maxEvictionPerBatch: 2
faultyEvict:
  enabled: true
  oomCountThreshold: 3
  memoryLeakDuration: 3600s
predictiveEvict:
  enabled: true
  predictionWindow: 600s
  advanceEvictThreshold: 90
  trendWindow: 600s
gracefulEviction:
  enabled: true
  preStopDelaySeconds: 10
  batchInterval: 10s
  verifyAfterEviction: true
schedulingOptimization:
  evictionTaint: true
  taintDuration: 300s
  resourceReservation: true
  reservationDuration: 600s
"""

PROFILE_LATENCY = """
cpuEvict:
  evictThreshold: 85
  cooldownPeriod: 30s
  maxEvictionPerBatch: 5
predictiveEvict:
  enabled: true
  advanceEvictThreshold: 85
  predictionWindow: 300s
gracefulEviction:
  enabled: false
  # 或者缩短延迟
  preStopDelaySeconds: 5
"""

PROFILE_THROUGHPUT = """
cpuEvict:
  evictThreshold: 95
  cooldownPeriod: 120s
  maxEvictionPerBatch: 1
predictiveEvict:
  enabled: false
gracefulEviction:
  enabled: true
  preStopDelaySeconds: 30
  batchInterval: 30s
"""

PROFILE_BALANCED = """
cpuEvict:
  evictThreshold: 90
  cooldownPeriod: 60s
  maxEvictionPerBatch: 3
predictiveEvict:
  enabled: true
  advanceEvictThreshold: 90
  predictionWindow: 600s
gracefulEviction:
  enabled: true
  preStopDelaySeconds: 10
"""


def test_defaults_are_the_seeds() -> None:
    cfg = parse_eviction_config({})
    assert cfg == EvictionConfig()
    assert (cfg.cpu.evict_threshold, cfg.cpu.cooldown, cfg.cpu.max_per_batch) == (90, 60 * S, 3)
    assert cfg.cpu.max_per_minute == 5 and cfg.cpu.oom_risk_threshold is None
    mem = cfg.memory
    assert (mem.evict_threshold, mem.oom_risk_threshold, mem.cooldown) == (85, 90, 120 * S)
    assert (mem.max_per_batch, mem.max_per_minute) == (2, 5)
    assert (cfg.faulty.oom_count_threshold, cfg.faulty.memory_leak_duration) == (3, 3600 * S)
    p = cfg.predictive
    assert (p.prediction_window, p.advance_threshold, p.trend_window, p.target_percent) == (
        600 * S,
        90,
        600 * S,
        80,
    )
    g = cfg.graceful
    assert (g.pre_stop_delay, g.batch_size, g.batch_interval, g.verify_after_eviction) == (
        10 * S,
        3,
        10 * S,
        True,
    )
    o = cfg.scheduling
    assert (o.eviction_taint, o.taint_duration, o.resource_reservation) == (True, 300 * S, True)
    assert o.reservation_duration == 600 * S
    assert (cfg.stable_checks, cfg.adaptive_cooldown, cfg.release_margin) == (3, True, 5)
    assert cfg.warnings == ()


def test_seed_9_9_example_loads_to_the_defaults() -> None:
    assert parse_eviction_config(yaml.safe_load(SEED_9_9)) == EvictionConfig()


def test_profile_latency_sensitive() -> None:
    cfg = parse_eviction_config(yaml.safe_load(PROFILE_LATENCY))
    assert (cfg.cpu.evict_threshold, cfg.cpu.cooldown, cfg.cpu.max_per_batch) == (85, 30 * S, 5)
    assert cfg.predictive.advance_threshold == 85
    assert cfg.predictive.prediction_window == 300 * S
    assert cfg.graceful.enabled is False
    assert cfg.graceful.pre_stop_delay == 5 * S
    assert cfg.pre_stop_delay == timedelta(0)  # graceful eviction off: no notice delay
    assert cfg.warnings == ()


def test_profile_throughput_first() -> None:
    cfg = parse_eviction_config(yaml.safe_load(PROFILE_THROUGHPUT))
    assert (cfg.cpu.evict_threshold, cfg.cpu.cooldown, cfg.cpu.max_per_batch) == (95, 120 * S, 1)
    assert cfg.predictive.enabled is False
    assert cfg.graceful.pre_stop_delay == 30 * S
    assert cfg.graceful.batch_interval == 30 * S
    assert cfg.pre_stop_delay == 30 * S


def test_profile_balanced() -> None:
    cfg = parse_eviction_config(yaml.safe_load(PROFILE_BALANCED))
    assert cfg == EvictionConfig()


def test_seed_9_5_top_level_rate_keys_are_defaults_for_both_resources() -> None:
    cfg = parse_eviction_config(
        {
            "cooldownPeriod": "45s",
            "maxEvictionPerMinute": 4,
            "maxEvictionPerBatch": 2,
            "memoryEvict": {"maxEvictionPerBatch": 1},
        }
    )
    assert (cfg.cpu.cooldown, cfg.cpu.max_per_minute, cfg.cpu.max_per_batch) == (45 * S, 4, 2)
    assert (cfg.memory.cooldown, cfg.memory.max_per_minute) == (45 * S, 4)
    assert cfg.memory.max_per_batch == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("90s", 90 * S),
        ("1m30s", 90 * S),
        ("500ms", timedelta(milliseconds=500)),
        ("1.5h", timedelta(minutes=90)),
        (45, 45 * S),
        (2.5, 2.5 * S),
        ("0", timedelta(0)),
        ("15", 15 * S),
    ],
)
def test_durations(value: Any, expected: timedelta) -> None:
    assert parse_eviction_config({"cpuEvict": {"cooldownPeriod": value}}).cpu.cooldown == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"cpuEvict": {"evictThreshold": 0}}, "eviction.cpuEvict.evictThreshold: 0"),
        ({"cpuEvict": {"evictThreshold": 100.5}}, "eviction.cpuEvict.evictThreshold: 100.5"),
        ({"cpuEvict": {"evictThreshold": "90%"}}, 'eviction.cpuEvict.evictThreshold: "90%"'),
        ({"memoryEvict": {"oomRiskThreshold": 101}}, "eviction.memoryEvict.oomRiskThreshold: 101"),
        ({"cpuEvict": {"cooldownPeriod": "-5s"}}, 'eviction.cpuEvict.cooldownPeriod: "-5s"'),
        ({"cpuEvict": {"cooldownPeriod": -1}}, "eviction.cpuEvict.cooldownPeriod: -1"),
        ({"cpuEvict": {"cooldownPeriod": "soon"}}, 'eviction.cpuEvict.cooldownPeriod: "soon"'),
        ({"cpuEvict": {"maxEvictionPerBatch": 0}}, "eviction.cpuEvict.maxEvictionPerBatch: 0"),
        (
            {"memoryEvict": {"maxEvictionPerMinute": 0}},
            "eviction.memoryEvict.maxEvictionPerMinute: 0",
        ),
        ({"gracefulEviction": {"batchSize": 0}}, "eviction.gracefulEviction.batchSize: 0"),
        (
            {"gracefulEviction": {"batchInterval": "-10s"}},
            'eviction.gracefulEviction.batchInterval: "-10s"',
        ),
        (
            {"gracefulEviction": {"preStopDelaySeconds": -3}},
            "eviction.gracefulEviction.preStopDelaySeconds: -3",
        ),
        ({"faultyEvict": {"oomCountThreshold": 0}}, "eviction.faultyEvict.oomCountThreshold: 0"),
        (
            {"faultyEvict": {"memoryLeakDuration": "0s"}},
            'eviction.faultyEvict.memoryLeakDuration: "0s"',
        ),
        ({"predictiveEvict": {"trendWindow": 0}}, "eviction.predictiveEvict.trendWindow: 0"),
        ({"predictiveEvict": {"targetPercent": 95}}, "eviction.predictiveEvict.targetPercent: 95"),
        (
            {"schedulingOptimization": {"taintDuration": "-1m"}},
            'eviction.schedulingOptimization.taintDuration: "-1m"',
        ),
        ({"pressureStableThreshold": 0}, "eviction.pressureStableThreshold: 0"),
        # the intervals that schedule later work are 0 or at least 100ms
        (
            {"gracefulEviction": {"batchInterval": "1us"}},
            'eviction.gracefulEviction.batchInterval: "1us": must be 0 or at least 0.1s',
        ),
        (
            {"cpuEvict": {"cooldownPeriod": "99ms"}},
            'eviction.cpuEvict.cooldownPeriod: "99ms": must be 0 or at least 0.1s',
        ),
        (
            {"cooldownPeriod": 0.001},
            "eviction.cpuEvict.cooldownPeriod: 0.001: must be 0 or at least 0.1s",
        ),
        (
            {"schedulingOptimization": {"taintDuration": "50ms"}},
            'eviction.schedulingOptimization.taintDuration: "50ms": must be 0 or at least',
        ),
        (
            {"schedulingOptimization": {"reservationDuration": "10ms"}},
            'eviction.schedulingOptimization.reservationDuration: "10ms": must be 0 or',
        ),
        ({"releaseMargin": -1}, "eviction.releaseMargin: -1"),
        ({"releaseMargin": 90}, "eviction.releaseMargin: 90"),
        ({"adaptiveCooldown": "yes"}, 'eviction.adaptiveCooldown: "yes"'),
        ({"cpuEvict": "on"}, 'eviction.cpuEvict: "on"'),
    ],
)
def test_invalid_values_name_the_key(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_eviction_config(raw)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("raw", "field", "value"),
    [
        ({"cpuEvict": {"evictThreshold": 100}}, "cpu.evict_threshold", 100.0),
        ({"cpuEvict": {"evictThreshold": 0.5}, "releaseMargin": 0}, "cpu.evict_threshold", 0.5),
        ({"cpuEvict": {"maxEvictionPerBatch": 1}}, "cpu.max_per_batch", 1),
        ({"releaseMargin": 0}, "release_margin", 0.0),
        ({"pressureStableThreshold": 1}, "stable_checks", 1),
        ({"cpuEvict": {"cooldownPeriod": 0}}, "cpu.cooldown", timedelta(0)),
        (
            {"gracefulEviction": {"batchInterval": "100ms"}},
            "graceful.batch_interval",
            timedelta(milliseconds=100),
        ),
    ],
)
def test_boundary_values_are_accepted(raw: dict[str, Any], field: str, value: object) -> None:
    cfg: Any = parse_eviction_config(raw)
    for part in field.split("."):
        cfg = getattr(cfg, part)
    assert cfg == value


def test_unknown_keys_are_warned_not_dropped_silently() -> None:
    cfg = parse_eviction_config({"cpuEvict": {"evictThreshhold": 80}, "extra": 1})
    assert cfg.warnings == (
        "eviction.cpuEvict.evictThreshhold: unknown key, ignored",
        "eviction.extra: unknown key, ignored",
    )
