"""A line nested too deep is set aside before anything walks it, and costs no good line.

Issue 29: a watch line nested 1,000 deep made ``tide log import`` exit 3 (a
``RecursionError`` in ``streams/redact.py``'s ``_redact``, which redacted the set-aside
line's copy before its depth was known) and the good lines of the file were lost.
"""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from controller.cli import app
from streams.backends.memory import MemoryLog
from streams.codec import encode
from streams.events import Event
from streams.limits import MAX_DEPTH
from streams.recording import import_recording, read_recording
from streams.redact import redact_raw
from tests.builders import build_pod, watch

DEPTHS = [199, 200, 201, 300, 1_000, 100_000]


def _good(name: str) -> bytes:
    return encode(watch("pods", build_pod("d", name, cpu="1")))


def _deep(depth: int, name: str) -> bytes:
    """A pod line whose payload nests ``depth`` levels (``data``, ``object``, ``spec``, then
    lists in a field no fold reads), written as text: no encoder nests 100,000 deep."""
    record = orjson.loads(_good(name))
    record["data"]["object"]["spec"]["x"] = "@@"
    # the quarantine's copy of the line is redacted, however deep it is
    record["data"]["object"]["spec"]["containers"][0]["env"] = [{"name": "P", "value": "hunter2"}]
    text = orjson.dumps(record)
    return text.replace(b'"@@"', b"[" * (depth - 3) + b"]" * (depth - 3))


def _file(tmp_path: Path) -> Path:
    """Good lines around a deep line of each depth: good-0, deep-0, good-1, deep-1, ..."""
    lines: list[bytes] = []
    for i, depth in enumerate(DEPTHS):
        lines += [_good(f"good-{i}"), _deep(depth, f"deep-{i}")]
    lines.append(_good(f"good-{len(DEPTHS)}"))
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_the_depth_is_what_the_limit_measures() -> None:
    assert orjson.loads(_deep(12, "p"))["data"]["object"]["spec"]["x"] == [[[[[[[[[]]]]]]]]]


async def test_every_good_line_is_kept_and_every_deep_one_set_aside(tmp_path: Path) -> None:
    log = MemoryLog()
    summary = await import_recording(_file(tmp_path), log)
    names = [e.data["object"]["metadata"]["name"] for e in await log.read_all()]
    kept = [f"deep-{i}" for i, d in enumerate(DEPTHS) if d <= MAX_DEPTH]
    assert sorted(names) == sorted([f"good-{i}" for i in range(len(DEPTHS) + 1)] + kept)
    aside = {item.line: item.reason for item in summary.set_aside}
    expected = {2 + 2 * i for i, d in enumerate(DEPTHS) if d > MAX_DEPTH}
    assert set(aside) == expected
    assert all(f"nested deeper than {MAX_DEPTH} levels" in r for r in aside.values()), aside
    assert all("hunter2" not in item.raw for item in summary.set_aside)


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_line_of_any_depth_is_read_or_set_aside(depth: int) -> None:
    raw = _deep(depth, "p")
    (item,) = read_recording(io.BytesIO(raw + b"\n"))
    assert isinstance(item, Event) == (depth <= MAX_DEPTH)
    assert "hunter2" not in redact_raw(raw.decode())


def test_tide_log_import_keeps_the_good_lines_and_names_the_deep_ones(tmp_path: Path) -> None:
    db = tmp_path / "log.db"
    result = CliRunner().invoke(app, ["log", "import", str(_file(tmp_path)), "--log", str(db)])
    assert result.exit_code == 1, result.output  # lines were set aside, nothing crashed
    first = result.output.splitlines()[0]
    assert first == "imported 9, skipped 0 as duplicates, set aside 4", result.output
    for line in (6, 8, 10, 12):
        assert f"deep.jsonl:{line}: " in result.output
