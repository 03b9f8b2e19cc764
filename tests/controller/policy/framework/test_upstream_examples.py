"""Every upstream Volcano example runs the configuration it contains or stops with one line.

The examples are described in :mod:`tests.controller.policy.framework.upstream_examples`. An
example that loads must come out as given — the same actions and, tier by tier, the same
plugin entries with the same arguments and enable flags — except exactly the plugins and
actions the loader names as not implemented (and enable flags it names as unknown). One that
cannot run must raise the loader's ConfigError, on one line, naming the key.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from controller.cli import app
from controller.policy.framework.errors import ConfigError
from controller.policy.framework.points import ALL_FLAGS
from controller.policy.framework.tiers import FLAG_ALIASES, default_flags
from controller.policy.loader import Policy, load_policy
from streams.backends import open_log
from tests.controller.policy.framework.upstream_examples import EXAMPLES, Example, render

EXAMPLES_DIR = Path(__file__).resolve().parents[4] / "examples"
SKIPPED = re.compile(r"tide does not implement (.*); they are skipped")


def _skipped(warnings: tuple[str, ...]) -> tuple[set[str], set[str]]:
    """The plugins and actions the loader's one "not implemented" warning names."""
    found = [m.group(1) for w in warnings if (m := SKIPPED.search(w))]
    assert len(found) <= 1, found
    plugins: set[str] = set()
    actions: set[str] = set()
    for part in found[0].split(" and ") if found else []:
        kind, _, names = part.partition(" ")
        (plugins if kind == "plugins" else actions).update(n.strip() for n in names.split(","))
    return plugins, actions


def _action_names(actions: Any) -> list[str]:
    if actions is None:
        return []
    return [name.strip() for name in str(actions).split(",") if name.strip()]


def _expected_flags(entry: dict[str, Any], policy: Policy) -> dict[str, bool]:
    given = {k: v for k, v in entry.items() if k not in ("name", "arguments")}
    known = {}
    for option, value in given.items():
        if option in ALL_FLAGS or option in FLAG_ALIASES:
            known[option] = value
        else:  # a flag tide does not know is dropped only where a warning names it
            assert any(option in w and "unknown flag" in w for w in policy.warnings), option
    flags = default_flags(known)
    return {k: v for k, v in flags.items() if k not in FLAG_ALIASES}


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
def test_upstream_example_runs_what_it_contains_or_stops_with_one_line(example: Example) -> None:
    text = render(example)
    if example.refuses is not None:
        with pytest.raises(ConfigError) as info:
            load_policy(text)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(example.refuses), message
        return
    policy = load_policy(text)
    skipped_plugins, skipped_actions = _skipped(policy.warnings)
    given_actions = _action_names(example.actions)
    assert list(policy.config.actions) == [a for a in given_actions if a not in skipped_actions]
    assert skipped_actions <= set(given_actions)
    given_plugins = {entry["name"] for tier in example.tiers for entry in tier}
    assert skipped_plugins <= given_plugins
    # tier boundaries are kept, even where every plugin of a tier is skipped
    assert len(policy.config.tiers) == len(example.tiers)
    for tier, loaded in zip(example.tiers, policy.config.tiers, strict=True):
        kept = [entry for entry in tier if entry["name"] not in skipped_plugins]
        assert [c.name for c in loaded.plugins] == [e["name"] for e in kept]
        for entry, conf in zip(kept, loaded.plugins, strict=True):
            assert dict(conf.arguments) == (entry.get("arguments") or {}), entry["name"]
            flags = {k: v for k, v in conf.flags.items() if k not in FLAG_ALIASES}
            assert flags == _expected_flags(entry, policy), entry["name"]
    expected_configurations = {c["name"]: c["arguments"] for c in example.configurations or []}
    assert dict(policy.config.configurations) == expected_configurations
    # what config.applied records is the example's configuration, unwrapped
    assert policy.raw.get("actions") == example.actions
    assert policy.raw["tiers"] == example.scheduler()["tiers"]


def test_the_table_covers_both_wrappers_and_both_outcomes() -> None:
    wrappers = {e.wrapper for e in EXAMPLES}
    assert len(EXAMPLES) == 48 and len({e.id for e in EXAMPLES}) == 48
    assert {"plain", "configmap", "data-only"} <= wrappers
    assert any(e.refuses for e in EXAMPLES) and any(not e.refuses for e in EXAMPLES)


def _applied(url: str) -> dict[str, Any]:
    async def read() -> dict[str, Any]:
        async with await open_log(url) as log:
            events = await log.read_all()
        applied = [e for e in events if e.type == "config.applied"]
        assert len(applied) == 1
        data: dict[str, Any] = dict(applied[0].data)
        return data

    return asyncio.run(read())


CLI_EXAMPLES = [
    e
    for e in EXAMPLES
    if e.id
    in {
        "helm-volcano-scheduler",
        "guide-capacity",
        "guide-dynamicresources",
        "source-tdm-plugin-comment",
        "guide-network-topology-aware-plugin",
    }
]


@pytest.mark.parametrize("example", CLI_EXAMPLES, ids=[e.id for e in CLI_EXAMPLES])
def test_tide_simulate_applies_the_example(example: Example, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(render(example))
    url = f"sqlite:///{tmp_path / 'sim.db'}"
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            str(EXAMPLES_DIR / "tdm-window-close.yaml"),
            "-c",
            str(config),
            "--until",
            "+2m",
            "--decisions",
            str(tmp_path / "decisions.jsonl"),
            "--log",
            url,
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    applied = _applied(url)["config"]
    assert applied.get("actions") == example.actions
    assert applied["tiers"] == example.scheduler()["tiers"]
    assert "kind" not in applied and "data" not in applied


@pytest.mark.parametrize(
    "example", [e for e in EXAMPLES if e.refuses], ids=[e.id for e in EXAMPLES if e.refuses]
)
def test_tide_simulate_refuses_in_one_line(example: Example, tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(render(example))
    result = CliRunner().invoke(
        app, ["simulate", str(EXAMPLES_DIR / "tdm-window-close.yaml"), "-c", str(config)]
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert example.refuses is not None
    assert len(lines) == 1 and example.refuses in lines[0], result.output


BROKEN = "actions: allocate\nconfigurations:\n...\n- name: x\n"


def test_a_yaml_error_is_one_line_naming_line_and_column() -> None:
    with pytest.raises(ConfigError) as info:
        load_policy(
            yaml.safe_dump(
                {
                    "kind": "ConfigMap",
                    "apiVersion": "v1",
                    "data": {"volcano-scheduler.conf": BROKEN},
                }
            )
        )
    assert "\n" not in str(info.value)
    assert "line 4, column 1" in str(info.value)
