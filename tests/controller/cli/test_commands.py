"""The commands' small contracts (issue 29, "Every command"): ``tide state LOG`` takes the
log as ``replay`` and ``report`` do, ``audit why`` of an unknown pod says so on stderr,
``log quarantine`` says when nothing was set aside, ``audit series`` and ``audit
decisions`` have two formats each."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app
from streams.backends import open_log
from streams.recording import import_recording

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "replay" / "golden" / "demo-v5.jsonl"

runner = CliRunner()


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tide log of the demo (decisions of every kind, a node's samples)."""
    path = tmp_path_factory.mktemp("log") / "demo.db"

    async def make() -> None:
        async with await open_log(str(path)) as opened:
            await import_recording(GOLDEN, opened)

    asyncio.run(make())
    return path


def test_state_takes_the_log_as_an_argument_or_as_log(log: Path) -> None:
    positional = runner.invoke(app, ["state", str(log), "--json"])
    option = runner.invoke(app, ["state", "--log", str(log), "--json"])
    both = runner.invoke(app, ["state", str(log), "--log", str(log), "--json"])
    assert positional.exit_code == option.exit_code == both.exit_code == 0, positional.output
    assert json.loads(positional.stdout)["position"] > 0
    assert positional.stdout == option.stdout == both.stdout


def test_state_refuses_two_different_logs(log: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    result = runner.invoke(app, ["state", str(log), "--log", str(other)])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"error: LOG {log} and --log {other} name two logs: give one"
    ]
    assert not other.exists()


def test_audit_why_of_an_unknown_pod_says_so_on_stderr(log: Path) -> None:
    result = runner.invoke(app, ["audit", "why", "nobody/none", "--log", str(log)])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.strip() == "no decision about nobody/none"


def test_log_quarantine_says_when_nothing_was_set_aside(log: Path) -> None:
    result = runner.invoke(app, ["log", "quarantine", "--log", str(log)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "nothing was set aside"  # the same on every backend


@pytest.mark.parametrize(
    ("args", "form"),
    [
        ([], "csv"),
        (["--format", "csv"], "csv"),
        (["--csv"], "csv"),  # the old flag, kept for the scripts that pass it
        (["--format", "jsonl"], "jsonl"),
    ],
)
def test_audit_series_formats(log: Path, args: list[str], form: str) -> None:
    result = runner.invoke(app, ["audit", "series", "--node", "shared-0", "--log", str(log), *args])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    heading = ["time", "cpu_percent", "memory_percent", "cpu_cores", "memory_gib"]
    if form == "csv":
        assert lines[0].split(",") == heading
        assert len(lines[1].split(",")) == 5
    else:
        first = json.loads(lines[0])
        assert list(first) == heading
        assert isinstance(first["cpu_percent"], float)
        csv = runner.invoke(app, ["audit", "series", "--node", "shared-0", "--log", str(log)])
        assert len(lines) == len(csv.stdout.splitlines()) - 1  # the same samples, no heading


def test_audit_series_refuses_two_formats(log: Path) -> None:
    args = ["audit", "series", "--node", "shared-0", "--log", str(log), "--csv"]
    result = runner.invoke(app, [*args, "--format", "jsonl"])
    assert result.exit_code == 2
    assert "--csv and --format jsonl" in result.stderr


@pytest.mark.parametrize(
    ("args", "form"),
    [
        ([], "jsonl"),  # not a terminal (the runner's stdout): what scripts always got
        (["--format", "jsonl"], "jsonl"),
        (["--format", "table"], "table"),
    ],
)
def test_audit_decisions_formats(log: Path, args: list[str], form: str) -> None:
    base = ["audit", "decisions", "--log", str(log), "--kind", "taint"]
    result = runner.invoke(app, [*base, *args])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    if form == "jsonl":
        assert all(json.loads(line)["kind"] == "taint" for line in lines)
        return
    assert lines[0].split() == ["time", "kind", "reason", "node", "pod", "/", "taint"]
    assert lines[1].split() == [
        "2026-11-21T07:55:00Z",
        "taint",
        "eviction-taint",
        "online-2",
        "koordinator.sh/eviction:NoSchedule",
    ]
    jsonl = runner.invoke(app, [*base, "--format", "jsonl"])
    assert len(lines) == len(jsonl.stdout.splitlines()) + 1
    widths = {line.index("eviction-taint") for line in lines[1:]}
    assert len(widths) == 1  # aligned columns


def test_audit_decisions_table_of_pods(log: Path) -> None:
    args = ["audit", "decisions", "--log", str(log), "--kind", "evict", "--format", "table"]
    result = runner.invoke(app, args)
    row = result.stdout.splitlines()[1].split()
    assert row == [
        "2026-11-21T07:55:00Z",
        "evict",
        "faulty-memory-leak",
        "online-2",
        "shop/cache-0",
    ]


def test_audit_decisions_table_says_when_nothing_matches(log: Path) -> None:
    args = ["audit", "decisions", "--log", str(log), "--node", "nowhere", "--format", "table"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0
    assert result.stdout.split() == ["time", "kind", "reason", "node", "pod", "/", "taint"]
    assert result.stderr.strip() == "no decision matches"


def test_a_reader_that_goes_away_is_exit_141_and_no_error(log: Path) -> None:
    code = "from controller.cli import main; main()"
    args = ["audit", "series", "--node", "shared-0", "--log", str(log)]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("time,")  # `| head -1`
    proc.stdout.close()
    code_seen = proc.wait(timeout=120)
    said = proc.stderr.read()
    proc.stderr.close()
    assert code_seen == 141, said
    assert said == ""
