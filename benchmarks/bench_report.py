"""``tide report --from/--to`` of a range near a log's end, on a short and a longer log of
the same cluster: with the log's checkpoints, and on a copy without them (the fold from
offset 0), CPU of the whole command (user + sys, start-up included), interleaved.

``python -m benchmarks.bench_report SHORT.db LONG.db [--minutes 30] [--rounds 2]``: the range
is the last ``--minutes`` of log time of each (its latest record's time back). Prints one
row per run and the ratios, and checks the page is the same bytes with and without
checkpoints (the log's path in the title aside). ``python -m benchmarks.run --only report``
simulates the two logs itself (:func:`run`).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

from benchmarks.common import Context, Result
from benchmarks.day import CONFIG, DayScale, ensure_day
from benchmarks.generate import OUT_DIR
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


def measure(short: Path, long: Path, minutes: float, rounds: int) -> dict[str, float]:
    """The best CPU of each (log, variant) over ``rounds`` interleaved rounds, by
    ``short``/``long`` + ``-checkpoints``/``-none``; raises if a page differs."""
    ranges = {}
    for db in (short, long):
        end = _last_time(db)
        ranges[db] = (format_time(end - timedelta(minutes=minutes)), format_time(end))
    cpu: dict[str, list[float]] = {}
    for _ in range(rounds):
        for db, label in ((short, "short"), (long, "long")):
            since, until = ranges[db]
            for variant, path in (("checkpoints", db), ("none", _bare(db))):
                out = Path(f"/tmp/bench-report-{label}-{variant}.html")
                took, wall = _run(path, since, until, out)
                cpu.setdefault(f"{label}-{variant}", []).append(took)
                print(f"{label:5} {variant:11} {path}: CPU {took:.2f} s, wall {wall:.2f} s")
    for db, label in ((short, "short"), (long, "long")):
        pages = [
            Path(f"/tmp/bench-report-{label}-{v}.html").read_text() for v in ("checkpoints", "none")
        ]
        if pages[0] != pages[1].replace(str(_bare(db)), str(db)):
            raise SystemExit(f"{label}: the page with checkpoints differs from the page without")
    return {key: min(values) for key, values in cpu.items()}


def _simulate(minutes: int, nodes: int, pods: int, work: Path) -> Path:
    """A generated day of ``minutes`` simulated into a SQLite log (``tide simulate --log``,
    keeping checkpoints at the default interval)."""
    day = ensure_day(DayScale(nodes=nodes, pods=pods, minutes=minutes), OUT_DIR)
    config, db = work / "config.yaml", work / f"report-{minutes}m.db"
    config.write_text(CONFIG)
    args = [TIDE, "simulate", day.path, "-c", str(config), "--log", f"sqlite:///{db}"]
    subprocess.run([*args, "--decisions", os.devnull], check=True, capture_output=True)
    return db


def run(ctx: Context) -> list[Result]:
    """The row in ``benchmarks.run``: at the run's scale, the last 30 minutes of an hour and
    of six hours (quick: 10 minutes of 20 and of 120)."""
    scale = ctx.manifest.scale
    nodes, pods = int(scale["nodes"]), int(scale["pods"])
    short_m, minutes = (20, 10) if ctx.quick else (60, 30)
    short = _simulate(short_m, nodes, pods, ctx.work)
    long = _simulate(6 * short_m, nodes, pods, ctx.work)
    best = measure(short, long, minutes, ctx.repeat)
    ratio = best["long-checkpoints"] / best["short-checkpoints"]
    before = best["long-none"] / best["short-none"]
    return [
        Result(
            "report",
            f"report --from/--to, last {minutes} min, {6 * short_m} vs {short_m} min log CPU",
            best["long-checkpoints"],
            "s",
            baseline=best["short-checkpoints"],
            baseline_name=f"the same on the {short_m}-min log",
            ratio=ratio,
            target="<= 1.3x",
            ok=ratio <= 1.3,
            notes=f"{nodes} nodes, {pods} pods; without checkpoints {before:.2f}x "
            f"({best['long-none']:.1f} / {best['short-none']:.1f} s); same pages",
            extra=best,
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("short", type=Path)
    parser.add_argument("long", type=Path)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rounds", type=int, default=2)
    ns = parser.parse_args()
    best = measure(ns.short, ns.long, ns.minutes, ns.rounds)
    print("short, long: the page with checkpoints == the page without")
    for variant in ("checkpoints", "none"):
        short, long = best[f"short-{variant}"], best[f"long-{variant}"]
        print(f"{variant}: long/short = {long / short:.2f} (best CPU {long:.2f} / {short:.2f} s)")


if __name__ == "__main__":
    main()
