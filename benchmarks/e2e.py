"""The end-to-end rows: ``tide simulate`` and ``tide replay --verify`` of a generated day.

Each command runs in its own subprocess, timed with ``os.wait4``: wall clock, CPU (user +
system of that child alone, so other load on a shared machine counts less) and peak RSS
(``ru_maxrss``). Rows give records per CPU-second, × real time (virtual span over CPU
time) and peak RSS, each the median of ``repeat`` runs with the range beside it.

Beside the day (:mod:`benchmarks.day`), the scale curve: the same span at several
cluster sizes (per-record CPU should stay flat), and the memory property: the same
cluster over a span ``LONGER`` times as long must peak at ≤ 1.3× the RSS (memory is
O(cluster), not O(log)).

``python -m benchmarks.e2e [--quick] [--nodes 1000 --pods 30000 --minutes 120]
[--curve 100,300,1000] [--repeat 3] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from benchmarks.common import Context, Result
from benchmarks.day import CONFIG, DayScale, ensure_day

TIDE = [sys.executable, "-c", "from controller.cli import main; main()"]
LONGER = 4  # the memory property's span multiplier
RSS_GROWTH = 1.3  # ... and the most its peak RSS may grow


@dataclass(slots=True)
class Run:
    """One timed subprocess."""

    wall: float
    cpu: float
    rss: int  # bytes
    out: str


def timed(cmd: list[str], *, cwd: Path | None = None) -> Run:
    """Run ``cmd``; its wall clock, CPU seconds and peak RSS (raises if it fails)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=cwd, text=True
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{out[-2000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out)


def spread(values: list[float]) -> dict[str, float]:
    """Median and range."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _remove_log(db: Path) -> None:
    """Delete a SQLite log with its WAL mode's ``-wal`` and ``-shm`` files, which outlive
    the run's connections, so the benchmark leaves nothing behind."""
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        path.unlink(missing_ok=True)


def day_runs(day: DayScale, work: Path, repeat: int) -> dict[str, Any]:
    """Simulate ``day`` onto a fresh SQLite log, then replay --verify it; ``repeat`` times,
    the two interleaved. Returns per-command medians and ranges."""
    manifest = ensure_day(day, work.parent)
    config = work / "day.yaml"
    config.write_text(CONFIG)
    span = day.minutes * 60.0
    runs: dict[str, list[Run]] = {"simulate": [], "replay": []}
    records = 0
    for i in range(repeat):
        db = work / f"{day.name}-{i}.db"
        _remove_log(db)
        args = ["simulate", manifest.path, "--config", str(config), "--log", f"sqlite:///{db}"]
        sim = timed([*TIDE, *args, "--decisions", str(work / "decisions.jsonl")])
        runs["simulate"].append(sim)
        runs["replay"].append(timed([*TIDE, "replay", str(db), "--verify"]))
        records = _count(db)
        _remove_log(db)
    out: dict[str, Any] = {"scale": day.name, "inputs": manifest.lines, "records": records}
    for name, done in runs.items():
        cpu = [r.cpu for r in done]
        n = manifest.lines if name == "simulate" else records
        out[name] = {
            "cpu_s": spread(cpu),
            "wall_s": spread([r.wall for r in done]),
            "rss_mib": spread([r.rss / 2**20 for r in done]),
            "records_per_cpu_s": n / statistics.median(cpu),
            "x_real_time": span / statistics.median(cpu),
            "us_per_record": 1e6 * statistics.median(cpu) / max(1, n),
        }
    return out


def _count(db: Path) -> int:
    import sqlite3

    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM events").fetchone()[0])


def rows(ctx: Context) -> list[Result]:
    """The end-to-end rows for ``benchmarks.run`` (``e2e``)."""
    day = DayScale(nodes=100, pods=3_000, minutes=30) if ctx.quick else DayScale(minutes=120)
    found = day_runs(day, ctx.work, ctx.repeat)
    results = []
    for name in ("simulate", "replay"):
        figure = found[name]
        results.append(
            Result(
                "e2e",
                f"{name} of {day.name}",
                value=figure["records_per_cpu_s"],
                unit="records/CPU-s",
                target="day ≤ 2 min CPU (replay), ≤ 4 min (simulate)",
                notes=f"{figure['x_real_time']:,.0f}× real time, "
                f"peak RSS {figure['rss_mib']['median']:,.0f} MiB",
                extra=figure,
            )
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="100 nodes, 30 minutes")
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--pods", type=int, help="default: 30 per node")
    parser.add_argument("--minutes", type=int, default=120)
    parser.add_argument("--curve", default="", help="node counts for the scale curve")
    parser.add_argument("--memory", action="store_true", help=f"the {LONGER}× span property")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / "out" / "e2e")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.quick:
        args.nodes, args.minutes = 100, 30
    sizes = [int(n) for n in args.curve.split(",") if n] or [args.nodes]
    found: dict[str, Any] = {"curve": []}
    for nodes in sizes:
        day = DayScale(nodes=nodes, pods=args.pods or nodes * 30, minutes=args.minutes)
        figure = day_runs(day, args.work, args.repeat)
        found["curve"].append(figure)
        _print(figure)
    if args.memory:
        nodes = sizes[0]
        long = DayScale(nodes=nodes, pods=args.pods or nodes * 30, minutes=args.minutes * LONGER)
        figure = day_runs(long, args.work, args.repeat)
        _print(figure)
        base = found["curve"][0]
        growth = {
            name: figure[name]["rss_mib"]["median"] / base[name]["rss_mib"]["median"]
            for name in ("simulate", "replay")
        }
        found["memory"] = {"longer": figure, "rss_growth": growth, "limit": RSS_GROWTH}
        for name, g in growth.items():
            verdict = "ok" if g <= RSS_GROWTH else "FAILS"
            print(f"{name}: {LONGER}× the span, {g:.2f}× the peak RSS ({verdict})")
    if args.json:
        args.json.write_bytes(orjson.dumps(found, option=orjson.OPT_INDENT_2))
    return 0


def _print(figure: dict[str, Any]) -> None:
    print(f"{figure['scale']}: {figure['inputs']:,} inputs, {figure['records']:,} records")
    for name in ("simulate", "replay"):
        f = figure[name]
        cpu, rss = f["cpu_s"], f["rss_mib"]
        print(
            f"  {name:8} CPU {cpu['median']:7.1f} s [{cpu['min']:.1f}-{cpu['max']:.1f}]"
            f"  wall {f['wall_s']['median']:7.1f} s  peak RSS {rss['median']:6.0f} MiB"
            f"  {f['records_per_cpu_s']:8,.0f} rec/CPU-s  {f['us_per_record']:6.0f} µs/rec"
            f"  {f['x_real_time']:6.0f}× real time",
            flush=True,
        )


if __name__ == "__main__":
    raise SystemExit(main())
