"""`tide replay --verify --jobs N` (issue 26, item 3): wall time against one process.

``python -m benchmarks.bench_jobs [--nodes 200 --pods 6000 --minutes 60]`` (or
``python -m benchmarks.run --only jobs``, at the run's ``--nodes``/``--pods``) simulates a
generated day into a SQLite log (``tide simulate --log`` keeping a checkpoint every
``--every`` records; or ``--log DB``: an existing SQLite log, its checkpoints as its
writer kept them, e.g. the 1,000-node day's), then measures in one run, each command in
a fresh process:

* the wall time of ``tide replay LOG --verify`` (the serial check) and of ``--jobs 2``
  (best of ``--repeat``, interleaved):
  the ratio serial/parallel (target >= 1.7 on an otherwise idle 2-core machine; the
  machine this runs on may be shared, so the CPU is reported too);
* each segment's CPU in its own process (:func:`replay.segments.verify_segment` timed in
  a fresh interpreter per segment, ``--jobs 4``'s cuts) and the parent's part (planning
  and joining): the projection for 4 workers is the parent's part plus the slowest
  segment, and for the 1,000-node day the serial wall times that projected ratio.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import Context, Result
from benchmarks.day import CONFIG, DayScale, ensure_day
from benchmarks.generate import OUT_DIR

#: the ``tide`` script of this interpreter's environment
_TIDE = str(Path(sys.executable).with_name("tide"))
_SEGMENT = """
import sys, time
from replay.segments import verify_segment
from controller.cli.reading import plan_jobs
segments = plan_jobs(sys.argv[1], jobs=int(sys.argv[2]), chain=True)
start = time.process_time()
result = verify_segment(segments[int(sys.argv[3])])
assert not result.problems, result.problems
print(len(segments), time.process_time() - start)
"""


def _tide(*args: str) -> tuple[float, float]:
    """Wall and CPU (this child's and its children's, user + sys) of one tide command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([_TIDE, *args], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("identical"), done.stdout
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _segment_cpu(db: Path, jobs: int, index: int) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _SEGMENT, str(db), str(jobs), str(index)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.split()[-1])


def _simulate(recording: Path, db: Path, every: int) -> None:
    """The day simulated into a log, keeping a checkpoint every ``every`` records (at
    rest between two steps: each lies at a decision source boundary, so each can be cut
    at; a checkpoint ``tide log import`` keeps every so many records may fall between a
    cause and its decisions, and is then passed over)."""
    config = db.with_suffix(".yaml")
    config.write_text(CONFIG)
    env = {**os.environ, "TIDE_CHECKPOINT_RECORDS": str(every), "TIDE_CHECKPOINT_KEEP": "1000"}
    env["TIDE_CHECKPOINT_MINUTES"] = "0"
    args = ["simulate", str(recording), "-c", str(config), "--log", str(db)]
    subprocess.run(
        [_TIDE, *args, "--decisions", os.devnull], env=env, check=True, capture_output=True
    )


def rows(
    nodes: int,
    pods: int,
    minutes: int,
    every: int,
    work: Path,
    repeat: int = 2,
    log: Path | None = None,
) -> list[Result]:
    """Every row (see the module docstring); ``log``: measured on this SQLite log as its
    writer kept its checkpoints (e.g. the 1,000-node day's), instead of a day simulated."""
    from controller.cli.reading import plan_jobs

    if log is None:
        day = ensure_day(DayScale(nodes=nodes, pods=pods, minutes=minutes), OUT_DIR)
        db = work / "jobs.db"
        _simulate(Path(day.path), db, every)
    else:
        db = log
    runs = []
    for _ in range(repeat):  # interleaved, so that noise hits both alike; the best of each
        runs.append(
            (
                _tide("replay", str(db), "--verify"),
                _tide("replay", str(db), "--verify", "--jobs", "2"),
            )
        )
    serial_wall, serial_cpu = min(r[0] for r in runs)
    wall2, cpu2 = min(r[1] for r in runs)
    segments = plan_jobs(str(db), jobs=4, chain=True)
    cpus = [_segment_cpu(db, 4, i) for i in range(len(segments))]
    two = len(plan_jobs(str(db), jobs=2, chain=True))
    parent = max(0.0, cpu2 - sum(_segment_cpu(db, 2, i) for i in range(two)))
    projected = parent + max(cpus)
    bench = "jobs"
    scale = f"{nodes} nodes, {pods} pods, {minutes} min, a checkpoint every {every} records"
    if log is not None:
        scale = f"{log.name}, its checkpoints as kept"
    return [
        Result(
            bench,
            "replay --verify --jobs 2 wall",
            wall2,
            "s",
            baseline=serial_wall,
            baseline_name="replay --verify (one process) wall",
            ratio=serial_wall / wall2,
            target=">= 1.7x faster on an idle 2-core machine",
            ok=serial_wall / wall2 >= 1.7,
            notes=f"{scale}; CPU serial {serial_cpu:.1f} s, --jobs 2 {cpu2:.1f} s",
        ),
        Result(
            bench,
            "replay --verify --jobs 4 projected wall",
            projected,
            "s",
            baseline=serial_cpu,
            baseline_name="replay --verify (one process) CPU",
            ratio=serial_cpu / projected,
            target="the 1,000-node day <= 120 s with 4 workers (projected: serial / ratio)",
            notes=(
                f"{len(segments)} segments, CPU each "
                + ", ".join(f"{c:.1f}" for c in cpus)
                + f" s; parent (plan, spawn, join) {parent:.1f} s; "
                + (
                    f"this log with 4 workers: {projected:.0f} s"
                    if log is not None
                    else "the 1,000-node day's serial 334 s / ratio = "
                    f"{334 / (serial_cpu / projected):.0f} s"
                )
            ),
            extra={"segment_cpu": cpus, "parent_cpu": parent},
        ),
    ]


def run(ctx: Context) -> list[Result]:
    """The benchmark in ``benchmarks.run``: at the run's scale, 30 (quick: 15) minutes."""
    scale = ctx.manifest.scale
    minutes = 15 if ctx.quick else 30
    return rows(int(scale["nodes"]), int(scale["pods"]), minutes, 20_000, ctx.work, ctx.repeat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=6000)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--every", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--log", type=Path, help="an existing SQLite log, not a day simulated")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="jobs-", dir=OUT_DIR if OUT_DIR.exists() else None))
    try:
        scale = (args.nodes, args.pods, args.minutes, args.every)
        for row in rows(*scale, work, args.repeat, args.log):
            print(
                f"{row.metric}: {row.value:.2f} {row.unit} (baseline {row.baseline:.2f}: "
                f"{row.baseline_name}) ratio {row.ratio:.2f}  target {row.target}  [{row.notes}]"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
