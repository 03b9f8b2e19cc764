"""TDM arguments: valid configurations, and invalid ones stop startup naming key and value."""

from __future__ import annotations

from datetime import time, timedelta
from typing import Any

import pytest

import controller.policy.plugins.tdm as tdm
from controller.policy.framework.errors import ConfigError
from controller.policy.plugins.tdm import DEFAULT_EVICT_PERIOD, TdmArgs, parse_args


def test_module_contract() -> None:
    assert tdm.NAME == "tdm"
    assert callable(tdm.parse_args) and callable(tdm.build)


def test_seed_example() -> None:
    args = parse_args(
        {
            "tdm.revocable-zone.rz1": "08:00-21:00",
            "tdm.revocable-zone.rz2": "10:00-18:00",
            "tdm.evict.period": "1m",
        }
    )
    assert [z.name for z in args.zones] == ["rz1", "rz2"]
    rz1 = args.zone("rz1")
    assert rz1 is not None
    assert rz1.window.start == time(8)
    assert args.zone("nope") is None
    assert args.evict_period == timedelta(minutes=1)
    assert args.shared_timer is False
    assert args.evict_period_text == "1m0s"


def test_defaults() -> None:
    assert parse_args({}) == TdmArgs((), DEFAULT_EVICT_PERIOD, False)
    assert timedelta(minutes=1) == DEFAULT_EVICT_PERIOD


def test_zones_are_sorted_by_name() -> None:
    args = parse_args({"tdm.revocable-zone.b": "1:00-2:00", "tdm.revocable-zone.a": "3:00-4:00"})
    assert [z.name for z in args.zones] == ["a", "b"]


@pytest.mark.parametrize(
    ("value", "shared"),
    [(True, True), (False, False), ("true", True), ("false", False), ("1", True), ("F", False)],
)
def test_shared_timer(value: object, shared: bool) -> None:
    assert parse_args({"tdm.evict.shared-timer": value}).shared_timer is shared


def test_foreign_keys_are_ignored() -> None:
    assert parse_args({"other.plugin.key": 5}).zones == ()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"tdm.revocable-zone.rz1": "25:00-26:00"},
            'tdm.revocable-zone.rz1: "25:00-26:00": ',
            id="window out of range",
        ),
        pytest.param(
            {"tdm.revocable-zone.rz1": "1:00 - 2:00"},
            'tdm.revocable-zone.rz1: "1:00 - 2:00": ',
            id="window inner whitespace",
        ),
        pytest.param(
            {"tdm.revocable-zone.rz1": 8},
            "tdm.revocable-zone.rz1: 8: ",
            id="window not a string",
        ),
        pytest.param(
            {"tdm.revocable-zone.": "1:00-2:00"},
            "zone name is empty",
            id="empty zone name",
        ),
        pytest.param(
            {"tdm.evict.period": "-1m"},
            'tdm.evict.period: "-1m": must be positive',
            id="negative period",
        ),
        pytest.param(
            {"tdm.evict.period": "0"}, 'tdm.evict.period: "0": must be positive', id="zero period"
        ),
        pytest.param({"tdm.evict.period": "0s"}, "must be positive", id="zero seconds"),
        pytest.param({"tdm.evict.period": "1ns"}, "must be positive", id="below a microsecond"),
        pytest.param(
            {"tdm.evict.period": "abc"},
            'tdm.evict.period: "abc": invalid duration',
            id="unparsable period",
        ),
        pytest.param(
            {"tdm.evict.period": 60},
            "tdm.evict.period: 60: must be a Go duration",
            id="period not a string",
        ),
        pytest.param(
            {"tdm.evict.shared-timer": "yes"},
            'tdm.evict.shared-timer: "yes"',
            id="shared timer not a bool",
        ),
        pytest.param({"tdm.evict.periods": "1m"}, "unknown TDM argument", id="typo"),
        pytest.param(
            {"x.tdm.revocable-zone.rz1": "1:00-2:00"},
            "unknown TDM argument",
            id="zone key by substring",
        ),
    ],
)
def test_invalid_arguments_name_key_and_value(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_args(raw)
    assert message in str(err.value)


def test_differences_table_is_complete() -> None:
    topics = [row[0] for row in tdm.DIFFERENCES]
    assert len(topics) == len(set(topics))
    assert all(len(row) == 4 and all(row) for row in tdm.DIFFERENCES)
    for needed in ("Cross-midnight windows", "Evict timer per zone", "Invalid budget value"):
        assert needed in topics
