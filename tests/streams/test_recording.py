"""Recordings: reading (with bad lines set aside), writing, and importing onto a log."""

from __future__ import annotations

import gc
import io
from collections.abc import Iterator, Sequence
from pathlib import Path

import orjson
import pytest

from streams.backends.memory import MemoryLog
from streams.codec import encode
from streams.events import Event, make_event
from streams.log import Quarantined
from streams.recording import (
    export_log,
    import_recording,
    parse_line,
    read_batches,
    read_recording,
    write_recording,
)
from tests.builders import T0, at, build_node, build_pod, node_metrics, watch


def sample(n: int = 6) -> list[Event]:
    return [watch("nodes", build_node(f"n{i}"), at(i)) for i in range(n)]


def write_lines(path: Path, lines: Sequence[bytes | str]) -> Path:
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    return path


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    events = sample()
    path = tmp_path / "r.jsonl"
    assert write_recording(events, path) == len(events)
    assert path.read_bytes() == b"".join(encode(e) + b"\n" for e in events)
    assert list(read_recording(path)) == events
    stream = io.BytesIO()
    assert write_recording(iter(events), stream) == len(events)
    assert stream.getvalue() == path.read_bytes()
    assert list(read_recording(io.BytesIO(stream.getvalue()))) == events


def test_writing_nothing_writes_an_empty_file(tmp_path: Path) -> None:
    assert write_recording([], tmp_path / "empty.jsonl") == 0
    assert (tmp_path / "empty.jsonl").read_bytes() == b""
    assert list(read_recording(tmp_path / "empty.jsonl")) == []


def test_bad_lines_are_set_aside_in_line_order(tmp_path: Path) -> None:
    good = sample(3)
    nameless = build_pod("default", "x")
    del nameless["metadata"]["name"]
    path = write_lines(
        tmp_path / "mixed.jsonl",
        [
            encode(good[0]),
            "   ",
            "{broken",
            encode(good[1]),
            "",
            '{"at": "2026-11-21T20:00:00Z", "type": "k8s.watch", "data": '
            + orjson.dumps({"resource": "pods", "event": "ADDED", "object": nameless}).decode()
            + "}",
            encode(good[2]),
            "42",
        ],
    )
    items = list(read_recording(path))
    assert items[0] == good[0]
    assert items[2] == good[1]
    assert items[4] == good[2]
    bad = [q for q in items if isinstance(q, Quarantined)]
    assert bad == [items[1], items[3], items[5]]
    assert [(q.source, q.line) for q in bad] == [(str(path), 3), (str(path), 6), (str(path), 8)]
    assert [q.reason for q in bad] == [
        bad[0].reason,
        "pod without metadata.name",
        "not a JSON object but a number",
    ]
    assert bad[0].reason.startswith("not JSON: ")
    assert bad[0].raw == "{broken"
    assert bad[2].raw == "42"


def test_a_quarantined_line_keeps_its_raw_text_even_when_not_utf8() -> None:
    item = parse_line(b'{"at": "\xff"}\r\n', source="s", line=4)
    assert isinstance(item, Quarantined)
    assert item.raw == '{"at": "\\xff"}'
    assert item.line == 4


def test_lines_without_id_get_stable_content_ids(tmp_path: Path) -> None:
    event = node_metrics("n1", cpu="1", memory="1Gi")
    line = orjson.dumps({"type": event.type, "at": "2026-11-21T21:00:00+01:00", "data": event.data})
    path = write_lines(tmp_path / "noid.jsonl", [line, line])
    first, second = read_recording(path)
    assert first == second == event


def test_windows_line_ends_and_a_byte_order_mark_are_fine(tmp_path: Path) -> None:
    events = sample(2)
    path = tmp_path / "crlf.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b"".join(encode(e) + b"\r\n" for e in events))
    assert list(read_recording(path)) == events


def test_batches_cut_the_file_and_report_the_position(tmp_path: Path) -> None:
    events = sample(10)
    path = tmp_path / "r.jsonl"
    write_recording(events, path)
    lines = path.read_bytes().splitlines(keepends=True)
    batches = list(read_batches(path, size=4))
    assert [len(b.events) for b in batches] == [4, 4, 2]
    assert [b.lines for b in batches] == [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]
    assert [b.position for b in batches] == [
        sum(map(len, lines[:4])),
        sum(map(len, lines[:8])),
        path.stat().st_size,
    ]
    assert [e for b in batches for e in b.events] == events


def test_canonical_payload_bytes_come_along_with_and_without_id(tmp_path: Path) -> None:
    # the depth check serialises every payload, so lines with an id carry their bytes too
    event = node_metrics("n1", cpu="1", memory="1Gi")
    no_id = orjson.dumps({"at": "2026-11-21T20:00:00Z", "type": event.type, "data": event.data})
    path = write_lines(tmp_path / "r.jsonl", [no_id, encode(event)])
    (batch,) = read_batches(path)
    canonical = orjson.dumps(event.data, option=orjson.OPT_SORT_KEYS)
    assert batch.payloads == [canonical, canonical]


