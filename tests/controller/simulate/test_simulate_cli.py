"""`tide simulate` on a JSON Lines recording and on a scenario, from the command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from typer.testing import CliRunner

from controller.cli import app
from controller.simulate.scenario import load_scenario
from streams.recording import write_recording

BOOT = "from controller.cli import main; main()"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_recording_with_a_bad_line_still_simulates_and_exits_1(tmp_path: Path) -> None:
    events, _, _ = load_scenario(EXAMPLES / "tdm-window-close.yaml")
    recording = tmp_path / "rec.jsonl"
    write_recording(events, recording)
    lines = recording.read_bytes().splitlines()
    lines.insert(
        1,
        b'{"at": "2026-11-21T20:58:00Z", "type": "k8s.watch", "data": {"resource": '
        b'"pods", "event": "ADDED", "object": {"metadata": {"namespace": "x"}}}}',
    )
    recording.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "decisions.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            str(recording),
            "--config",
            str(EXAMPLES / "tdm-config.yaml"),
            "--until",
            "2026-11-21T21:04:00Z",
            "--decisions",
            str(out),
            "--log",
            f"sqlite:///{tmp_path / 'sim.db'}",
        ],
    )
    assert result.exit_code == 1, result.output
    assert "rec.jsonl:2" in result.output
    decisions = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [d["reason"] for d in decisions] == ["tdm-window-closed"] * 3
    assert [d["at"] for d in decisions] == [
        "2026-11-21T21:00:00Z",
        "2026-11-21T21:01:00Z",
        "2026-11-21T21:02:00Z",
    ]
    replay = CliRunner().invoke(app, ["replay", str(tmp_path / "sim.db"), "--verify"])
    assert replay.exit_code == 0, replay.output


def test_configuration_errors_stop_startup_naming_key_and_value(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(
        (EXAMPLES / "tdm-config.yaml").read_text().replace('"10:00-21:00"', '"25:00-26:00"')
    )
    result = CliRunner().invoke(
        app, ["simulate", str(EXAMPLES / "tdm-window-close.yaml"), "--config", str(config)]
    )
    assert result.exit_code == 2
    assert "tdm.revocable-zone.rz1" in result.output and "25:00-26:00" in result.output


def test_unimplemented_plugins_are_named_in_one_warning(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "simulate",
            str(EXAMPLES / "tdm-window-close.yaml"),
            "--config",
            str(EXAMPLES / "volcano-scheduler.conf.yaml"),
            "--decisions",
            str(tmp_path / "d"),
        ],
    )
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1
    for name in ("drf", "binpack", "overcommit", "enqueue"):
        assert name in warnings[0]


def test_a_scenario_sampled_every_microsecond_exits_2_at_once(tmp_path: Path) -> None:
    scenario = tmp_path / "fast.yaml"
    scenario.write_text(
        'start: "2026-11-21T06:00:00Z"\n'
        "until: +24h\n"
        "nodes: [{name: n, cpu: '8', memory: 8Gi}]\n"
        "usage: [{node: n, every: 1us, points: [['+0m', {cpu: 10%}], ['+24h', {cpu: 90%}]]}]\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text("actions: allocate\ntiers: [{plugins: [{name: gang}]}]\n")
    # a process with a deadline: without the floor it expands 86,400,000,000 samples
    done = subprocess.run(
        [sys.executable, "-c", BOOT, "simulate", str(scenario), "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "usage[0].every: '1us'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
