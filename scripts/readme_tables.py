"""Regenerate the differences tables of docs/differences.md from the code that implements them.

Run: .venv/bin/python scripts/readme_tables.py  (tests/test_readme.py checks it is current)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.policy.actions.preempt import differences as preempt  # noqa: E402
from controller.policy.plugins import rescheduling, tdm  # noqa: E402

#: marker name -> (module path shown in the marker, its DIFFERENCES rows)
TABLES: dict[str, tuple[str, tuple[tuple[str, str, str, str], ...]]] = {
    "tdm": ("controller.policy.plugins.tdm", tdm.DIFFERENCES),
    "preempt": ("controller.policy.actions.preempt.differences", preempt.DIFFERENCES),
    "rescheduling": ("controller.policy.plugins.rescheduling", rescheduling.DIFFERENCES),
}
DIFFERENCES = tdm.DIFFERENCES


def markers(name: str) -> tuple[str, str]:
    module = TABLES[name][0]
    begin = (
        f"<!-- {name}-differences: generated from {module}.DIFFERENCES; a test keeps them equal -->"
    )
    return begin, f"<!-- /{name}-differences -->"


BEGIN, END = markers("tdm")


def render(rows_in: tuple[tuple[str, str, str, str], ...] = DIFFERENCES) -> str:
    rows = ["| topic | Volcano | tide | why |", "|---|---|---|---|"]
    rows += [f"| {' | '.join(cell.replace('|', '/') for cell in row)} |" for row in rows_in]
    return "\n".join(rows)


def updated(readme: str) -> str:
    for name, (_, rows) in TABLES.items():
        begin, end = markers(name)
        head, rest = readme.split(begin, 1)
        _, tail = rest.split(end, 1)
        readme = f"{head}{begin}\n{render(rows)}\n{end}{tail}"
    return readme


if __name__ == "__main__":
    path = ROOT / "docs" / "differences.md"
    path.write_text(updated(path.read_text()))
