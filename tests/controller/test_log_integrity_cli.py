"""Forgery, data safety and exit codes at the command line: `tide log verify`,
`tide replay --verify`, the export / demo / import guards, runs, file modes, and the
exit codes 0 (success), 1 (set aside / difference), 2 (usage), 3 (internal error)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
import typer
from typer.testing import CliRunner

from controller.cli import app
from controller.cli.common import guarded

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "tests" / "replay" / "golden" / "sources"
GOLDEN = ROOT / "tests" / "replay" / "golden"
SCENARIO = SOURCES / "tdm-budgets.yaml"
OTHER = SOURCES / "allocate-gang.yaml"


def invoke(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    return result.exit_code, result.output


def simulate(db: Path, scenario: Path = SCENARIO, *extra: str) -> tuple[int, str]:
    inputs = [str(scenario), "-c", str(scenario), "--decisions", os.devnull]
    return invoke(["simulate", *inputs, "--log", str(db), *extra])


@pytest.fixture(scope="module")
def chained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("chained") / "run.db"
    code, out = simulate(db)
    assert code == 0, out
    return db


def copy_db(source: Path, dest: Path) -> Path:
    with sqlite3.connect(source) as src, sqlite3.connect(dest) as dst:
        src.backup(dst)
    return dest


def test_a_simulated_log_is_chained_complete_and_verifies(chained: Path) -> None:
    code, out = invoke(["log", "verify", str(chained)])
    assert code == 0, out
    assert "chain intact" in out and "complete" in out
    code, out = invoke(["replay", str(chained), "--verify"])
    assert code == 0, out
    assert "identical" in out


TAMPERS = {
    "delete": 'DELETE FROM events WHERE "offset" = 5',
    "alter": "UPDATE events SET data = json_set(data, '$.forged', 1) WHERE \"offset\" = 5",
    "move": 'UPDATE events SET "offset" = -"offset" - 1 WHERE "offset" IN (5, 6);'
    'UPDATE events SET "offset" = 6 WHERE "offset" = -6;'
    'UPDATE events SET "offset" = 5 WHERE "offset" = -7',
    "cut-tail": 'DELETE FROM events WHERE "offset" >= 100',
}
EXPECTED = {"delete": "offset 6", "alter": "offset 6", "move": "offset 5", "cut-tail": "offset 100"}


@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_log_verify_names_the_first_bad_offset(chained: Path, tmp_path: Path, tamper: str) -> None:
    db = copy_db(chained, tmp_path / "t.db")
    with sqlite3.connect(db) as conn:
        conn.executescript(TAMPERS[tamper])
    code, out = invoke(["log", "verify", str(db)])
    assert code == 1, out
    assert "chain broken at " + EXPECTED[tamper] in out
    code, out = invoke(["replay", str(db), "--verify"])
    assert code == 1, out


def test_an_exported_log_verifies_and_a_deleted_line_is_reported(
    chained: Path, tmp_path: Path
) -> None:
    out_file = tmp_path / "x.jsonl"
    assert invoke(["log", "export", "--log", str(chained), "--out", str(out_file)])[0] == 0
    code, out = invoke(["log", "verify", str(out_file)])
    assert code == 0, out
    lines = out_file.read_bytes().splitlines(keepends=True)
    out_file.write_bytes(b"".join(lines[:10] + lines[11:]))
    code, out = invoke(["replay", str(out_file), "--verify"])
    assert code == 1 and "chain broken at offset 10" in out, out


def golden_lines(name: str) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in (GOLDEN / f"{name}.jsonl").read_bytes().splitlines()]


def write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_bytes(
        b"".join(orjson.dumps(r, option=orjson.OPT_SORT_KEYS) + b"\n" for r in records)
    )
    return path


def test_a_decision_whose_cause_was_deleted_is_unaccounted(tmp_path: Path) -> None:
    records = golden_lines("tdm-budgets")
    decision = next(r for r in records if str(r["type"]).startswith("decision."))
    kept = [r for r in records if r.get("id") != decision["cause"]]
    code, out = invoke(["replay", str(write(tmp_path / "t.jsonl", kept)), "--verify"])
    assert code == 1, out
    assert f"its cause {decision['cause']} is not on the log" in out


def test_a_decision_without_a_cause_and_an_orphan_effect_are_unaccounted(tmp_path: Path) -> None:
    records = golden_lines("tdm-budgets")
    decision = next(r for r in records if str(r["type"]).startswith("decision."))
    forged = {**decision, "id": "forged-1"}
    del forged["cause"]
    effect = {
        "at": decision["at"],
        "type": "effect.applied",
        "id": "forged-2",
        "data": {"decision": "nothing", "kind": "evict", "target": "a/b"},
    }
    code, out = invoke(
        ["replay", str(write(tmp_path / "t.jsonl", [*records, forged, effect])), "--verify"]
    )
    assert code == 1, out
    assert "forged-1): it names no cause" in out
    assert "forged-2): its decision 'nothing' is not on the log" in out


def test_a_tampered_configuration_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    records = golden_lines("tdm-budgets")
    for record in records:
        if record["type"] == "config.applied":
            data = dict(record["data"])  # type: ignore[call-overload]
            data["config"] = {"tiers": "not a list", "actions": 7}
            record["data"] = data
    code, out = invoke(["replay", str(write(tmp_path / "t.jsonl", records)), "--verify"])
    assert code in (1, 2), out
    assert "Traceback" not in out


#: golden logs written since the hash chain and the seal (the others predate them)
CHAINED = {"stale-metrics.jsonl"}


def test_every_golden_log_still_verifies_with_no_chain(tmp_path: Path) -> None:
    """Golden logs written before the chain verify as carrying none; those written since
    verify as intact and complete (sealed)."""
    for source in sorted(GOLDEN.glob("*.jsonl")):
        code, out = invoke(["log", "verify", str(source)])
        assert code == 0, (source.name, out)
        if source.name in CHAINED:
            assert "chain intact" in out and "complete" in out, (source.name, out)
        else:
            assert "no chain" in out, (source.name, out)
    assert {source.name for source in GOLDEN.glob("*.jsonl")} >= CHAINED


def test_export_onto_its_own_log_is_refused(chained: Path, tmp_path: Path) -> None:
    db = copy_db(chained, tmp_path / "own.db")
    size = db.stat().st_size
    for target in (db, Path(f"{db}-wal")):
        code, out = invoke(["log", "export", "--log", str(db), "--out", str(target)])
        assert code == 2 and "would destroy it" in out, out
    assert db.stat().st_size == size
    assert invoke(["log", "verify", str(db)])[0] == 0


def test_demo_refuses_to_replace_a_file_that_is_not_a_tide_log(tmp_path: Path) -> None:
    precious = tmp_path / "thesis.db"
    precious.write_text("years of work")
    code, out = invoke(["demo", "--db", str(precious)])
    assert code == 2 and "is not a tide log" in out, out
    assert precious.read_text() == "years of work"


@pytest.mark.parametrize("url", ["memory://", "sqlite://", "sqlite:///"])
def test_import_refuses_a_log_that_cannot_outlive_the_command(url: str) -> None:
    code, out = invoke(["log", "import", str(GOLDEN / "demo.jsonl"), "--log", url])
    assert code == 2 and "throw-away" in out, out


def test_a_second_run_is_refused_unless_asked_for(chained: Path, tmp_path: Path) -> None:
    db = copy_db(chained, tmp_path / "runs.db")
    code, out = simulate(db, OTHER)
    assert code == 2 and "--another-run" in out, out
    assert simulate(db, SCENARIO)[0] == 0  # the same run again: nothing new, still fine
    code, out = simulate(db, OTHER, "--another-run")
    assert code == 0, out


def test_new_logs_are_private(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    assert invoke(["log", "import", str(GOLDEN / "demo.jsonl"), "--log", str(db)])[0] == 0
    assert db.stat().st_mode & 0o777 == 0o600


def test_an_internal_error_is_one_line_naming_where_the_details_are() -> None:
    def broken() -> None:
        raise KeyError("boom")

    probe = typer.Typer()
    probe.command()(guarded(broken))
    result = CliRunner().invoke(probe, [])
    assert result.exit_code == 3
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: internal error: KeyError")
    where = Path(lines[0].rsplit("details in ", 1)[1].rstrip(")"))
    assert "Traceback" in where.read_text() and "boom" in where.read_text()
    where.unlink()


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["log", "export", "--log", "nope.db"], 2),
        (["log", "export", "--log", "x.db", "--type", "decision.nap"], 2),
        (["simulate", "no-such.yaml", "-c", str(SCENARIO)], 2),
    ],
    ids=["missing-log", "bad-option", "missing-input"],
)
def test_usage_errors_exit_2(args: list[str], code: int) -> None:
    assert invoke(args)[0] == code


def tide(*args: str) -> subprocess.Popen[bytes]:
    code = "from controller.cli import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def test_kill_9_at_random_points_of_an_import_leaves_a_log_that_completes(
    chained: Path, tmp_path: Path
) -> None:
    export = tmp_path / "ref.jsonl"
    assert invoke(["log", "export", "--log", str(chained), "--out", str(export)])[0] == 0
    rng = random.Random(16)
    for attempt in range(4):
        db = tmp_path / f"k{attempt}.db"
        proc = tide("log", "import", str(export), "--log", str(db))
        time.sleep(rng.uniform(0.3, 2.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if db.exists():  # whatever got stored is a prefix of an intact chain
            code, out = invoke(["log", "verify", str(db)])
            assert "chain broken" not in out, out
        code, out = invoke(["log", "import", str(export), "--log", str(db)])
        assert code == 0, out
        code, out = invoke(["log", "verify", str(db)])
        assert code == 0 and "complete" in out, out
        again = tmp_path / f"k{attempt}.jsonl"
        assert invoke(["log", "export", "--log", str(db), "--out", str(again)])[0] == 0
        assert again.read_bytes() == export.read_bytes()
