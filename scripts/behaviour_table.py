"""Regenerate the table of docs/BEHAVIOUR.md from the registry of behaviour changes.

Run: .venv/bin/python scripts/behaviour_table.py  (tests/projections/test_behaviour.py checks
it is current). The rows are ``projections.behaviour.CHANGES``, in order.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from projections.behaviour import CHANGES, Change  # noqa: E402

DOC = ROOT / "docs" / "BEHAVIOUR.md"
BEGIN = (
    "<!-- behaviour-changes: generated from projections.behaviour.CHANGES by "
    "scripts/behaviour_table.py; a test keeps them equal -->"
)
END = "<!-- /behaviour-changes -->"
COLUMNS = (
    "name",
    "level",
    "what changed",
    "why",
    "golden log holding the old behaviour",
    "retiring it",
)


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def row(change: Change) -> str:
    """One table row: the change's name (and constant), level and texts."""
    constant = change.name.upper().replace("-", "_")
    cells = (
        f"`{change.name}` (`{constant}`)",
        str(change.level),
        change.summary,
        change.why,
        change.golden,
        change.retire,
    )
    return f"| {' | '.join(_cell(cell) for cell in cells)} |"


def render(changes: tuple[Change, ...] = CHANGES) -> str:
    """The markdown table of ``changes``."""
    lines = [f"| {' | '.join(COLUMNS)} |", "|" + "---|" * len(COLUMNS)]
    lines += [row(change) for change in changes]
    return "\n".join(lines)


def updated(doc: str) -> str:
    """``doc`` with the text between the markers replaced by the current table."""
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{render()}\n{END}{tail}"


if __name__ == "__main__":
    DOC.write_text(updated(DOC.read_text()))
