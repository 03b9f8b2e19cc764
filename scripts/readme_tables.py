"""Regenerate the README's TDM differences table from the code that implements them.

Run: .venv/bin/python scripts/readme_tables.py  (tests/test_readme.py checks it is current)
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.plugins.tdm import DIFFERENCES  # noqa: E402

BEGIN = (
    "<!-- tdm-differences: generated from controller.plugins.tdm.DIFFERENCES;"
    " a test keeps them equal -->"
)
END = "<!-- /tdm-differences -->"


def render() -> str:
    rows = ["| topic | Volcano | tide | why |", "|---|---|---|---|"]
    rows += [f"| {' | '.join(cell.replace('|', '/') for cell in row)} |" for row in DIFFERENCES]
    return "\n".join(rows)


def updated(readme: str) -> str:
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{render()}\n{END}{tail}"


if __name__ == "__main__":
    path = ROOT / "README.md"
    path.write_text(updated(path.read_text()))
