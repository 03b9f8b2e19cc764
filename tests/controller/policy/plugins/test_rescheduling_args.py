"""Rescheduling arguments, the startup warning and the always-written interval trigger."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from controller.policy.framework.errors import ConfigError
from controller.policy.loader import load_config
from controller.policy.plugins import rescheduling
from controller.policy.step import Step
from streams.events import format_time, make_event
from tests.builders import T0

SEED_YAML = """
actions: "enqueue, allocate, backfill, shuffle"
tiers:
  - plugins:
      - name: rescheduling
        enableVictim: true
        arguments:
          interval: "10m"
          metricsPeriod: "5m"
          strategies:
            - name: "lowNodeUtilization"
              params:
                thresholds:
                  cpu: 20
                  memory: 20
                targetThresholds:
                  cpu: 80
                  memory: 85
"""


def test_seed_configuration_loads_as_pasted() -> None:
    config = load_config(SEED_YAML)
    conf = config.tiers[0].plugins[0]
    args = conf.args
    assert isinstance(args, rescheduling.ReschedulingArgs)
    assert args.interval == timedelta(minutes=10)
    assert args.metrics_period == timedelta(minutes=5)
    assert dict(args.strategies[0].thresholds) == {"cpu": 20.0, "memory": 20.0}
    assert dict(args.strategies[0].target_thresholds) == {"cpu": 80.0, "memory": 85.0}
    assert conf.enabled("enabledVictim")
    assert not any("rescheduling" in w for w in config.warnings)


def test_defaults() -> None:
    args = rescheduling.parse_args({})
    assert args.interval == timedelta(minutes=5) == args.metrics_period
    assert len(args.strategies) == 1
    assert dict(args.strategies[0].thresholds) == {"cpu": 100.0, "memory": 100.0}


@pytest.mark.parametrize(
    ("flags", "enabled"),
    [
        pytest.param("enableVictim: false", False, id="seed-spelling-off"),
        pytest.param("enabledVictim: false", False, id="volcano-spelling-off"),
        pytest.param("enableVictim: false\n        enabledVictim: true", True, id="volcano-wins"),
        pytest.param("", True, id="default-on"),
    ],
)
def test_both_victim_flag_spellings_gate(flags: str, enabled: bool) -> None:
    text = (
        f'actions: "shuffle"\ntiers:\n  - plugins:\n      - name: rescheduling\n        {flags}\n'
    )
    conf = load_config(text).tiers[0].plugins[0]
    assert conf.enabled("enabledVictim") is enabled


def test_warns_when_shuffle_is_not_in_actions() -> None:
    config = load_config(SEED_YAML.replace(", shuffle", ""))
    assert any("shuffle" in w and "rescheduling" in w for w in config.warnings)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param({"interval": "5 minutes"}, "interval: ", id="bad-interval"),
        pytest.param({"interval": 300}, "interval: 300", id="non-string-interval"),
        pytest.param({"interval": "-5m"}, "must be positive", id="negative-interval"),
        pytest.param({"metricsPeriod": "0"}, "metricsPeriod", id="zero-period"),
        pytest.param({"strategies": "lnu"}, "strategies", id="strategies-not-a-list"),
        pytest.param({"strategies": [{"name": "offlineOnly"}]}, "strategies[0].name", id="unknown"),
        pytest.param(
            {
                "strategies": [
                    {"name": "lowNodeUtilization", "params": {"thresholds": {"cpu": 120}}}
                ]
            },
            "thresholds.cpu: 120",
            id="over-100",
        ),
        pytest.param(
            {"strategies": [{"name": "lowNodeUtilization", "params": {"thresholds": {"gpu": 1}}}]},
            "thresholds.gpu",
            id="unknown-resource",
        ),
        pytest.param(
            {
                "strategies": [
                    {"name": "lowNodeUtilization", "params": {"thresholds": {"cpu": "x"}}}
                ]
            },
            "must be a number",
            id="not-a-number",
        ),
        pytest.param(
            {"strategies": [{"name": "lowNodeUtilization", "params": {"thresold": {}}}]},
            "params.thresold",
            id="typo-param",
        ),
    ],
)
def test_invalid_arguments_name_key_and_value(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        rescheduling.parse_args(raw)


def test_float_and_pods_thresholds_are_accepted() -> None:
    params = {"thresholds": {"cpu": 20.5, "pods": 10}, "nodeFit": True}
    args = rescheduling.parse_args(
        {"strategies": [{"name": "lowNodeUtilization", "params": params}]}
    )
    assert dict(args.strategies[0].thresholds) == {"cpu": 20.5, "memory": 100.0}


@pytest.mark.parametrize(
    ("kind", "written"),
    [
        pytest.param("rescheduling", 1, id="interval-firing-always-written"),
        pytest.param("evict-period", 0, id="other-empty-firing-dropped"),
    ],
)
def test_interval_firing_is_written_even_when_it_evicts_nothing(kind: str, written: int) -> None:
    step = Step(config=load_config(SEED_YAML), eviction=None)
    data = {"trigger": "rescheduling/interval", "kind": kind, "scheduled": format_time(T0)}
    assert len(step.on_trigger(make_event("trigger.fired", T0, data))) == written


def test_differences_table_is_complete() -> None:
    topics = [row[0] for row in rescheduling.DIFFERENCES]
    assert len(topics) == len(set(topics))
    assert all(len(row) == 4 and all(row) for row in rescheduling.DIFFERENCES)
    for needed in ("Usage source", "Last run", "Ties"):
        assert needed in topics
