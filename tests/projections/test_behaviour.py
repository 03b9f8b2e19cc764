"""The named behaviour changes: docs/BEHAVIOUR.md is the registry's table, every change is
read by a gate and names golden logs that exist, and no check compares a bare level."""

from __future__ import annotations

import io
import re
import sys
import tokenize
from pathlib import Path

import pytest

from controller.policy.framework.config import CURRENT_BEHAVIOUR, LEGACY_BEHAVIOUR
from projections import behaviour
from projections.behaviour import CHANGES, CURRENT, LEGACY, Change, active
from projections.ownership import Rules, rules_of
from tests.architecture.test_references import dead_references

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "BEHAVIOUR.md"
GOLDEN = ROOT / "tests" / "replay" / "golden"
PACKAGES = ("streams", "projections", "controller", "replay")
#: a behaviour level compared with a literal number, or a spec's ``since`` given as one
BARE = re.compile(r"behaviour\s*(?:>=|<=|<|>|==|!=)\s*\d|\bsince\s*=\s*\d|_LEVEL\s*=\s*\d")


def _constant(change: Change) -> str:
    return change.name.upper().replace("-", "_")


def _sources() -> dict[Path, str]:
    return {
        path: path.read_text(encoding="utf-8")
        for name in PACKAGES
        for path in sorted((ROOT / name).rglob("*.py"))
    }


def test_the_doc_table_is_generated_from_the_registry() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import behaviour_table

    doc = DOC.read_text()
    assert behaviour_table.updated(doc) == doc, "run scripts/behaviour_table.py"
    for change in CHANGES:
        assert f"| `{change.name}` (`{_constant(change)}`) | {change.level} |" in doc


def test_the_doc_names_only_what_exists() -> None:
    assert dead_references(DOC.read_text()) == []
    assert "[docs/BEHAVIOUR.md](BEHAVIOUR.md)" in (ROOT / "docs" / "ARCHITECTURE.md").read_text()


def test_changes_are_named_once_in_level_order_from_level_2_to_current() -> None:
    names = [change.name for change in CHANGES]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-z]+(?:-[a-z0-9]+)*", name) for name in names)
    levels = [change.level for change in CHANGES]
    assert levels == sorted(levels)
    # every level after the first stands for at least one change, and no level is skipped
    assert sorted(set(levels)) == list(range(LEGACY + 1, CURRENT + 1))
    assert (CURRENT, LEGACY) == (CURRENT_BEHAVIOUR, LEGACY_BEHAVIOUR) == (4, 1)


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.name)
def test_each_change_has_its_constant_its_texts_and_existing_golden_logs(change: Change) -> None:
    assert getattr(behaviour, _constant(change)) is change
    assert all((change.summary, change.why, change.golden, change.retire))
    for log in re.findall(r"`([\w.-]+\.jsonl)`", change.golden + change.retire):
        assert (GOLDEN / log).is_file(), log
    for test in re.findall(r"`(tests/[\w/.-]+\.py)`", change.golden):
        assert (ROOT / test).is_file(), test


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.name)
def test_each_change_is_read_by_a_gate(change: Change) -> None:
    """A change nothing reads any more has been retired: delete it from the registry."""
    readers = [
        path
        for path, text in _sources().items()
        if path.name != "behaviour.py" and re.search(rf"\b{_constant(change)}\b", text)
    ]
    assert readers, f"no module reads {_constant(change)}"


def _code_lines(text: str) -> dict[int, str]:
    """Each line's code tokens, comments and strings (docstrings) left out."""
    lines: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in (tokenize.COMMENT, tokenize.STRING):
            lines[token.start[0]] = f"{lines.get(token.start[0], '')} {token.string}"
    return lines


def test_no_check_compares_a_bare_behaviour_level() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path, text in _sources().items()
        for number, line in _code_lines(text).items()
        if BARE.search(line)
    ]
    assert found == []


@pytest.mark.parametrize(
    "line",
    ["if rules.behaviour >= 2:", "if self.rules.behaviour < 2:", "spec(since=2)", "SEEN_LEVEL = 3"],
)
def test_the_bare_level_check_finds_the_old_gates(line: str) -> None:
    assert any(BARE.search(code) for code in _code_lines(line + "\n").values())


@pytest.mark.parametrize(
    ("level", "holds"),
    [
        (1, set()),
        (2, {c.name for c in CHANGES if c.level == 2}),
        (3, {c.name for c in CHANGES if c.level <= 3}),
        (4, {c.name for c in CHANGES}),
    ],
)
def test_a_level_holds_exactly_the_changes_up_to_it(level: int, holds: set[str]) -> None:
    assert {c.name for c in CHANGES if active(level, c)} == holds
    assert {c.name for c in CHANGES if Rules(behaviour=level).has(c)} == holds


@pytest.mark.parametrize("stamp", [None, 1, True, "2", 0])
def test_a_record_below_the_rules_that_read_the_configuration_folds_as_legacy(
    stamp: object,
) -> None:
    payload: dict[str, object] = {"config": {"schedulerName": "x", "preemptableByDefault": True}}
    if stamp is not None:
        payload["behaviour"] = stamp
    assert rules_of(payload) == Rules()


def test_a_level_2_record_reads_the_configuration() -> None:
    payload = {"behaviour": 2, "config": {"schedulerName": ["a", "b"]}}
    assert rules_of(payload) == Rules(2, ("a", "b"), False)
