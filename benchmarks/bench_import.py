"""Import rate: ``tide log import`` (``streams.recording.import_recording`` into a
``SQLiteLog``) against raw ``sqlite3.executemany`` of the same rows.

Baseline: the same recording, cut into the same batches (``recording.BATCH_SIZE``
lines), each batch one ``executemany`` + ``COMMIT`` of ``(offset, id, at, type, data)``
rows into a fresh WAL file (``synchronous=NORMAL``, as the log). Rows are prepared
outside the timed part by slicing the canonical line (no JSON parse), so the baseline
is what storing costs and nothing else. Informational baselines: the same insert with
the log's indexes (``id UNIQUE``, an index on ``type``); ``orjson.loads`` of every line
alone (what any importer that validates must at least spend); and *indexed +
parse-inclusive*: ``orjson.loads`` of each line plus the indexed insert, both timed, the
least an importer that parses and keeps the log's indexes can cost (the fair yardstick
for ``tide log import``; the headline ratio stays the one against the plain insert).

Subject: ``import_recording(path, await SQLiteLog.open(fresh file))``, timed from the
call to its return (reading, parsing, validating, hashing ids, encoding, storing).
Also timed alone: ``read_batches`` over the file (everything but storing), which says
how the import's time splits between parsing and storing.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import time
from pathlib import Path

import orjson

from benchmarks.common import Context, Result, gc_disabled, need, rate_row, read_lines, split_line

TARGET = 0.8

_PLAIN = """CREATE TABLE events ("offset" INTEGER PRIMARY KEY, id TEXT NOT NULL,
    at TEXT NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL)"""
_INDEXED = """CREATE TABLE events ("offset" INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL,
    at TEXT NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL);
    CREATE INDEX events_type ON events (type)"""
_INSERT = 'INSERT INTO events ("offset", id, at, type, data) VALUES (?, ?, ?, ?, ?)'


def _fresh(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def raw_loads(ctx: Context) -> tuple[int, float]:
    """``orjson.loads`` of every line, nothing else (the parse any validating import does)."""
    loads = orjson.loads
    count = 0
    start = time.perf_counter()
    for line in read_lines(ctx.recording):
        loads(line)
        count += 1
    return count, time.perf_counter() - start


def raw_sqlite(ctx: Context, batch: int, schema: str, *, parse: bool = False) -> tuple[int, float]:
    """Rows stored and seconds spent in ``executemany`` + ``COMMIT`` (only those timed);
    with ``parse``, ``orjson.loads`` of each batch's lines is timed too."""
    path = ctx.work / "baseline.db"
    _fresh(path)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.executescript(schema)
    spent = 0.0
    offset = 0
    rows: list[tuple[int, str, str, str, bytes]] = []
    lines: list[bytes] = []
    loads = orjson.loads

    def flush() -> float:
        start = time.perf_counter()
        for line in lines:
            loads(line)
        con.execute("BEGIN")
        con.executemany(_INSERT, rows)
        con.execute("COMMIT")
        return time.perf_counter() - start

    for line in read_lines(ctx.recording):
        at, type_, data = split_line(line.rstrip(b"\n"))
        rows.append((offset, hashlib.blake2b(line, digest_size=12).hexdigest(), at, type_, data))
        if parse:
            lines.append(line)
        offset += 1
        if len(rows) >= batch:
            spent += flush()
            rows = []
            lines = []
    if rows:
        spent += flush()
    con.close()
    _fresh(path)
    return offset, spent


def run(ctx: Context) -> list[Result]:
    recording = need("streams.recording", "import_recording", "read_batches")
    sqlite_backend = need("streams.backends.sqlite", "SQLiteLog")
    batch: int = getattr(recording, "BATCH_SIZE", 2_000)

    async def one_import(path: Path) -> tuple[int, float]:
        _fresh(path)
        log = await sqlite_backend.SQLiteLog.open(path)
        try:
            start = time.perf_counter()
            summary = await recording.import_recording(ctx.recording, log)
            spent = time.perf_counter() - start
        finally:
            await log.close()
        if summary.set_aside:
            first = summary.set_aside[0]
            ctx.notes.append(
                f"import set aside {len(summary.set_aside)} lines, e.g. line {first.line}: "
                f"{first.reason}"
            )
        return summary.imported, spent

    def parse_only() -> tuple[int, float]:
        start = time.perf_counter()
        count = sum(len(b.events) for b in recording.read_batches(ctx.recording, size=batch))
        return count, time.perf_counter() - start

    db = ctx.work / "imported.db"
    best_base = best_index = best_import = best_parse = best_full = best_loads = (0, float("inf"))
    for _ in range(ctx.repeat):  # interleaved, so noise hits both sides alike
        base = raw_sqlite(ctx, batch, _PLAIN)
        imp = asyncio.run(one_import(db))
        best_base = min(best_base, base, key=lambda x: x[1])
        best_import = min(best_import, imp, key=lambda x: x[1])
    best_parse_nogc = best_import_nogc = (0, float("inf"))
    for _ in range(max(1, ctx.repeat - 1)):
        best_index = min(best_index, raw_sqlite(ctx, batch, _INDEXED), key=lambda x: x[1])
        best_full = min(best_full, raw_sqlite(ctx, batch, _INDEXED, parse=True), key=lambda x: x[1])
        best_loads = min(best_loads, raw_loads(ctx), key=lambda x: x[1])
        best_parse = min(best_parse, parse_only(), key=lambda x: x[1])
        with gc_disabled():
            best_parse_nogc = min(best_parse_nogc, parse_only(), key=lambda x: x[1])
            best_import_nogc = min(
                best_import_nogc, asyncio.run(one_import(db)), key=lambda x: x[1]
            )
    ctx.imported_db = db
    mb = ctx.manifest.bytes / 2**20
    rows = [
        rate_row(
            "import",
            "tide log import (import_recording -> SQLiteLog)",
            best_import[0],
            best_import[1],
            best_base[0],
            best_base[1],
            "sqlite3.executemany, same rows, WAL",
            TARGET,
            notes=f"{mb / best_import[1]:,.0f} MB/s vs {mb / best_base[1]:,.0f} MB/s raw",
        ),
    ]
    info = [
        ("  parse only (read_batches, no storage)", best_parse),
        ("  parse only, gc.disable() (info)", best_parse_nogc),
        ("  import, gc.disable() (info)", best_import_nogc),
        ("  raw executemany + log's indexes (info)", best_index),
        ("  orjson.loads only, same lines (info)", best_loads),
        ("  raw indexed + parse-inclusive (info)", best_full),
    ]
    rows += [
        rate_row("import", metric, *best, *best_base, "sqlite3.executemany", 0.0)
        for metric, best in info
    ]
    rows.append(
        rate_row(
            "import",
            "  tide log import vs indexed + parse-inclusive (info)",
            *best_import,
            *best_full,
            "loads + indexed executemany",
            0.0,
        )
    )
    for row in rows[1:]:
        row.target, row.ok = "(info)", None
    return rows
