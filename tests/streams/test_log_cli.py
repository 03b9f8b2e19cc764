"""`tide log import / export / quarantine` through the real command line (typer's runner)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from controller.cli import app
from streams.codec import decode
from streams.events import EVENT_TYPES

ALL_TYPES = Path(__file__).parents[2] / "examples" / "all-event-types.jsonl"

runner = CliRunner()


def tide(*args: str) -> tuple[int, str, bytes]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output, result.stdout_bytes


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'log.db'}"


def test_the_fixture_holds_every_event_type_once_at_least() -> None:
    lines = ALL_TYPES.read_bytes().splitlines()
    assert {decode(line).type for line in lines} == set(EVENT_TYPES)


def test_import_then_export_reproduces_a_canonical_recording(db: str) -> None:
    code, output, _ = tide("log", "import", str(ALL_TYPES), "--log", db)
    lines = ALL_TYPES.read_bytes().count(b"\n")
    assert (code, output) == (0, f"imported {lines}, skipped 0 as duplicates, set aside 0\n")
    code, _, exported = tide("log", "export", "--log", db)
    assert code == 0
    assert exported == ALL_TYPES.read_bytes()


def test_importing_twice_adds_nothing(db: str) -> None:
    tide("log", "import", str(ALL_TYPES), "--log", db)
    code, output, _ = tide("log", "import", str(ALL_TYPES), "--log", db)
    lines = ALL_TYPES.read_bytes().count(b"\n")
    assert (code, output) == (0, f"imported 0, skipped {lines} as duplicates, set aside 0\n")


BAD = [
    ("{not json", "not JSON"),
    ('{"type": "k8s.watch", "data": {}}', "missing 'at'"),
    ('{"at": "2026-11-21T20:00:00Z", "data": {}}', "missing 'type'"),
    ('{"at": "2026-11-21T20:00:00Z", "type": "k8s.teapot", "data": {}}', "unknown event type"),
    ('{"at": "yesterday", "type": "config.applied", "data": {}}', "'at' 'yesterday' is not"),
]


def test_bad_lines_are_set_aside_with_line_numbers(db: str, tmp_path: Path) -> None:
    good = ALL_TYPES.read_bytes().splitlines()
    pod = orjson.loads(good[5])  # the pods ADDED line of the fixture
    assert pod["data"]["resource"] == "pods"
    bad_qty = orjson.loads(good[5])
    bad_qty["data"]["object"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "12x"
    del bad_qty["id"]
    nameless = orjson.loads(good[5])
    del nameless["data"]["object"]["metadata"]["name"], nameless["id"]
    text = [good[0], *[line.encode() for line, _ in BAD], good[1], b"", b"[1, 2]"]
    text += [orjson.dumps(bad_qty), orjson.dumps(nameless), *good[2:]]
    recording = tmp_path / "mixed.jsonl"
    recording.write_bytes(b"\n".join(text) + b"\n")

    code, output, _ = tide("log", "import", str(recording), "--log", db)

    assert code == 1
    lines = output.splitlines()
    assert lines[0] == f"imported {len(good)}, skipped 0 as duplicates, set aside 8"
    expected = [
        *[(n, reason) for n, (_, reason) in enumerate(BAD, start=2)],
        (9, "not a JSON object but an array"),
        (
            10,
            "pods default/web-1: spec.containers[0].resources.requests.cpu: "
            "quantity '12x' is not a valid Kubernetes quantity",
        ),
        (11, "pod without metadata.name"),
    ]
    assert len(lines) == 1 + len(expected)
    for line, (number, reason) in zip(lines[1:], expected, strict=True):
        assert line.startswith(f"  {recording}:{number}: ")
        assert reason in line
    code, output, _ = tide("log", "quarantine", "--log", db)
    assert code == 0
    assert [line.split(": ", 1)[0] for line in output.splitlines()] == [
        f"{recording}:{n}" for n, _ in expected
    ]
    _, _, exported = tide("log", "export", "--log", db)
    assert exported == ALL_TYPES.read_bytes()


def test_a_long_list_of_bad_lines_is_cut_short(db: str, tmp_path: Path) -> None:
    recording = tmp_path / "junk.jsonl"
    recording.write_text("nope\n" * 25)
    code, output, _ = tide("log", "import", str(recording), "--log", db)
    assert code == 1
    assert output.splitlines()[-1] == f"  ... and 5 more (tide log quarantine --log {db})"
    assert len(output.splitlines()) == 1 + 20 + 1


def test_export_selects_offsets_and_types(db: str, tmp_path: Path) -> None:
    tide("log", "import", str(ALL_TYPES), "--log", db)
    lines = ALL_TYPES.read_bytes().splitlines(keepends=True)
    _, _, part = tide("log", "export", "--log", db, "--from", "2", "--to", "5")
    assert part == b"".join(lines[2:5])
    _, _, decisions = tide(
        "log", "export", "--log", db, "--type", "decision.evict", "--type", "decision.bind"
    )
    assert decisions == b"".join(
        line for line in lines if decode(line).type in {"decision.evict", "decision.bind"}
    )
    out = tmp_path / "out.jsonl"
    code, output, _ = tide("log", "export", "--log", db, "--from", "16", "--out", str(out))
    assert (code, output) == (0, "")
    assert out.read_bytes() == b"".join(lines[16:])


def test_export_refuses_an_unknown_type(db: str) -> None:
    tide("log", "import", str(ALL_TYPES), "--log", db)
    code, output, _ = tide("log", "export", "--log", db, "--type", "decision.nap")
    assert code == 2
    assert "unknown event type decision.nap" in output


def test_reading_a_missing_log_does_not_create_it(tmp_path: Path) -> None:
    path = tmp_path / "missing.db"
    for command in ("export", "quarantine"):
        code, output, _ = tide("log", command, "--log", str(path))
        assert code == 2
        assert "no such log" in output
    assert not path.exists()
    out = tmp_path / "keep.jsonl"
    out.write_text("precious\n")
    code, _, _ = tide("log", "export", "--log", str(path), "--out", str(out))
    assert code == 2
    assert out.read_text() == "precious\n"


def test_the_default_log_is_tide_db_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, _ = tide("log", "import", str(ALL_TYPES))
    assert code == 0
    assert (tmp_path / "tide.db").exists()
    _, _, exported = tide("log", "export")
    assert exported == ALL_TYPES.read_bytes()


def test_import_needs_an_existing_file(db: str, tmp_path: Path) -> None:
    code, output, _ = tide("log", "import", str(tmp_path / "nope.jsonl"), "--log", db)
    assert code == 2
    assert "does not exist" in output


def test_a_recording_is_not_a_log(tmp_path: Path) -> None:
    code, output, _ = tide("log", "export", "--log", str(ALL_TYPES))
    assert code == 2
    assert "is a recording, not a log" in output
