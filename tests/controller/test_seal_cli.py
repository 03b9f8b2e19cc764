"""A cut tail on an exported recording, at the command line: `tide log verify` and
`tide replay --verify` name the offset the tail was cut after; an intact export verifies
complete and the golden logs (no chain, no seal) still verify."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app
from streams import codec

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "replay" / "golden"
SCENARIO = GOLDEN / "sources" / "tdm-budgets.yaml"


def invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A simulated log (written by a writer that ended cleanly), exported."""
    work = tmp_path_factory.mktemp("sealed")
    db, out = work / "run.db", work / "run.jsonl"
    inputs = [str(SCENARIO), "-c", str(SCENARIO), "--decisions", os.devnull]
    code, text = invoke(["simulate", *inputs, "--log", str(db)])
    assert code == 0, text
    code, text = invoke(["log", "export", "--log", str(db), "--out", str(out)])
    assert code == 0, text
    return out


def test_the_export_ends_in_its_seal_and_verifies_complete(export: Path) -> None:
    last = codec.decode(export.read_bytes().splitlines()[-1])
    assert last.type == "log.sealed"
    code, out = invoke(["log", "verify", str(export)])
    assert code == 0 and "chain intact" in out and "complete" in out, out
    code, out = invoke(["replay", str(export), "--verify"])
    assert code == 0 and "identical" in out, out


@pytest.mark.parametrize("cut", [1, 2, 25], ids=lambda c: f"cut-{c}")
def test_a_cut_export_names_the_offset_it_was_cut_after(
    export: Path, tmp_path: Path, cut: int
) -> None:
    lines = export.read_bytes().splitlines(keepends=True)
    cut_file = tmp_path / "cut.jsonl"
    cut_file.write_bytes(b"".join(lines[:-cut]))
    expected = f"not sealed: the tail after offset {len(lines) - cut - 1} was cut"
    code, out = invoke(["log", "verify", str(cut_file)])
    assert code == 1 and expected in out, out
    code, out = invoke(["replay", str(cut_file), "--verify"])
    assert code == 1 and expected in out, out
    # the summary says what the difference is: the chain, not a decision
    assert out.splitlines()[-1].endswith("1 difference(s): 1 chain broken or not sealed"), out


def test_an_import_of_a_cut_export_stays_cut(export: Path, tmp_path: Path) -> None:
    lines = export.read_bytes().splitlines(keepends=True)
    cut_file, db = tmp_path / "cut.jsonl", tmp_path / "cut.db"
    cut_file.write_bytes(b"".join(lines[:-3]))
    assert invoke(["log", "import", str(cut_file), "--log", str(db)])[0] == 0
    code, out = invoke(["log", "verify", str(db)])
    assert code == 1 and f"tail after offset {len(lines) - 4} was cut" in out, out


@pytest.mark.parametrize("name", ["demo", "tdm-budgets"])
def test_golden_logs_carry_no_seal_and_still_verify(name: str) -> None:
    code, out = invoke(["log", "verify", str(GOLDEN / f"{name}.jsonl")])
    assert code == 0 and "no chain to check" in out, out
