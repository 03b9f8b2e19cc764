"""The CLI never shows a traceback, never creates a log when reading, never invents data."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from controller.cli import app
from streams.events import parse_time

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
OWNERSHIP = ROOT / "tests" / "replay" / "golden" / "sources" / "ownership.yaml"


def invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    return result.exit_code, result.output


READERS = [
    ["state", "--log", "{log}"],
    ["replay", "{log}"],
    ["audit", "summary", "--log", "{log}"],
    ["audit", "decisions", "--log", "{log}"],
    ["audit", "why", "web-0", "--log", "{log}"],
    ["audit", "metrics", "--log", "{log}"],
    ["log", "export", "--log", "{log}"],
]
READER_IDS = [
    "state",
    "replay",
    "audit-summary",
    "audit-decisions",
    "audit-why",
    "metrics",
    "export",
]


@pytest.mark.parametrize("args", READERS, ids=READER_IDS)
@pytest.mark.parametrize("kind", ["kafka", "not-a-log", "missing"])
def test_reading_commands_fail_in_one_line(args: list[str], kind: str, tmp_path: Path) -> None:
    if kind == "kafka":
        log = "kafka://broker:9092/tide"
    elif kind == "not-a-log":
        (tmp_path / "text.db").write_text("not a database\n")
        log = str(tmp_path / "text.db")
    else:
        log = f"sqlite:///{tmp_path / 'typo.db'}"
    code, out = invoke([a.replace("{log}", log) for a in args])
    assert code != 0
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), out
    assert "Traceback" not in out
    assert not (tmp_path / "typo.db").exists()  # reading never creates a log


@pytest.mark.parametrize(
    ("option", "value", "listed"),
    [("--reason", "tdm-window-close", "tdm-window-closed"), ("--kind", "evicted", "untaint")],
    ids=["reason", "kind"],
)
def test_unknown_reason_or_kind_lists_the_valid_ones(
    option: str, value: str, listed: str, tmp_path: Path
) -> None:
    log = tmp_path / "x.db"
    assert (
        invoke(["log", "import", str(EXAMPLES / "all-event-types.jsonl"), "--log", str(log)])[0]
        == 0
    )
    code, out = invoke(["audit", "decisions", "--log", str(log), option, value])
    assert code == 2
    assert listed in out


def test_version() -> None:
    code, out = invoke(["--version"])
    assert code == 0 and out.startswith("tide ")


def test_all_event_types_example_replays(tmp_path: Path) -> None:
    log = tmp_path / "x.db"
    assert (
        invoke(["log", "import", str(EXAMPLES / "all-event-types.jsonl"), "--log", str(log)])[0]
        == 0
    )
    _, out = invoke(["replay", str(log)])
    assert "Traceback" not in out
    assert "replayed" in out


@pytest.mark.parametrize(
    ("until", "last"),
    [("+2m30s", "2026-11-21T21:00:30Z"), ("2026-11-21T21:01:00Z", "2026-11-21T21:01:00Z")],
    ids=["relative", "absolute"],
)
def test_until_accepts_a_relative_duration(until: str, last: str, tmp_path: Path) -> None:
    out = tmp_path / "d.jsonl"
    code, text = invoke(
        [
            "simulate",
            str(OWNERSHIP),
            "-c",
            str(OWNERSHIP),
            "--until",
            until,
            "--decisions",
            str(out),
        ]
    )
    assert code == 0, text
    times = [parse_time(json.loads(line)["at"]) for line in out.read_text().splitlines()]
    assert times and max(times) <= parse_time(last)


@pytest.mark.parametrize(
    ("args", "host"),
    [([], "127.0.0.1"), (["--metrics-address", "0.0.0.0"], "0.0.0.0")],
    ids=["default-local", "explicit"],
)
def test_metrics_bind_the_address_they_print(
    args: list[str], host: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    import prometheus_client

    bound: dict[str, Any] = {}

    def fake_server(port: int, addr: str = "0.0.0.0", **_: Any) -> tuple[Any, Any]:
        bound["addr"] = addr
        server = SimpleNamespace(server_address=(addr, port), shutdown=lambda: None)
        return server, SimpleNamespace(join=lambda: None)

    def interrupted(self: threading.Event, timeout: float | None = None) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(prometheus_client, "start_http_server", fake_server)
    monkeypatch.setattr(threading.Event, "wait", interrupted)
    code, out = invoke(
        [
            "simulate",
            str(OWNERSHIP),
            "-c",
            str(OWNERSHIP),
            "--until",
            "+1m",
            "--decisions",
            str(tmp_path / "d.jsonl"),
            "--metrics-port",
            "9109",
            *args,
        ]
    )
    assert code == 0, out
    assert bound["addr"] == host
    assert f"http://{host}:9109/metrics" in out


def test_an_invalid_config_applied_is_set_aside_on_import(tmp_path: Path) -> None:
    text = (EXAMPLES / "all-event-types.jsonl").read_text()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text.replace('"tdm.evict.period":"1m"', '"tdm.evict.period":"-1m"'))
    code, out = invoke(["log", "import", str(bad), "--log", str(tmp_path / "bad.db")])
    assert code == 1
    assert "config.applied: tdm.evict.period" in out and "must be positive" in out
