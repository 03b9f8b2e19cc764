"""Regenerate the README's differences tables (TDM, preempt) from the code that
implements them.

Run: .venv/bin/python scripts/readme_tables.py  (tests/test_readme.py checks it is current)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.actions.preempt.differences import (  # noqa: E402
    DIFFERENCES as PREEMPT_DIFFERENCES,
)
from controller.plugins.tdm import DIFFERENCES  # noqa: E402

BEGIN = (
    "<!-- tdm-differences: generated from controller.plugins.tdm.DIFFERENCES;"
    " a test keeps them equal -->"
)
END = "<!-- /tdm-differences -->"


PREEMPT_BEGIN = (
    "<!-- preempt-differences: generated from"
    " controller.actions.preempt.differences.DIFFERENCES; a test keeps them equal -->"
)
PREEMPT_END = "<!-- /preempt-differences -->"


def render(table: tuple[tuple[str, ...], ...] = DIFFERENCES) -> str:
    rows = ["| topic | Volcano | tide | why |", "|---|---|---|---|"]
    rows += [f"| {' | '.join(cell.replace('|', '/') for cell in row)} |" for row in table]
    return "\n".join(rows)


def _replace(readme: str, begin: str, end: str, body: str) -> str:
    head, rest = readme.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def updated(readme: str) -> str:
    out = _replace(readme, BEGIN, END, render())
    return _replace(out, PREEMPT_BEGIN, PREEMPT_END, render(PREEMPT_DIFFERENCES))


if __name__ == "__main__":
    path = ROOT / "README.md"
    path.write_text(updated(path.read_text()))
