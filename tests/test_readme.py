"""The README stays true to the code: its TDM differences table is the code's, its
quick start is two commands, and every CLI command it lists exists."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from typer.testing import CliRunner

from controller.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_tdm_differences_table_is_generated_from_the_code() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import readme_tables

    assert readme_tables.updated(README) == README, "run scripts/readme_tables.py"


def test_quick_start_is_exactly_two_commands() -> None:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert commands[0].endswith("tide demo")
    assert commands[1] == "./scripts/test"
    assert "./scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_every_command_in_the_table_has_help() -> None:
    table = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
    names = sorted(set(re.findall(r"^\| `tide ([a-z]+(?: [a-z]+)?)", table, re.M)))
    assert names
    runner = CliRunner()
    for name in names:
        words = name.split()
        args = words[:2] if words[0] in ("log", "audit") else words[:1]
        result = runner.invoke(app, [*args, "--help"])
        assert result.exit_code == 0, (name, result.output)
