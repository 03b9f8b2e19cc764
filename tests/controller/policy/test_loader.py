"""The one policy loader: both configurations, one value, the errors and warnings of each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.policy.builtins import BUILTIN_ACTIONS, BUILTIN_PLUGINS
from controller.policy.framework.errors import ConfigError
from controller.policy.loader import Policy, load_config, load_policy
from controller.policy.pressure.config import parse_eviction_config

BASE: dict[str, Any] = {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}]}


@pytest.mark.parametrize(
    ("raw", "eviction", "warnings"),
    [
        (BASE, False, ()),
        ({**BASE, "eviction": {}}, False, ()),
        ({**BASE, "eviction": {"enabled": True}}, True, ()),
        (
            {**BASE, "colour": 1, "eviction": {"cpuEvict": {"colour": 2}}},
            True,
            (
                "unknown top-level configuration keys ignored: colour",
                "eviction.cpuEvict.colour: unknown key, ignored",
            ),
        ),
    ],
)
def test_both_configurations_in_one_value(
    raw: dict[str, Any], eviction: bool, warnings: tuple[str, ...]
) -> None:
    policy = load_policy(raw)
    assert policy.config.actions == ("allocate",)
    assert (policy.eviction is not None) == eviction
    assert policy.raw is raw
    assert policy.warnings == warnings


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({**BASE, "timezone": "Mars/Olympus"}, 'timezone: "Mars/Olympus": unknown IANA time zone'),
        (
            {**BASE, "eviction": {"cpuEvict": {"evictThreshold": 0}}},
            "eviction.cpuEvict.evictThreshold: 0: must be in (0, 100]",
        ),
    ],
)
def test_errors_name_key_and_value(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_policy(raw)
    assert str(info.value) == message


def test_a_file_path_and_a_mapping_load_the_same(tmp_path: Path) -> None:
    path = tmp_path / "tide.yaml"
    path.write_text("actions: allocate\neviction: {enabled: true}\n")
    policy = load_policy(path)
    assert policy.config.actions == ("allocate",)
    assert policy.eviction == parse_eviction_config({"enabled": True})
    assert dict(policy.raw) == {"actions": "allocate", "eviction": {"enabled": True}}


def test_defaults_are_the_builtin_tables() -> None:
    only_gang = {"gang": BUILTIN_PLUGINS["gang"]}
    assert load_config(BASE).warnings == ()
    narrowed = load_config(
        {**BASE, "tiers": [{"plugins": [{"name": "priority"}]}]},
        plugins=only_gang,
        actions=BUILTIN_ACTIONS,
    )
    assert narrowed.warnings == ("tide does not implement plugins priority; they are skipped",)


def test_policy_of_parsed_parts() -> None:
    config = load_config({**BASE, "colour": 1})
    eviction = parse_eviction_config({"enabled": True, "colour": 2})
    policy = Policy.of(config, eviction)
    assert (policy.config, policy.eviction) == (config, eviction)
    assert policy.warnings == (*config.warnings, *eviction.warnings)
