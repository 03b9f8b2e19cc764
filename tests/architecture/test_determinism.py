"""Policy code never reads the wall clock, never draws unseeded randomness, never makes
uuids, and keeps no mutable module globals: an AST scan of the pure core."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PURE = [
    "streams/events.py",
    "streams/codec.py",
    "projections",
    "controller/policy",
    "controller/drive/effector/simulated.py",
    "controller/drive/effector/simulated_objects.py",
    "controller/drive/effector/apiserver.py",
    "controller/drive/loop/virtual.py",
    "controller/simulate",
    "replay",
]
#: the one module allowed to read the wall clock
CLOCK = "controller/drive/clock.py"
PACKAGES = ("streams", "projections", "controller", "replay")
FORBIDDEN_CALLS = {
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("time", "time"),
    ("time", "monotonic"),
    ("time", "perf_counter"),
    ("uuid", "uuid1"),
    ("uuid", "uuid4"),
}
FORBIDDEN_MODULES = {"random", "secrets", "uuid"}


def python_files() -> list[Path]:
    files: list[Path] = []
    for entry in PURE:
        path = ROOT / entry
        assert path.exists(), f"PURE names {entry}, which does not exist"
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files.extend(sorted(path.rglob("*.py")))
    return files


def attribute_chain(node: ast.AST) -> tuple[str, ...]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return tuple(reversed(parts))


def problems_in(path: Path) -> list[str]:
    """Forbidden imports and calls in one file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    problems: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FORBIDDEN_MODULES:
                    problems.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in FORBIDDEN_MODULES:
                problems.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Call):
            chain = attribute_chain(node.func)
            if len(chain) >= 2 and chain[-2:] in FORBIDDEN_CALLS:
                problems.append(f"line {node.lineno}: {'.'.join(chain)}()")
    return problems


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_clock_no_randomness(path: Path) -> None:
    problems = problems_in(path)
    assert not problems, f"{path.relative_to(ROOT)}: " + "; ".join(problems)


def test_the_wall_clock_is_read_only_by_the_clock_module() -> None:
    readers = {
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if any("datetime.now()" in p or "time.time()" in p for p in problems_in(path))
    }
    assert readers == {CLOCK}


def test_the_scan_finds_what_it_forbids(tmp_path: Path) -> None:
    bad = "import random\nfrom datetime import datetime\nx = datetime.now()\n"
    tree = ast.parse(bad)
    calls = [attribute_chain(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert ("datetime", "now") in calls
