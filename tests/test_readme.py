"""The README and the docs stay true to the code and to each other: the differences
tables are the code's, the quick start is two commands, every CLI command the command
table lists exists, every docs file has a contents list whose entries are its headings,
and every relative link in them leads to a file (and heading) that exists."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"
#: the documents a reader reaches from the README (the reference moved out of it)
PAGES = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md", *DOCS.glob("*.md")])
#: a markdown link ``[text](target)``, not an image's URL with a scheme
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_differences_tables_are_generated_from_the_code() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    import readme_tables

    text = (DOCS / "differences.md").read_text()
    assert readme_tables.updated(text) == text, "run scripts/readme_tables.py"


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
    text = (DOCS / "commands.md").read_text()
    table = text.split("## Commands", 1)[1].split("\n## ", 1)[0]
    names = sorted(set(re.findall(r"^\| `tide ([a-z]+(?: [a-z]+)?)", table, re.M)))
    assert len(names) >= 10
    runner = CliRunner()
    for name in names:
        words = name.split()
        args = words[:2] if words[0] in ("log", "audit") else words[:1]
        result = runner.invoke(app, [*args, "--help"])
        assert result.exit_code == 0, (name, result.output)


def anchor(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def headings(text: str) -> list[tuple[int, str]]:
    """``(level, title)`` of every heading outside fenced code blocks."""
    prose = re.sub(r"(?ms)^```.*?^```", "", text)
    return [(len(marks), title) for marks, title in re.findall(r"(?m)^(#+) (.+)$", prose)]


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda page: page.name)
def test_every_docs_page_with_sections_has_a_contents_list_of_them(page: Path) -> None:
    text = page.read_text()
    sections = [(level, title) for level, title in headings(text) if level >= 2]
    if len(sections) < 3:
        return
    assert "**Contents**" in text, f"{page.name} has {len(sections)} sections and no contents"
    listed = re.findall(r"(?m)^\s*- \[(.+?)\]\(#([\w-]+)\)$", text.split("**Contents**", 1)[1])
    assert [target for _, target in listed] == [anchor(title) for _, title in sections]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        goal = (page.parent / path).resolve() if path else page
        assert goal.exists(), f"{page.name}: {target} leads nowhere"
        if fragment and goal.suffix == ".md":
            anchors = {anchor(title) for _, title in headings(goal.read_text())}
            assert fragment in anchors, f"{page.name}: {target}: no such heading"


def test_the_readme_is_a_page_that_links_every_docs_page() -> None:
    assert len(README.encode()) < 12_000, "the reference belongs in docs/"
    linked = {target.split("#")[0] for target in LINK.findall(README)}
    missing = [page.name for page in DOCS.glob("*.md") if f"docs/{page.name}" not in linked]
    assert not missing, f"the README links no {missing}"


#: where an exit code is given in the code: ``Exit(1)``, ``code=2``, ``SystemExit(130)``,
#: and the names of ``controller.cli.common``'s ``EXIT_*`` constants
_EXITS = re.compile(r"(?:Exit|SystemExit)\((\w+)\)|\bcode=(\w+)")


def _exit_table() -> str:
    """The "Exit codes" table of docs/commands.md."""
    text = (DOCS / "commands.md").read_text()
    assert "## Exit codes" in text, "docs/commands.md has no 'Exit codes' section"
    return text.split("## Exit codes", 1)[1].split("\n#", 1)[0]


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
    assert not missing, f"exit codes used but not in docs/commands.md's table: {missing}"
    assert set(table) <= set(used) | {0}, "the table lists a code nothing uses"
    assert "audit why" in table[1]


def test_the_scan_would_catch_an_unlisted_code() -> None:
    line = "        raise typer.Exit(4)  # a new code"
    assert [m.group(1) for m in _EXITS.finditer(line)] == ["4"]
    assert [m.group(2) for m in _EXITS.finditer("fail(msg, code=EXIT_USAGE)")] == ["EXIT_USAGE"]
