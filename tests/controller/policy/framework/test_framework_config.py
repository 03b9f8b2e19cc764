"""Configuration loading: Volcano's format, tide's keys, errors naming key and value."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.policy.framework import points as p
from controller.policy.framework.durations import parse_duration
from controller.policy.framework.errors import ConfigError
from controller.policy.framework.plugin import PluginSpec
from controller.policy.framework.session import Session
from controller.policy.loader import load_config

VOLCANO_CONF = """
actions: "enqueue, allocate, backfill, shuffle"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
    arguments:
      predicate.NodeAffinityEnable: true
      predicate.GPUSharingEnable: false
  - name: proportion
  - name: nodeorder
  - name: binpack
configurations:
- name: allocate
  arguments:
    predicateErrorCacheEnable: "false"
"""


def test_a_pasted_volcano_configuration_loads_with_its_warnings() -> None:
    config = load_config(VOLCANO_CONF)
    assert config.actions == ("allocate", "backfill", "shuffle")
    assert [[e.name for e in t.plugins] for t in config.tiers] == [
        ["priority", "gang", "conformance"],
        ["predicates", "proportion", "nodeorder"],
    ]
    # one warning for what tide skips, one for an argument of an implemented plugin it ignores
    assert config.warnings == (
        "tiers[1].plugins[2].arguments: plugin predicates ignores predicate.GPUSharingEnable "
        "(tide does not implement them)",
        "tide does not implement plugins binpack, drf, overcommit "
        "and actions enqueue; they are skipped",
    )
    gang = config.tiers[0].plugins[1]
    assert gang.enabled(p.JOB_ORDER) and not gang.enabled(p.PREEMPTABLE)
    assert not gang.enabled(p.CLUSTER_ORDER) and not gang.enabled(p.HIERARCHY)
    assert config.action_args["allocate"].predicate_error_cache is False
    assert config.timezone == "UTC" and config.scheduler_name == "volcano"
    assert config.tick == timedelta(seconds=1)
    assert config.raw["actions"] == "enqueue, allocate, backfill, shuffle"


def test_tide_keys_and_list_actions(tmp_path: Path) -> None:
    path = tmp_path / "tide.yaml"
    path.write_text(
        "actions: [allocate]\n"
        "tiers: [{plugins: [{name: gang}]}]\n"
        "timezone: Asia/Shanghai\nschedulerName: tide\nsessionTick: 500ms\n"
        "eviction: {cpuEvict: {enabled: true}}\n"
    )
    for source in (path, str(path)):
        config = load_config(source)
        assert config.actions == ("allocate",)
        assert config.timezone == "Asia/Shanghai" and config.scheduler_name == "tide"
        assert config.tick == timedelta(milliseconds=500)
        assert config.eviction == {"cpuEvict": {"enabled": True}}
        assert config.warnings == ()


def test_no_scheduler_part_means_volcanos_default() -> None:
    config = load_config({"timezone": "UTC"})
    assert config.actions == ("allocate", "backfill")
    assert [e.name for e in config.tiers[0].plugins] == ["priority", "gang", "conformance"]
    assert "enqueue" in config.warnings[0] and "drf" in config.warnings[0]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"timezone": "Mars/Olympus"}, 'timezone: "Mars/Olympus": unknown IANA time zone'),
        ({"actions": 3}, "actions: 3: must be a comma-separated string or a list of names"),
        ({"sessionTick": "-1s"}, 'sessionTick: "-1s": must be positive'),
        ({"sessionTick": "soon"}, 'sessionTick: "soon": not a duration'),
        ({"schedulerName": ""}, 'schedulerName: "": must be a name or a list of names'),
        (
            {"tiers": [{"plugins": [{"name": "gang", "enableJobOrder": "yes"}]}]},
            'tiers[0].plugins[0].enableJobOrder: "yes": must be true or false',
        ),
        (
            {"tiers": [{"plugins": [{"name": "gang", "weight": 3}]}]},
            "tiers[0].plugins[0].weight: 3: unknown option of plugin gang",
        ),
        ({"tiers": [{"plugins": [{"nam": "gang"}]}]}, "tiers[0].plugins[0].name: None"),
        (
            {
                "tiers": [
                    {
                        "plugins": [
                            {
                                "name": "predicates",
                                "arguments": {"predicate.NodeAffinityEnable": "no"},
                            }
                        ]
                    }
                ]
            },
            'predicates.predicate.NodeAffinityEnable: "no": must be true or false',
        ),
        (
            {
                "actions": "allocate",
                "configurations": [
                    {"name": "allocate", "arguments": {"predicateErrorCacheEnable": 2}}
                ],
            },
            "allocate.predicateErrorCacheEnable: 2: must be true or false",
        ),
        ({"eviction": ["x"]}, "eviction: ['x']: must be a mapping"),
        ("actions: [unclosed", "<configuration>"),
    ],
)
def test_invalid_values_name_the_key_and_value(raw: Any, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(raw)
    assert message in str(info.value)


def test_plugin_arguments_are_parsed_by_the_plugin_at_load() -> None:
    def parse(raw: Mapping[str, Any]) -> int:
        value = raw.get("x.window")
        if value == "25:00-26:00":
            raise ConfigError("x.window", value, "hour out of range")
        return 7

    class Noop:
        name = "x"

        def on_session_open(self, ssn: Session) -> None:
            del ssn

        def on_session_close(self, ssn: Session) -> None:
            del ssn

    table = {"x": PluginSpec("x", parse, lambda args, ctx: Noop())}
    ok = load_config({"tiers": [{"plugins": [{"name": "x"}]}]}, plugins=table)
    assert ok.tiers[0].plugins[0].args == 7
    with pytest.raises(ConfigError, match=r'x.window: "25:00-26:00": hour out of range'):
        load_config(
            {"tiers": [{"plugins": [{"name": "x", "arguments": {"x.window": "25:00-26:00"}}]}]},
            plugins=table,
        )


def test_unknown_top_level_keys_are_warned_about() -> None:
    config = load_config({"actions": "allocate", "tiers": [], "colour": "blue"})
    assert config.warnings == ("unknown top-level configuration keys ignored: colour",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1s", timedelta(seconds=1)),
        ("1m30s", timedelta(seconds=90)),
        ("100ms", timedelta(milliseconds=100)),
        ("1.5h", timedelta(minutes=90)),
        ("-2s", timedelta(seconds=-2)),
        ("0", timedelta(0)),
        ("1h2m3s4ms5us", timedelta(hours=1, minutes=2, seconds=3, microseconds=4005)),
    ],
)
def test_parse_duration(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["", "1", "1d", "s", "1 s", "--1s", "1s2"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_the_framework_loader_takes_its_registries() -> None:
    from controller.policy.framework import config as framework_config

    with pytest.raises(TypeError):
        # deliberately without the required registries: the call itself must fail
        framework_config.load_config({"actions": "allocate"})  # type: ignore[call-arg]
    config = framework_config.load_config(
        {"actions": "allocate", "tiers": [{"plugins": [{"name": "gang"}]}]},
        plugins={},
        actions={},
    )
    assert (config.actions, config.tiers[0].plugins) == ((), ())
    assert config.warnings == (
        "tide does not implement plugins gang and actions allocate; they are skipped",
    )
