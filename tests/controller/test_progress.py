"""Progress on stderr: only on a terminal, only for large jobs, cleared when done."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app, progress
from controller.cli.progress import Progress, tracked

GOLDEN = Path(__file__).resolve().parents[1] / "replay" / "golden"


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "size", "shown"),
    [(FakeTTY(), 100, True), (io.StringIO(), 100, False), (FakeTTY(), 5, False)],
    ids=["terminal", "pipe", "small-job"],
)
def test_progress_only_on_a_terminal_for_large_jobs(
    stream: io.StringIO, size: int, shown: bool
) -> None:
    with Progress("replay", 200, size=size, stream=stream, minimum=50) as bar:
        bar.update(100)
        bar.update(101)  # same whole percent: not written again
    text = stream.getvalue()
    if shown:
        assert text.count("\rreplay:  50 %") == 1
        assert text.endswith("\r")  # the line is cleared at the end
    else:
        assert text == ""


def test_tracked_yields_everything_and_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "LARGE", 10)
    stream = FakeTTY()
    items = list(range(3000))
    assert list(tracked(items, "report", stream=stream)) == items
    assert "\rreport:  34 %" in stream.getvalue()


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "pipe"])
def test_replay_shows_progress_only_on_a_terminal(
    tty: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "LARGE", 10)
    monkeypatch.setattr(progress, "_is_tty", lambda stream: tty)
    result = CliRunner().invoke(app, ["replay", str(GOLDEN / "demo.jsonl")])
    assert result.exit_code == 0, result.output
    assert ("replay:   0 %" in result.stderr) is tty
    assert "%" not in result.stdout
