"""`tide replay LOG --config OTHER --resimulate`: the log's inputs re-run under another
configuration, so triggers only the new configuration has fire."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from controller.cli import app
from replay.resimulate import is_input, select_inputs
from streams.events import Event
from streams.recording import read_recording

GOLDEN = Path(__file__).resolve().parent / "golden"
DEMO_CONFIG = Path(__file__).resolve().parents[2] / "controller/simulate/data/demo-config.yaml"


def _events(name: str) -> list[Event]:
    return [e for e in read_recording(GOLDEN / f"{name}.jsonl") if isinstance(e, Event)]


def _resimulate(log: Path, config: Path) -> dict[str, object]:
    args = ["replay", str(log), "--config", str(config), "--resimulate", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    found: dict[str, object] = json.loads(result.stdout)
    return found


def test_inputs_are_uncaused_watch_and_metric_records() -> None:
    events = _events("pressure-graceful")
    inputs = select_inputs(events)
    assert inputs and all(e.cause is None and e.offset == -1 for e in inputs)
    assert {e.type for e in inputs} == {"k8s.watch", "metrics.node"}
    caused_watch = [e for e in events if e.type == "k8s.watch" and e.cause is not None]
    assert caused_watch and not any(is_input(e) for e in caused_watch)


# pressure-graceful was written at behaviour level 1 (its untaints come 10 s later than
# level 2 now decides); ownership is a level-2 log with pressure and TDM decisions
@pytest.mark.parametrize("name", ["tdm-budgets", "ownership", "allocate-gang"])
def test_same_configuration_resimulates_the_same_decisions(name: str) -> None:
    summary = _resimulate(GOLDEN / f"{name}.jsonl", GOLDEN / "sources" / f"{name}.yaml")
    assert summary["before"] == summary["after"] and summary["before"]
    assert (summary["real_differences"], summary["evidence_only"]) == (0, 0)


@pytest.mark.parametrize(
    ("window", "end"), [("06:00-18:00", "18"), ("10:00-22:00", "22")], ids=["-2h", "+2h"]
)
def test_moving_the_demo_day_window_moves_its_evictions(
    window: str, end: str, tmp_path: Path
) -> None:
    config = tmp_path / "moved.yaml"
    text = DEMO_CONFIG.read_text()
    assert "08:00-20:00" in text
    config.write_text(text.replace("08:00-20:00", window))
    summary = _resimulate(GOLDEN / "demo.jsonl", config)

    def day_zone_evictions(side: str) -> set[str]:
        rows = summary[side]
        assert isinstance(rows, list)
        return {
            r["at"][11:13]
            for r in rows
            if r["kind"] == "evict"
            and r["reason"] == "tdm-window-closed"
            and r["node"].startswith("shared-")
        }

    assert day_zone_evictions("only_before") == {"20"}
    assert day_zone_evictions("only_after") == {end}


def test_resimulate_needs_a_configuration() -> None:
    result = CliRunner().invoke(app, ["replay", str(GOLDEN / "demo.jsonl"), "--resimulate"])
    assert result.exit_code != 0 and "--resimulate needs --config" in result.output


@pytest.mark.parametrize(
    ("extra", "label", "rows"),
    [
        (["--against", str(GOLDEN / "tdm-budgets-altered.jsonl")], "tdm-budgets-altered", 2),
        (["--config", str(GOLDEN / "sources" / "tdm-budgets.yaml")], "replayed under", 0),
        (
            ["--config", str(GOLDEN / "sources" / "tdm-budgets.yaml"), "--resimulate"],
            "re-simulated under",
            0,
        ),
    ],
    ids=["second-log", "config-replayed", "config-resimulated"],
)
def test_report_has_a_whatif_view(extra: list[str], label: str, rows: int, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    args = ["report", str(GOLDEN / "tdm-budgets.jsonl"), "--out", str(out), *extra]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "<h2>What if: " in page and label in page
    assert page.count("class='whatif-row") == rows
    assert page.count("whatif-before") >= 1 and page.count("whatif-after") >= 1
    assert f"what-if: {rows} real difference(s)" in result.stdout


def test_report_without_whatif_options_has_no_whatif_view(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = CliRunner().invoke(
        app, ["report", str(GOLDEN / "tdm-budgets.jsonl"), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "What if" not in out.read_text()
