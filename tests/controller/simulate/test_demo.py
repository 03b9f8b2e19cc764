"""`tide demo` runs the built-in day, keeps a log that replays identically, and covers
TDM windows (including across midnight) and the pressure incident."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app
from controller.cli.common import read_log_events
from replay.verify import replay


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    db = tmp_path_factory.mktemp("demo") / "tide-demo.db"
    result = CliRunner().invoke(app, ["demo", "--db", str(db)])
    assert result.exit_code == 0, result.output
    return result.output, db


def test_demo_prints_a_timeline_summary_and_next_commands(demo_run: tuple[str, Path]) -> None:
    output, db = demo_run
    assert "summary:" in output
    assert "tide audit why" in output
    assert f"tide replay {db} --verify" in output
    assert db.exists()


def test_demo_log_replays_identically(demo_run: tuple[str, Path]) -> None:
    _, db = demo_run
    report = replay(read_log_events(str(db)))
    assert report.ok, [d.describe() for d in report.differences]
    assert report.decisions > 0


def test_demo_covers_windows_and_pressure(demo_run: tuple[str, Path]) -> None:
    _, db = demo_run
    events = read_log_events(str(db))
    reasons = Counter(e.data["reason"] for e in events if e.type.startswith("decision."))
    assert reasons["allocate"] > 0
    assert reasons["tdm-window-closed"] > 0
    assert reasons["cpu-pressure"] > 0
    assert reasons["faulty-memory-leak"] > 0
    # The night zone's window runs across midnight: nothing is evicted from it at 00:00,
    # only once it closes at 04:00.
    night = [
        e
        for e in events
        if e.type == "decision.evict" and (e.data.get("evidence") or {}).get("zone") == "night"
    ]
    assert night and all(e.at.hour == 4 for e in night)
