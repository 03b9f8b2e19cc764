"""The hostile inputs the bad-input report named, each reproduced: the reason a line is
set aside, a configuration or scenario refused, or a simulation kept short."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from controller.cli import app
from controller.policy.framework.durations import DurationError, parse_duration
from controller.policy.framework.safe_yaml import YAMLLimitError, load_yaml_text
from controller.simulate.inputs import drop_outliers
from streams.backends.memory import MemoryLog
from streams.codec import encode
from streams.events import Event
from streams.quantity import QuantityError, parse_quantity, quantity_problem
from streams.recording import import_recording, parse_line
from tests.builders import at, build_node, build_pod, node_metrics, watch

runner = CliRunner()


def _pod_line(**changes: object) -> bytes:
    pod = build_pod("d", "web-1", cpu="1")
    record = orjson.loads(encode(watch("pods", pod)))
    record.pop("id")
    for path, value in changes.items():
        target = record
        keys = path.split("__")
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return orjson.dumps(record)


def _deep(depth: int) -> bytes:
    body = "[" * depth + "]" * depth
    return (
        b'{"at":"2026-11-21T20:00:00Z","type":"metrics.node","data":{"metadata":{"name":"n"},'
        b'"usage":{"cpu":"1"},"x":' + body.encode() + b"}}"
    )


CASES = [
    ("depth-254", _deep(254), "nested deeper than 200"),
    ("depth-250", _deep(250), "nested deeper than 200"),
    ("year-1", _pod_line(at="0001-01-01T00:00:00+01:00"), "is not an RFC 3339 time"),
    ("year-9999", _pod_line(at="9999-12-31T00:00:00Z"), "outside 2000-01-01 .. 2100-01-01"),
    ("epoch", _pod_line(at="1970-01-01T00:00:00Z"), "outside 2000-01-01"),
    (
        "1e400",
        _pod_line(data__object__spec__containers=[{"resources": {"requests": {"cpu": "1e400"}}}]),
        "exponent beyond",
    ),
    (
        "1e999999999",
        _pod_line(
            data__object__spec__containers=[{"resources": {"requests": {"cpu": "1e999999999"}}}]
        ),
        "exponent beyond",
    ),
    (
        "arabic-indic",
        _pod_line(data__object__spec__containers=[{"resources": {"requests": {"cpu": "\u0661"}}}]),
        "not ASCII",
    ),
    (
        "negative",
        _pod_line(data__object__spec__containers=[{"resources": {"requests": {"cpu": "-1"}}}]),
        "is negative",
    ),
    ("secret-as-pod", _pod_line(data__object__kind="Secret"), "kind 'Secret' is not 'Pod'"),
    ("slash-name", _pod_line(data__object__metadata__name="a/b"), "not a DNS subdomain"),
    ("spec-string", _pod_line(data__object__spec="x"), "spec: a string, not an object"),
    ("labels-list", _pod_line(data__object__metadata__labels=["a"]), "metadata.labels"),
]


@pytest.mark.parametrize(("line", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_lines_are_set_aside_with_the_reason(line: bytes, reason: str) -> None:
    parsed = parse_line(line, source="r.jsonl", line=3)
    assert not isinstance(parsed, Event)
    assert reason in parsed.reason


def test_a_line_over_the_size_limit_is_set_aside_and_the_rest_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("streams.recording.MAX_LINE_BYTES", 4096)
    good = encode(node_metrics("n1", cpu="1", memory="1Gi"))
    long = _pod_line(data__object__metadata__annotations={"a": "x" * 10_000})
    log = MemoryLog()
    summary = asyncio.run(import_recording(io.BytesIO(long + b"\n" + good + b"\n"), log))
    assert summary.imported == 1
    assert [(q.line, "longer than 4096 bytes" in q.reason) for q in summary.set_aside] == [
        (1, True)
    ]


def test_a_different_record_under_a_known_id_is_a_conflict() -> None:
    first = encode(node_metrics("n1", cpu="1", memory="1Gi"))
    record = orjson.loads(first)
    record["data"]["usage"]["cpu"] = "2"
    log = MemoryLog()
    lines = first + b"\n" + orjson.dumps(record) + b"\n" + first + b"\n"
    summary = asyncio.run(import_recording(io.BytesIO(lines), log))
    assert (summary.imported, summary.duplicates, summary.conflicts) == (1, 1, 1)
    assert summary.set_aside[0].line == 2
    assert "conflicts with offset 0" in summary.set_aside[0].reason


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("1e-64", None),
        ("1e65", "exponent"),
        ("9223372036854775807", None),
        ("9223372036854775808", "larger"),
        ("7Ei", None),
        ("16Ei", "larger"),
        ("-1", "negative"),
    ],
    ids=["1e-64", "1e65", "int64-max", "int64-max+1", "7Ei", "16Ei", "negative"],
)
def test_quantity_bounds(text: str, problem: str | None) -> None:
    found = quantity_problem(text)
    assert (found is None) if problem is None else (problem in str(found))


def test_the_quantity_parser_never_stalls_on_an_exponent() -> None:
    with pytest.raises(QuantityError):
        parse_quantity("1e999999999")


@pytest.mark.parametrize("text", ["99999999999999999999h", "3000000h", "1h" * 60])
def test_durations_are_bounded(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [" + ",".join(["*a"] * 10) + "]\n"
            "c: &c [" + ",".join(["*b"] * 10) + "]\nd: &d [" + ",".join(["*c"] * 10) + "]\n"
            "e: [" + ",".join(["*d"] * 10) + "]\n",
            "more than 100000 values",
        ),
        ("{1: x}", "is not a string"),
        ("a: .nan", "not a finite number"),
        ("a: 99999999999999999999999", "64-bit"),
    ],
    ids=["bomb", "int-key", "nan", "huge-int"],
)
def test_hostile_yaml_is_refused_naming_the_key(text: str, message: str) -> None:
    with pytest.raises(YAMLLimitError, match=message):
        load_yaml_text(text, where="c.yaml")


@pytest.mark.parametrize(("tick", "message"), [("1us", "at least 0.1s"), ("2h", "at most 1h")])
def test_session_tick_bounds(tmp_path: Path, tick: str, message: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"actions: allocate\nsessionTick: {tick}\n")
    recording = tmp_path / "r.jsonl"
    recording.write_bytes(encode(watch("nodes", build_node("n1"))) + b"\n")
    result = runner.invoke(app, ["simulate", str(recording), "--config", str(config)])
    assert result.exit_code != 0 and message in result.output


def test_one_outlier_does_not_drive_the_clock() -> None:
    events = [node_metrics("n1", cpu="1", memory="1Gi", when=at(m)) for m in range(5)]
    outlier = node_metrics("n1", cpu="2", memory="1Gi", when=at(60 * 24 * 365 * 50))
    kept, aside = drop_outliers([*events, outlier], [1, 2, 3, 4, 5, 6], source="r.jsonl")
    assert kept == events
    assert [q.line for q in aside] == [6] and "not simulated" in aside[0].reason


def test_simulate_keeps_its_set_aside_lines_in_the_log_quarantine(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("actions: allocate\n")
    recording = tmp_path / "r.jsonl"
    good = encode(watch("nodes", build_node("n1")))
    recording.write_bytes(good + b"\n" + _pod_line(data__object__kind="Secret") + b"\n")
    db = tmp_path / "x.db"
    result = runner.invoke(
        app, ["simulate", str(recording), "--config", str(config), "--log", str(db)]
    )
    assert result.exit_code == 1, result.output
    shown = runner.invoke(app, ["log", "quarantine", "--log", str(db)])
    assert ":2: pods d/web-1: kind 'Secret'" in shown.output


def test_replay_of_a_recording_reports_the_lines_it_skips(tmp_path: Path) -> None:
    recording = tmp_path / "r.jsonl"
    recording.write_bytes(encode(watch("nodes", build_node("n1"))) + b"\n" + b"not json\n")
    result = runner.invoke(app, ["replay", str(recording)])
    assert "set aside" in result.output and ":2: not JSON" in result.output
