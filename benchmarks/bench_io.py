"""Import and fold against fair ceilings, on the CPU clock, interleaved, median and range.

The import row of :mod:`benchmarks.bench_import` compares ``tide log import`` with a
plain insert that neither parses nor keeps the log's indexes, which no importer can
reach. Here the yardstick is fair: **ceiling** = ``orjson.loads`` of each line, its
content id hashed, and the row inserted into the *log's own schema with its own
indexes* (created by :class:`streams.backends.sqlite.SQLiteLog` itself, same pragmas)
in one transaction. The plain insert (no parse, no indexes) is reported beside it.

The fold row times what ``tide replay`` and ``tide state`` really run: the imported
log read a page at a time (:class:`streams.paging.LogReader`) and every record applied
to a fresh :class:`projections.world.World` with the collector paced
(:func:`streams.gcpause.paced`), against a raw ``SELECT data`` + ``orjson.loads`` of the
same rows.

Every repeat runs subject and baselines back to back (interleaved); times are
``time.process_time`` (the whole process, import's parse thread included) beside the
wall clock. ``python -m benchmarks.bench_io RECORDING.jsonl [--repeat 5] [--json OUT]``
(a recording from ``python -m benchmarks.day`` or ``python -m benchmarks.generate``).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import orjson

from benchmarks.common import Timing, clock, fresh_db, read_lines, split_line, summary
from projections.world import World
from streams.backends.sqlite import SQLiteLog
from streams.gcpause import paced
from streams.paging import LogReader
from streams.recording import import_recording

_PLAIN = """CREATE TABLE events ("offset" INTEGER PRIMARY KEY, id TEXT NOT NULL,
    at TEXT NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL)"""
_FAIR = 'INSERT INTO events ("offset", id, at, type, cause, v, data) VALUES (?, ?, ?, ?, ?, 1, ?)'
_PLAIN_INSERT = 'INSERT INTO events ("offset", id, at, type, data) VALUES (?, ?, ?, ?, ?)'


def tide_import(recording: Path, db: Path) -> Timing:
    """``tide log import``: :func:`streams.recording.import_recording` into a fresh log."""
    fresh_db(db)

    async def run() -> int:
        log = await SQLiteLog.open(db)
        try:
            return (await import_recording(recording, log)).imported
        finally:
            await log.close()

    return clock(lambda: asyncio.run(run()))


def fair_ceiling(recording: Path, db: Path) -> Timing:
    """Parse each line, hash its id, insert into the log's own schema, one transaction."""
    fresh_db(db)
    asyncio.run(_create(db))  # the schema, indexes and pragmas of SQLiteLog itself
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA synchronous=NORMAL")
    loads = orjson.loads

    def run() -> int:
        rows = []
        for offset, line in enumerate(read_lines(recording)):
            record = loads(line)
            data = orjson.dumps(record.get("data"))
            ident = record.get("id") or hashlib.blake2b(data, digest_size=12).hexdigest()
            rows.append((offset, ident, record["at"], record["type"], record.get("cause"), data))
        con.execute("BEGIN")
        con.executemany(_FAIR, rows)
        con.execute("COMMIT")
        return len(rows)

    try:
        return clock(run)
    finally:
        con.close()


def plain_insert(recording: Path, db: Path) -> Timing:
    """No parse, no indexes: rows sliced from the line, one transaction."""
    fresh_db(db)
    con = sqlite3.connect(db, isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=NORMAL")
    con.executescript(_PLAIN)
    rows = []
    for offset, line in enumerate(read_lines(recording)):
        at, type_, data = split_line(line.rstrip(b"\n"))
        rows.append((offset, hashlib.blake2b(line, digest_size=12).hexdigest(), at, type_, data))

    def run() -> int:
        con.execute("BEGIN")
        con.executemany(_PLAIN_INSERT, rows)
        con.execute("COMMIT")
        return len(rows)

    try:
        return clock(run)
    finally:
        con.close()


async def _create(db: Path) -> None:
    log = await SQLiteLog.open(db)
    await log.close()


def fold_from_sqlite(db: Path) -> Timing:
    """What ``tide replay``/``tide state`` run: paged read + ``World.apply``, paced."""

    def run() -> int:
        world, count = World(), 0
        with LogReader(lambda: SQLiteLog.open(db)) as log:
            for event in paced(log.records()):
                world.apply(event)
                count += 1
        return count

    return clock(run)


def raw_select(db: Path) -> Timing:
    """``SELECT data`` of every row in offset order + ``orjson.loads`` of each."""

    def run() -> int:
        con = sqlite3.connect(db)
        loads, count = orjson.loads, 0
        for (data,) in con.execute('SELECT data FROM events ORDER BY "offset"'):
            loads(data)
            count += 1
        con.close()
        return count

    return clock(run)


def measure(recording: Path, work: Path, *, repeat: int) -> dict[str, Any]:
    """Every row, ``repeat`` interleaved rounds; ratios are rate ratios of CPU medians."""
    work.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[Timing]] = {
        k: [] for k in ("import", "ceiling", "plain", "fold", "select")
    }
    imported = work / "imported.db"
    for _ in range(repeat):
        runs["import"].append(tide_import(recording, imported))
        runs["ceiling"].append(fair_ceiling(recording, work / "ceiling.db"))
        runs["plain"].append(plain_insert(recording, work / "plain.db"))
        runs["fold"].append(fold_from_sqlite(imported))
        runs["select"].append(raw_select(imported))
    out = {name: summary(timings) for name, timings in runs.items()}

    def ratio(subject: str, base: str) -> float:
        return float(out[base]["cpu_median"] / out[subject]["cpu_median"])

    out["ratios"] = {
        "import/ceiling": ratio("import", "ceiling"),
        "import/plain": ratio("import", "plain"),
        "ceiling/plain": ratio("ceiling", "plain"),
        "fold/select": ratio("fold", "select"),
    }
    for name in ("ceiling", "plain"):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{work / name}.db{suffix}").unlink(missing_ok=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("recording", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / "out" / "io")
    args = parser.parse_args(argv)
    out = measure(args.recording, args.work, repeat=args.repeat)
    for name, row in out.items():
        if name == "ratios":
            continue
        low, high = row["cpu_range"]
        print(
            f"{name:8} {row['records']:>9,} rec  cpu {row['cpu_median']:7.3f} s "
            f"[{low:.3f}-{high:.3f}]  wall {row['wall_median']:7.3f} s  "
            f"{row['per_cpu_second']:>10,.0f} rec/cpu-s"
        )
    for name, value in out["ratios"].items():
        print(f"{name:15} {value:.2f}")
    if args.json:
        args.json.write_bytes(orjson.dumps(out, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
