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


#: where an exit code is given in the code: ``Exit(1)``, ``code=2``, ``SystemExit(130)``,
#: and the names of ``controller.cli.common``'s ``EXIT_*`` constants
_EXITS = re.compile(r"(?:Exit|SystemExit)\((\w+)\)|\bcode=(\w+)")


def _exit_table() -> str:
    """The "Exit codes" table: in the README, or in the docs/ file it moved to."""
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        if "### Exit codes" in text:
            return text.split("### Exit codes", 1)[1].split("\n#", 1)[0]
    raise AssertionError("no '### Exit codes' section in README.md or docs/")


def codes_in_the_code() -> dict[int, list[str]]:
    """Every exit code the command line can end with, and where it is given."""
    from controller.cli import common

    constants = {
        name: value
        for name, value in vars(common).items()
        if name.startswith("EXIT_") and isinstance(value, int)
    }
    found: dict[int, list[str]] = {}
    for path in sorted((ROOT / "controller").rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in _EXITS.finditer(line):
                token = match.group(1) or match.group(2)
                code = int(token) if token.isdigit() else constants.get(token)
                if code is not None:
                    where = f"{path.relative_to(ROOT)}:{number}"
                    found.setdefault(code, []).append(where)
    for name, code in constants.items():
        found.setdefault(code, []).append(f"controller/cli/common.py {name}")
    return found


def test_every_exit_code_the_code_uses_is_in_the_table() -> None:
    rows = re.findall(r"^\| (\d+) \| (.*) \|$", _exit_table(), re.M)
    table = {int(code): meaning for code, meaning in rows}
    used = codes_in_the_code()
    assert {0, 1, 2, 3, 130, 141} <= set(used)  # the scan finds what it must
    missing = {code: where for code, where in sorted(used.items()) if code not in table}
    assert not missing, f"exit codes used but not in the README's table: {missing}"
    assert set(table) <= set(used) | {0}, "the table lists a code nothing uses"
    assert "audit why" in table[1]


def test_the_scan_would_catch_an_unlisted_code() -> None:
    line = "        raise typer.Exit(4)  # a new code"
    assert [m.group(1) for m in _EXITS.finditer(line)] == ["4"]
    assert [m.group(2) for m in _EXITS.finditer("fail(msg, code=EXIT_USAGE)")] == ["EXIT_USAGE"]
