"""Run tide's benchmarks: ``python -m benchmarks.run [--quick] [--only import,fold,...]``.

Prints a table and writes ``benchmarks/out/results.json``. Each figure is reported
beside a raw baseline measured in the same run (the machines are shared and noisy, so
the ratio is the figure to read). A benchmark whose code is not in the tree yet is
reported as ``skipped: <module> not available yet``. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

import orjson

from benchmarks import (
    bench_checkpoints,
    bench_fold,
    bench_fullpreempt,
    bench_import,
    bench_jobs,
    bench_kafka,
    bench_kafka_index,
    bench_policy,
    bench_preempt,
    bench_pressure,
    bench_record,
    bench_report,
    bench_rescheduling,
    bench_startup,
    bench_tdm,
    e2e,
    rss,
)
from benchmarks.common import Context, Result, Skip, table
from benchmarks.generate import OUT_DIR, SCALES, Manifest, ensure_recording

BENCHES: dict[str, Callable[[Context], list[Result]]] = {
    "import": bench_import.run,
    "fold": bench_fold.run,
    "rss": rss.run,
    "policy": bench_policy.run,
    "tdm": bench_tdm.run,
    "pressure": bench_pressure.run,
    "preempt": bench_preempt.run,
    "fullpreempt": bench_fullpreempt.run,
    "record": bench_record.run,
    "rescheduling": bench_rescheduling.run,
    "e2e": e2e.rows,
    "kafka": bench_kafka.run,
    "kafkaindex": bench_kafka_index.run,
    "startup": bench_startup.run,
    "checkpoints": bench_checkpoints.run,
    "jobs": bench_jobs.run,
    "report": bench_report.run,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tide benchmarks (see benchmarks/README.md)")
    parser.add_argument("--nodes", type=int, help="nodes in the recording (default 5,000)")
    parser.add_argument("--pods", type=int, help="pods in the recording (default 150,000)")
    parser.add_argument("--pending", type=int, help="Pending pods (default 1,000)")
    parser.add_argument("--seed", type=int, help="generator seed")
    parser.add_argument(
        "--quick", action="store_true", help="small recording (200 nodes / 6,000 pods), best of 3"
    )
    parser.add_argument("--only", default="", help=f"comma list of {','.join(BENCHES)}")
    parser.add_argument(
        "--repeat", type=int, help="repetitions, best kept (default 3 with --quick, 2 otherwise)"
    )
    parser.add_argument("--out", type=Path, default=OUT_DIR / "results.json")
    args = parser.parse_args(argv)

    only = [name.strip() for name in args.only.split(",") if name.strip()] or list(BENCHES)
    unknown = [name for name in only if name not in BENCHES]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHES)}")
    scale = SCALES["small" if args.quick else "full"]
    changes = {
        k: getattr(args, k)
        for k in ("nodes", "pods", "pending", "seed")
        if getattr(args, k) is not None
    }
    scale = replace(scale, **changes)
    repeat = args.repeat or (3 if args.quick else 2)

    started = time.perf_counter()
    manifest = ensure_recording(scale)
    recording = Path(manifest.path)
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    # private to this run (runs may overlap): a fresh temporary directory, removed at the end
    work = Path(tempfile.mkdtemp(prefix=f"work-{os.getpid()}-", dir=OUT_DIR))
    try:
        return _run(args, only, repeat, manifest, recording, work, started)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(
    args: argparse.Namespace,
    only: list[str],
    repeat: int,
    manifest: Manifest,
    recording: Path,
    work: Path,
    started: float,
) -> int:
    ctx = Context(manifest, recording, work, repeat, args.quick)
    print(
        f"recording {recording.name}: {manifest.lines:,} events, "
        f"{manifest.bytes / 2**20:,.0f} MiB, {manifest.pods_final:,} pods "
        f"(~{manifest.pod_bytes_mean:,.0f} B each), {manifest.scale['nodes']:,} nodes; "
        f"best of {repeat}",
        flush=True,
    )
    results: list[Result] = []
    for name in only:
        t0 = time.perf_counter()
        print(f"[{name}] running ...", flush=True)
        try:
            rows = BENCHES[name](ctx)
        except Skip as exc:
            rows = [Result(name, "-", skipped=str(exc))]
        except Exception as exc:  # a benchmark that breaks must not hide the others
            traceback.print_exc()
            rows = [Result(name, "-", skipped=f"error: {type(exc).__name__}: {exc}")]
        for row in rows:
            print(
                f"[{name}] {row.metric}: "
                + (
                    f"skipped: {row.skipped}"
                    if row.skipped
                    else f"{row.value:,.4g} {row.unit}"
                    + (f" ratio {row.ratio:.2f}" if row.ratio is not None else "")
                ),
                flush=True,
            )
        print(f"[{name}] done in {time.perf_counter() - t0:,.1f} s", flush=True)
        results.extend(rows)
        gc.collect()

    print()
    print(table(results))
    for note in ctx.notes:
        print(f"note: {note}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(
        orjson.dumps(
            {
                "recording": asdict(manifest),
                "repeat": repeat,
                "python": sys.version.split()[0],
                "machine": platform.platform(),
                "seconds": round(time.perf_counter() - started, 1),
                "results": [r.as_json() for r in results],
                "notes": ctx.notes,
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
