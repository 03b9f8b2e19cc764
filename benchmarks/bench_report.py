"""``tide report --from/--to`` of a range near a log's end, on a short and a longer log of
the same cluster: with the log's checkpoints, and on a copy without them (the fold from
offset 0), CPU of the whole command (user + sys, start-up included), interleaved.

``python -m benchmarks.bench_report SHORT.db LONG.db [--minutes 30] [--rounds 2]``: the range
is the last ``--minutes`` of log time of each (its latest record's time back). Prints one
row per run and the ratios, and checks the page is the same bytes with and without
checkpoints (the log's path in the title aside).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

from streams.events import format_time, parse_time

TIDE = str(Path(sys.executable).with_name("tide"))


def _last_time(db: Path) -> datetime:
    """The latest record time of the SQLite log ``db`` (records are not in time order: the
    last thousand are looked at)."""
    with sqlite3.connect(db) as con:
        rows = con.execute('SELECT at FROM events ORDER BY "offset" DESC LIMIT 1000').fetchall()
    return max(parse_time(row[0]) for row in rows)


def _bare(db: Path) -> Path:
    """A copy of ``db`` with no checkpoints (made once)."""
    copy = db.with_name(db.stem + "-none.db")
    if not copy.exists():
        shutil.copyfile(db, copy)
        with sqlite3.connect(copy) as con:
            con.execute("DELETE FROM checkpoints_at")
            con.execute("DELETE FROM checkpoints")
    return copy


def _run(db: Path, since: str, until: str, out: Path) -> tuple[float, float]:
    """(CPU, wall) seconds of one ``tide report``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    args = [TIDE, "report", str(db), "--out", str(out), "--from", since, "--to", until]
    subprocess.run(args, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("short", type=Path)
    parser.add_argument("long", type=Path)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    ns = parser.parse_args()
    ranges = {}
    for db in (ns.short, ns.long):
        end = _last_time(db)
        ranges[db] = (format_time(end - timedelta(minutes=ns.minutes)), format_time(end))
    cpu: dict[tuple[str, str], list[float]] = {}
    for _ in range(ns.rounds):
        for db, label in ((ns.short, "short"), (ns.long, "long")):
            since, until = ranges[db]
            for variant, path in (("checkpoints", db), ("none", _bare(db))):
                out = Path(f"/tmp/bench-report-{label}-{variant}.html")
                took, wall = _run(path, since, until, out)
                cpu.setdefault((label, variant), []).append(took)
                print(f"{label:5} {variant:11} {path}: CPU {took:.2f} s, wall {wall:.2f} s")
    for label in ("short", "long"):
        pages = [
            Path(f"/tmp/bench-report-{label}-{v}.html").read_text(encoding="utf-8")
            for v in ("checkpoints", "none")
        ]
        db = ns.short if label == "short" else ns.long
        same = pages[0] == pages[1].replace(str(_bare(db)), str(db))
        print(f"{label}: page with checkpoints == page without: {same}")
    for variant in ("checkpoints", "none"):
        short, long = min(cpu[("short", variant)]), min(cpu[("long", variant)])
        print(f"{variant}: long/short = {long / short:.2f} (best CPU {long:.2f} / {short:.2f} s)")


if __name__ == "__main__":
    main()