async def test_import_appends_and_sets_aside(tmp_path: Path) -> None:
    events = sample(5)
    path = write_lines(tmp_path / "r.jsonl", [encode(e) for e in events[:3]] + ["nope"])
    log = MemoryLog()
    positions: list[int] = []
    summary = await import_recording(path, log, batch_size=2, on_progress=positions.append)
    assert (summary.imported, summary.duplicates) == (3, 0)
    assert [(q.line, q.raw) for q in summary.set_aside] == [(4, "nope")]
    assert await log.quarantine() == summary.set_aside
    assert [e.id for e in log.events] == [e.id for e in events[:3]]
    assert positions[-1] == path.stat().st_size
    assert positions == sorted(positions)

    write_lines(path, [encode(e) for e in [events[0], *events, events[4]]] + ["nope"])
    summary = await import_recording(path, log, batch_size=3)
    assert (summary.imported, summary.duplicates) == (2, 5)
    assert [e.id for e in log.events] == [e.id for e in events]
    assert [q.line for q in await log.quarantine()] == [4, 8]

    summary = await import_recording(path, log)  # the very same file again
    assert (summary.imported, summary.duplicates, len(summary.set_aside)) == (0, 7, 1)
    assert [q.line for q in await log.quarantine()] == [4, 8]


class FailingLog(MemoryLog):
    async def append(self, events: Sequence[Event]) -> list[Event]:
        if self.events:
            raise RuntimeError("disk on fire")
        return await super().append(events)


async def test_an_append_failure_stops_the_import(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    write_recording(sample(6), path)
    log = FailingLog()
    with pytest.raises(RuntimeError, match="disk on fire"):
        await import_recording(path, log, batch_size=2)
    assert len(log.events) == 2


@pytest.mark.parametrize("enabled", [True, False])
async def test_import_leaves_the_garbage_collector_as_it_found_it(
    tmp_path: Path, enabled: bool
) -> None:
    path = tmp_path / "r.jsonl"
    write_recording(sample(2), path)
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        await import_recording(path, MemoryLog())
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


async def test_export_writes_a_slice_of_the_log() -> None:
    log = MemoryLog()
    events = [*sample(3), node_metrics("n1", cpu="1", memory="1", when=T0)]
    await log.append(events)
    out = io.BytesIO()
    assert await export_log(log, out, start=1) == 3
    assert out.getvalue() == b"".join(encode(e) + b"\n" for e in events[1:])
    out = io.BytesIO()
    assert await export_log(log, out, types={"metrics.node"}) == 1
    assert out.getvalue() == encode(events[3]) + b"\n"


def test_reading_a_stream_names_it_in_the_quarantine() -> None:
    class Named(io.BytesIO):
        name = "stdin"

    (item,) = read_recording(Named(b"oops\n"))
    assert isinstance(item, Quarantined)
    assert (item.source, item.line) == ("stdin", 1)


def test_read_recording_is_lazy(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    write_recording(sample(3), path)
    items: Iterator[Event | Quarantined] = read_recording(path)
    assert next(items) == sample(1)[0]


def test_a_line_of_another_kind_of_event_is_read_too() -> None:
    event = make_event("config.applied", T0, {"config": {"a": 1}, "source": "x"}, cause="c")
    assert parse_line(encode(event), source="s", line=1) == event


def _nested_pod_line(depth: int) -> bytes:
    """A pod line whose payload nests ``depth`` levels (``data``, ``object``, ``spec``, then
    lists in a field no fold reads)."""
    nested: list[object] = []
    for _ in range(depth - 4):
        nested = [nested]
    record = orjson.loads(encode(watch("pods", build_pod("d", "web-1", cpu="1"))))
    record["data"]["object"]["spec"]["x"] = nested
    return orjson.dumps(record)


@pytest.mark.parametrize(("depth", "kept"), [(200, True), (201, False)])
def test_a_watch_line_nested_too_deep_is_set_aside(depth: int, kept: bool) -> None:
    # the line opens more than MAX_DEPTH brackets, so the nesting is really measured
    parsed = parse_line(_nested_pod_line(depth), source="r.jsonl", line=1)
    if kept:
        assert isinstance(parsed, Event)
    else:
        assert isinstance(parsed, Quarantined) and "nested deeper than 200" in parsed.reason


def test_a_line_opening_few_brackets_skips_serialising_for_the_nesting_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import streams.limits

    def refuse(data: object, option: int) -> bytes:
        raise AssertionError("serialised")

    raw = encode(watch("pods", build_pod("d", "web-1", cpu="1")))
    monkeypatch.setattr(streams.limits, "_bounded", refuse)
    assert isinstance(parse_line(raw, source="r.jsonl", line=1), Event)
