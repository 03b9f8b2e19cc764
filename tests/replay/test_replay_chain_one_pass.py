"""`tide replay --verify` checks the hash chain on the records it replays (one read of the
log), and reads the log once more only when the replay stopped early: the chain report is
the one `tide log verify` gives (`streams.chain.check_log`), whatever was done to the log."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from controller.cli import app
from controller.cli.reading import replay_log
from streams.backends import open_log
from streams.chain import ChainReport, check_log

SCENARIO = Path(__file__).resolve().parent / "golden" / "sources" / "allocate-gang.yaml"


def invoke(args: list[str]) -> int:
    return CliRunner().invoke(app, args, env={"COLUMNS": "200"}).exit_code


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """The lines of a simulated log's export (chained, ending in its seal)."""
    work = tmp_path_factory.mktemp("one-pass")
    db, out = work / "run.db", work / "run.jsonl"
    inputs = [str(SCENARIO), "-c", str(SCENARIO), "--decisions", os.devnull]
    assert invoke(["simulate", *inputs, "--log", str(db)]) == 0
    assert invoke(["log", "export", "--log", str(db), "--out", str(out)]) == 0
    return out.read_bytes().splitlines(keepends=True)


def _altered(lines: list[bytes], at: int) -> list[bytes]:
    record = orjson.loads(lines[at])
    record["data"]["forged"] = 1
    line = orjson.dumps(record, option=orjson.OPT_SORT_KEYS) + b"\n"
    return [*lines[:at], line, *lines[at + 1 :]]


TAMPERS: dict[str, Callable[[list[bytes]], list[bytes]]] = {
    "untouched": lambda lines: lines,
    "cut-tail": lambda lines: lines[:-3],
    "delete-early": lambda lines: lines[:10] + lines[11:],
    "delete-late": lambda lines: lines[:-4] + lines[-3:],
    "alter-early": lambda lines: _altered(lines, 10),
    "alter-decision": lambda lines: _altered(
        lines, next(i for i, line in enumerate(lines) if b'"decision.' in line)
    ),
}


def _fields(report: ChainReport) -> tuple[object, ...]:
    return (
        report.ok,
        report.broken,
        report.records,
        report.complete,
        report.cut,
        report.run,
        report.writers,
        report.describe(),
    )


@pytest.mark.parametrize("diff", [False, True], ids=["stop-at-first", "diff"])
@pytest.mark.parametrize("tamper", sorted(TAMPERS))
def test_the_chain_of_one_pass_is_the_chain_of_log_verify(
    exported: list[bytes], tmp_path: Path, tamper: str, diff: bool
) -> None:
    recording, db = tmp_path / "t.jsonl", tmp_path / "t.db"
    recording.write_bytes(b"".join(TAMPERS[tamper](exported)))
    assert invoke(["log", "import", str(recording), "--log", str(db)]) in (0, 1)

    async def verified() -> ChainReport:
        async with await open_log(str(db)) as log:
            return await check_log(log)

    _, chain = replay_log(str(db), start=None, stop_at_first=not diff, chain=True)
    assert chain is not None
    assert _fields(chain) == _fields(asyncio.run(verified()))
    assert replay_log(str(db), start=None, chain=False)[1] is None


def _respaced(data: bytes) -> bytes:
    """The same payload, not in canonical bytes (as an old log may store it)."""
    return json.dumps(orjson.loads(data), indent=1).encode()


def _forged(data: bytes) -> bytes:
    return orjson.dumps({**orjson.loads(data), "forged": 1}, option=orjson.OPT_SORT_KEYS)


@pytest.mark.parametrize("rewrite", [_respaced, _forged], ids=["not-canonical", "forged"])
def test_the_chain_check_around_stored_bytes_falls_back_to_the_canonical_line(
    exported: list[bytes], tmp_path: Path, rewrite: Callable[[bytes], bytes]
) -> None:
    # replay hashes each link around the stored payload bytes; bytes that are not the
    # canonical encoding must still verify (the fallback), altered ones still break
    recording, db = tmp_path / "t.jsonl", tmp_path / "t.db"
    recording.write_bytes(b"".join(exported))
    assert invoke(["log", "import", str(recording), "--log", str(db)]) == 0
    with sqlite3.connect(db) as con:
        rows = con.execute('SELECT "offset", data FROM events WHERE "offset" IN (3, 9)')
        for offset, data in rows.fetchall():
            con.execute('UPDATE events SET data = ? WHERE "offset" = ?', (rewrite(data), offset))

    async def verified() -> ChainReport:
        async with await open_log(str(db)) as log:
            return await check_log(log)

    _, chain = replay_log(str(db), start=None, stop_at_first=False, chain=True)
    assert chain is not None
    assert _fields(chain) == _fields(asyncio.run(verified()))
    assert chain.ok == (rewrite is _respaced)
