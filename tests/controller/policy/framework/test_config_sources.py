"""Pasted configurations run what they contain or stop with one line; never anything else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from controller.cli import app
from controller.policy.framework.errors import ConfigError
from controller.policy.loader import load_policy

SCHEDULER = 'actions: "allocate, shuffle"\ntiers:\n- plugins:\n  - name: gang\n  - name: tdm\n'


def configmap(data: dict[str, str], kind: str = "ConfigMap") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": "volcano-system"},
        "data": data,
    }


def test_a_volcano_configmap_runs_the_configuration_it_wraps() -> None:
    policy = load_policy(configmap({"volcano-scheduler.conf": SCHEDULER}))
    assert policy.config.actions == ("allocate", "shuffle")
    assert [c.name for t in policy.config.tiers for c in t.plugins] == ["gang", "tdm"]
    assert any('read data."volcano-scheduler.conf"' in w for w in policy.warnings)
    assert "kind" not in policy.raw  # config.applied records the unwrapped configuration


def test_a_koordinator_eviction_configmap_goes_under_eviction() -> None:
    text = "cpuEvict: {enabled: true, evictThreshold: 80}\n"
    policy = load_policy(configmap({"eviction-config.yaml": text}))
    assert policy.eviction is not None and policy.eviction.cpu.evict_threshold == 80.0


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (configmap({}, kind="Deployment"), "a Kubernetes Deployment object"),
        (configmap({"other.conf": "x: 1"}), "a ConfigMap without"),
        (configmap({"volcano-scheduler.conf": "- a list"}), "must hold a YAML mapping"),
        ({"scheduler": {"actions": "allocate"}}, "not running Volcano's built-in default"),
        ({"eviction": {"clusterStrategy": {"enable": "yes"}}}, "must be true or false"),
        ({"eviction": {"colour": 1}}, "no key tide knows"),
        ({"eviction": {"cpuEvict": {"evictThreshold": 0.9}}}, "looks like a fraction"),
    ],
    ids=[
        "other-kind",
        "configmap-without-known-key",
        "configmap-not-a-mapping",
        "unknown-keys-no-default",
        "koordinator-bad-enable",
        "eviction-nothing-known",
        "fraction-threshold",
    ],
)
def test_bad_configurations_stop_with_one_line(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_policy(raw)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("eviction", "enabled", "cpu", "memory_threshold"),
    [
        (
            {"clusterStrategy": {"enable": False, "memoryEvictThresholdPercent": 70}},
            False,
            False,
            70.0,
        ),
        (
            {"clusterStrategy": {"enable": True, "memoryEvictThresholdPercent": 70}},
            True,
            False,
            70.0,
        ),
        (
            {
                "apiVersion": "slo.koordinator.sh/v1alpha1",
                "kind": "NodeSLO",
                "spec": {
                    "resourceUsedThresholdWithBE": {
                        "enable": True,
                        "cpuEvictBEUsageThresholdPercent": 75,
                        "cpuSuppressThresholdPercent": 65,
                    }
                },
            },
            True,
            True,
            85.0,
        ),
        ({"enable": False}, False, True, 85.0),
    ],
    ids=["resource-threshold-off", "resource-threshold-on", "nodeslo", "tide-keys-enable-false"],
)
def test_koordinator_keys_under_eviction_are_translated(
    eviction: dict[str, Any], enabled: bool, cpu: bool, memory_threshold: float
) -> None:
    policy = load_policy({"actions": "allocate", "eviction": eviction})
    assert policy.eviction is not None
    assert policy.eviction.enabled is enabled
    assert policy.eviction.cpu.enabled is cpu
    assert policy.eviction.memory.evict_threshold == memory_threshold


@pytest.mark.parametrize(
    ("raw", "warning"),
    [
        ({"tiers": [{"plugins": [{"name": "tdm"}]}]}, "no actions configured"),
        (
            {"actions": "allocate", "tiers": [{"plugins": [{"name": "tdm"}]}]},
            "action shuffle is not in actions",
        ),
        (
            {
                "actions": "allocate",
                "tiers": [{"plugins": [{"name": "gang", "enableJobOrdr": True}]}],
            },
            "did you mean enableJobOrder?",
        ),
        (
            {
                "actions": "allocate",
                "tiers": [
                    {
                        "plugins": [
                            {
                                "name": "predicates",
                                "arguments": {"predicate.GPUSharingEnable": True},
                            }
                        ]
                    }
                ],
            },
            "plugin predicates ignores predicate.GPUSharingEnable",
        ),
        (
            {
                "actions": "allocate",
                "configurations": [{"name": "allocate", "arguments": {"x": 1}}],
            },
            "action allocate ignores x",
        ),
    ],
    ids=[
        "no-actions",
        "tdm-without-shuffle",
        "misspelled-flag",
        "ignored-plugin-argument",
        "ignored-action-argument",
    ],
)
def test_silent_noops_are_named(raw: dict[str, Any], warning: str) -> None:
    assert any(warning in w for w in load_policy(raw).warnings)


def test_seed_spelling_enable_victim_is_enabled_victim() -> None:
    raw = {"actions": "shuffle", "tiers": [{"plugins": [{"name": "tdm", "enableVictim": False}]}]}
    policy = load_policy(raw)
    conf = policy.config.tiers[0].plugins[0]
    assert conf.flags["enabledVictim"] is False
    assert not any("enableVictim" in w for w in policy.warnings)


def test_config_may_be_given_twice(tmp_path: Path) -> None:
    cm = tmp_path / "cm.yaml"
    cm.write_text(yaml.safe_dump(configmap({"volcano-scheduler.conf": SCHEDULER})))
    own = tmp_path / "tide.yaml"
    own.write_text("timezone: Asia/Shanghai\n")
    twice = tmp_path / "twice.yaml"
    twice.write_text("timezone: UTC\n")
    recording = tmp_path / "empty.jsonl"
    recording.write_text("")
    runner = CliRunner()
    result = runner.invoke(app, ["simulate", str(recording), "-c", str(cm), "-c", str(own)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["simulate", str(recording), "-c", str(own), "-c", str(twice)])
    assert result.exit_code == 2
    assert "'timezone' is also given by" in result.output
