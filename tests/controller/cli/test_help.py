"""Every command's ``--help`` reads as plain text (issue 29): no reStructuredText from the
docstrings (double backticks, ``:class:`` roles) and no ``<bool>`` metavar on a flag."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from controller.cli import app
from controller.cli.common import plain

#: what must never show: a literal, a role, a type shown for a flag
RAW = re.compile(r"``|:[a-z]+(?::[a-z]+)?:`|<bool>|BOOLEAN")


def commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of ``command`` and of every command under it (typer's own click or not),
    looked up as click does, so that the commands loaded when asked for are found too."""
    yield path
    if not hasattr(command, "list_commands"):
        return
    context = typer.Context(command)
    for name in sorted(command.list_commands(context)):
        yield from commands(command.get_command(context, name), (*path, name))


EVERY = list(commands(typer.main.get_command(app)))


def test_the_walk_finds_every_command() -> None:
    names = {" ".join(path) for path in EVERY}
    assert {"", "state", "audit", "audit decisions", "log quarantine", "run", "record"} <= names
    assert len(EVERY) >= 20


@pytest.mark.parametrize("path", EVERY, ids=lambda path: " ".join(path) or "tide")
def test_help_is_plain_text(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage: ")
    bad = [line for line in result.output.splitlines() if RAW.search(line)]
    assert bad == [], "\n".join(bad)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("with ``--against`` or ``--config``", "with --against or --config"),
        (":class:`~replay.verify.ReplayReport` of it", "ReplayReport of it"),
        ("see :func:`controller.cli.common.fail`", "see controller.cli.common.fail"),
        (":py:meth:`~a.B.c`", "c"),
        ("`tide demo` stays", "`tide demo` stays"),
    ],
)
def test_plain(text: str, expected: str) -> None:
    assert plain(text) == expected
