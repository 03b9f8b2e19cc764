"""The layer contracts of pyproject.toml hold (import-linter), so a layering break fails
the tests as well as CI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.fail("lint-imports is not installed (install the dev extra)")
    result = subprocess.run([exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


#: third-party (and standard-library) clients, and the only places that may import them
ADAPTERS: dict[str, tuple[str, ...]] = {
    "kubernetes_asyncio": ("controller/drive/kube/",),
    "kubernetes": ("controller/drive/kube/",),
    "aiokafka": ("streams/backends/kafka",),  # kafka.py and its kafka_*.py modules
    # sqlite.py (the log) and sqlite_checkpoints.py (the checkpoint store)
    "aiosqlite": ("streams/backends/sqlite",),
    "sqlite3": ("streams/backends/sqlite",),
}


def imported_roots(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports."""
    import ast

    roots: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_clients_are_imported_only_by_their_adapters() -> None:
    """What import-linter cannot see (standard-library modules, packages that do not exist
    yet): each client is imported only in its one adapter."""
    misplaced = sorted(
        f"{path.relative_to(ROOT)} imports {root}"
        for package in ("streams", "projections", "controller", "replay")
        for path in (ROOT / package).rglob("*.py")
        for root in imported_roots(path) & set(ADAPTERS)
        if not str(path.relative_to(ROOT)).startswith(ADAPTERS[root])
    )
    assert misplaced == []


def test_the_adapter_scan_sees_imports(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import sqlite3\nfrom aiokafka import AIOKafkaProducer\nfrom . import x\n")
    assert imported_roots(module) == {"sqlite3", "aiokafka"}
