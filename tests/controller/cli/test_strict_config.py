"""Configuration mistakes stop start-up (issue 29): a near miss of a name tide implements is
exit 2 with "did you mean …?", naming the file and the key; an empty configuration is exit
2; a real Volcano configuration naming plugins tide does not implement runs with its one
warning; a log's own recorded configuration loads as it was (never strict)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app
from controller.policy.builtins import BUILTIN_ACTIONS, BUILTIN_PLUGINS
from controller.policy.framework.spelling import distance, near_miss
from controller.policy.loader import FOREIGN_ACTIONS, FOREIGN_PLUGINS, load_policy

ROOT = Path(__file__).resolve().parents[3]
RECORDING = ROOT / "tests" / "replay" / "golden" / "allocate-gang.jsonl"
TIERS = "tiers:\n- plugins:\n  - name: gang\n  - name: {plugin}\n"
BASE = 'actions: "{actions}"\n' + TIERS

runner = CliRunner()


def simulate(config: Path) -> tuple[int, str, str]:
    result = runner.invoke(app, ["simulate", str(RECORDING), "--config", str(config)])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("text", "key", "meant"),
    [
        (BASE.format(actions="allocate", plugin="tmd"), "tiers[0].plugins[1].name", "tdm"),
        (BASE.format(actions="allocate", plugin="TDM"), "tiers[0].plugins[1].name", "tdm"),
        (
            BASE.format(actions="allocate", plugin="nodeordr"),
            "tiers[0].plugins[1].name",
            "nodeorder",
        ),
        (BASE.format(actions="allocate", plugin="gnag"), "tiers[0].plugins[1].name", "gang"),
        (BASE.format(actions="allocate, shufle", plugin="tdm"), "actions", "shuffle"),
        (BASE.format(actions="alocate", plugin="tdm"), "actions", "allocate"),
        (
            BASE.format(actions="allocate", plugin="tdm") + "timezne: Europe/Paris\n",
            "timezne",
            "timezone",
        ),
        (
            BASE.format(actions="allocate", plugin="tdm") + "sessiontick: 2s\n",
            "sessiontick",
            "sessionTick",
        ),
        (BASE.format(actions="allocate", plugin="tdm") + "eviktion: {}\n", "eviktion", "eviction"),
        ("acions: allocate\n" + TIERS.format(plugin="tdm"), "acions", "actions"),
        ("actions: allocate\ntimezne: UTC\n", "timezne", "timezone"),
        (
            BASE.format(actions="allocate", plugin="tdm")
            + "configurations:\n- name: shufle\n  arguments: {}\n",
            "configurations[0].name",
            "shuffle",
        ),
    ],
    ids=[
        "plugin-transposed",
        "plugin-case",
        "plugin-letter-missing",
        "plugin-short-transposed",
        "action-letter-missing",
        "action-first",
        "top-level",
        "top-level-case",
        "top-level-section",
        "no-actions-key",
        "no-tiers",
        "configurations-name",
    ],
)
def test_a_near_miss_is_exit_2_naming_file_key_and_the_name_meant(
    text: str, key: str, meant: str, tmp_path: Path
) -> None:
    config = tmp_path / "conf.yaml"
    config.write_text(text)
    code, out, err = simulate(config)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and out == "", err
    assert lines[0].startswith(f"error: {config}: {key}: "), lines[0]
    assert lines[0].endswith(f"(did you mean {meant}?)"), lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "text",
    ["", "\n\n", "# only a comment\n", "# one\n\n# two\n", "{}\n", "---\n"],
    ids=["empty", "blank-lines", "comment", "comments", "empty-mapping", "empty-document"],
)
def test_an_empty_configuration_is_exit_2(text: str, tmp_path: Path) -> None:
    config = tmp_path / "conf.yaml"
    config.write_text(text)
    code, out, err = simulate(config)
    assert code == 2
    assert err.strip().splitlines() == [
        f"error: {config}: the configuration is empty (no keys, only blanks or comments)"
    ]
    assert out == ""


def test_an_empty_wrapped_configuration_is_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "cm.yaml"
    config.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
        "data:\n  volcano-scheduler.conf: '# nothing yet'\n"
    )
    code, _, err = simulate(config)
    assert code == 2
    assert err.strip().splitlines()[-1].startswith(f"error: {config}: ")


def test_a_real_volcano_configuration_still_runs_with_its_one_warning() -> None:
    config = ROOT / "examples" / "volcano-scheduler.conf.yaml"
    code, _, err = simulate(config)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: tide does not implement plugins binpack, drf, overcommit and actions enqueue;"
        " they are skipped"
    ]


def test_every_volcano_name_tide_skips_is_a_warning_never_a_near_miss(tmp_path: Path) -> None:
    plugins = "".join(f"  - name: {name}\n" for name in sorted(FOREIGN_PLUGINS))
    actions = ", ".join(["allocate", *sorted(FOREIGN_ACTIONS)])
    config = tmp_path / "volcano.yaml"
    config.write_text(f'actions: "{actions}"\ntiers:\n- plugins:\n  - name: gang\n{plugins}')
    code, _, err = simulate(config)
    assert code == 0, err
    assert [line for line in err.splitlines() if "does not implement" in line], err


def test_a_name_far_from_every_tide_name_is_a_warning_as_before(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(BASE.format(actions="allocate", plugin="my-own-plugin") + "colour: blue\n")
    code, _, err = simulate(config)
    assert code == 0, err
    assert "my-own-plugin" in err and "unknown top-level configuration keys ignored: colour" in err


def test_a_recorded_configuration_loads_as_it_was() -> None:
    raw = {"actions": "allocate, shufle", "tiers": [{"plugins": [{"name": "tmd"}]}]}
    policy = load_policy(raw)  # a log's config.applied: history, not a person's typo now
    assert policy.config.actions == ("allocate",)
    assert any("shufle" in w and "tmd" in w for w in policy.warnings)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("tdm", "tdm", 0),
        ("tmd", "tdm", 1),  # a transposition costs one (Levenshtein alone says 2)
        ("shufle", "shuffle", 1),
        ("timezne", "timezone", 1),
        ("ca", "abc", 3),  # optimal string alignment: no edit of a transposed pair
        ("pdb", "tdm", 2),
        ("", "gang", 4),
        ("kitten", "sitting", 3),
    ],
)
def test_distance(a: str, b: str, expected: int) -> None:
    assert distance(a, b) == expected == distance(b, a)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("tmd", "tdm"),
        ("tdm", None),  # itself
        ("pdb", None),  # a Volcano plugin, and 2 edits from tdm (a short name allows 1)
        ("cdp", None),
        ("drf", None),
        ("sla", None),
        ("binpack", None),
        ("gangs", "gang"),
        ("priorty", "priority"),
        ("predicate", "predicates"),
        ("proportoin", "proportion"),
        ("resheduling", "rescheduling"),
        ("usgae", "usage"),
    ],
)
def test_near_miss_of_a_plugin(name: str, expected: str | None) -> None:
    assert near_miss(name, BUILTIN_PLUGINS, foreign=FOREIGN_PLUGINS) == expected


def test_no_foreign_name_is_one_tide_implements() -> None:
    assert not FOREIGN_PLUGINS & set(BUILTIN_PLUGINS)
    assert not FOREIGN_ACTIONS & set(BUILTIN_ACTIONS)
