"""The demo's hints run as printed after the quick start (issue 29): the quick start never
activates the virtual environment, so a hint says ``.venv/bin/tide …`` (this
installation's script) unless the ``tide`` on ``$PATH`` is this one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli.demo_cmd import tide_command

SCRIPT = Path(sys.executable).parent / "tide"
needs_script = pytest.mark.skipif(
    not SCRIPT.is_file(), reason="tide is not installed as a console script beside python"
)


def without_the_venv() -> dict[str, str]:
    """The environment of a shell after the quick start: the venv's bin is not on PATH."""
    bin_dir = str(SCRIPT.parent)
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != bin_dir]
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(path)
    return env


def printed_commands(output: str) -> list[str]:
    """The hint lines after "Try:" and the report's "writes it again" command."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith(". Try:"))
    hints = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        hints.append(line.strip())
    again = next(line for line in lines if line.endswith(" writes it again"))
    hints.append(again.split("decisions drawn; ", 1)[1].removesuffix(" writes it again"))
    return hints


@needs_script
def test_every_hint_runs_as_printed(tmp_path: Path) -> None:
    env = without_the_venv()
    if shutil.which("tide", path=env["PATH"]) is not None:
        pytest.skip("another tide is on PATH")
    demo = subprocess.run(
        [str(SCRIPT), "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert demo.returncode == 0, demo.stderr
    hints = printed_commands(demo.stdout)
    assert len(hints) == 7, demo.stdout
    for hint in hints:
        assert not hint.startswith("tide "), hint  # tide is not on this PATH
        assert hint.split()[0] == tide_command_for(tmp_path), hint
        done = subprocess.run(
            hint, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, (hint, done.stderr)
        assert done.stdout.strip(), hint
        assert "error:" not in done.stderr, (hint, done.stderr)


def tide_command_for(cwd: Path) -> str:
    try:
        return str(SCRIPT.relative_to(cwd))
    except ValueError:
        return str(SCRIPT)


@needs_script
def test_the_hint_is_relative_where_the_quick_start_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    where = SCRIPT.parent.parent.parent  # the directory holding .venv
    monkeypatch.chdir(where)
    monkeypatch.setenv("PATH", without_the_venv()["PATH"])
    if shutil.which("tide") is not None:
        pytest.skip("another tide is on PATH")
    assert tide_command() == str(SCRIPT.relative_to(where))  # .venv/bin/tide
    assert tide_command().endswith("bin/tide") and not tide_command().startswith("/")


@needs_script
def test_the_hint_is_tide_when_this_tide_is_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{SCRIPT.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    assert tide_command() == "tide"
