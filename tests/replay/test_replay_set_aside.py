"""`tide replay X.jsonl` names the lines it sets aside, as `tide log import` does.

Issue 29: replaying a recording with a bad line said "1 line(s) set aside, not read"
without a summary saying which lines, in the form ``tide log import`` names them: the
count first, then ``file:line: reason`` under it, the first 20 and how many more.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app

GOLDEN = Path(__file__).resolve().parent / "golden" / "allocate-gang.jsonl"


def _with_bad_lines(tmp_path: Path, count: int) -> tuple[Path, list[int]]:
    """The golden recording with ``count`` lines lacking ``at`` after its fifth line."""
    lines = GOLDEN.read_text().splitlines()
    bad = ['{"type": "k8s.watch", "data": {}}'] * count
    path = tmp_path / "x.jsonl"
    path.write_text("\n".join([*lines[:5], *bad, *lines[5:]]) + "\n")
    return path, list(range(6, 6 + count))


@pytest.mark.parametrize("command", [["replay"], ["replay", "--verify"], ["audit", "summary"]])
def test_a_recording_read_whole_names_its_set_aside_lines(
    command: list[str], tmp_path: Path
) -> None:
    path, numbers = _with_bad_lines(tmp_path, 2)
    args = [*command, str(path)] if command[0] == "replay" else [*command, "--log", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    said = result.stderr.splitlines()
    assert said[0] == f"{path}: 2 line(s) set aside, not read:"
    assert said[1:] == [f"  {path}:{n}: missing 'at'" for n in numbers]


def test_many_set_aside_lines_are_named_up_to_twenty(tmp_path: Path) -> None:
    path, numbers = _with_bad_lines(tmp_path, 23)
    result = CliRunner().invoke(app, ["replay", str(path)])
    said = result.stderr.splitlines()
    assert said[0] == f"{path}: 23 line(s) set aside, not read:"
    assert said[1:21] == [f"  {path}:{n}: missing 'at'" for n in numbers[:20]]
    assert said[21:] == ["  ... and 3 more"]
