"""Start-up: what an offline command costs before it does anything, against importing the
libraries every command needs (issue 26, item 4).

Baseline: ``python -c "import typer, rich, orjson, yaml"`` in a fresh interpreter (the
command line's own libraries: no command can start cheaper). Subjects, each a fresh
interpreter running ``controller.cli.main`` as the ``tide`` script does: ``tide
--version``, and ``tide audit decisions`` on a small log (the golden ``tdm-budgets`` log,
123 records, so the answer itself costs next to nothing). Baseline and subjects are
interleaved, ``repeat`` rounds; the figure is the median of each (wall and CPU: user + sys
of the child), the ratio subject / baseline of the medians, the target ratio ≤ 1.5
(wall). Before this, every command imported every command's module (the Kubernetes
client, aiohttp, prometheus_client: ``tide --version`` took 1.3-1.5 s).

``python -m benchmarks.bench_startup [--repeat N]`` runs it alone (no recording needed).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import Context, Result, need

TARGET = 1.5
ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "replay" / "golden" / "tdm-budgets.jsonl"
BASELINE = "import typer, rich, orjson, yaml"
_TIDE = "import sys; sys.argv = ['tide', *sys.argv[1:]]; from controller.cli import main; main()"


def _small_log(work: Path) -> Path:
    runner = need("controller.simulate.runner", "save_log")
    recording = need("streams.recording", "read_recording")
    events = need("streams.events", "Event")
    path = work / "startup-small.db"
    path.unlink(missing_ok=True)
    found = [e for e in recording.read_recording(GOLDEN) if isinstance(e, events.Event)]
    runner.save_log(str(path), found)
    return path


def _once(code: str, *args: str) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of ``python -c code args`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, check=False, cwd=ROOT
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{code} {' '.join(args)}: exit {done.returncode}: {done.stderr!r}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(work: Path, repeat: int) -> dict[str, dict[str, list[float]]]:
    """Interleaved runs of the baseline and of each subject: their wall and CPU times."""
    db = _small_log(work)
    runs: dict[str, tuple[str, ...]] = {
        "baseline": (BASELINE,),
        "tide --version": (_TIDE, "--version"),
        "tide audit decisions": (_TIDE, "audit", "decisions", "--log", str(db)),
    }
    times: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in runs}
    for argv in runs.values():  # warm the file cache and the bytecode once
        _once(*argv)
    for _ in range(repeat):
        for name, argv in runs.items():
            wall, cpu = _once(*argv)
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
    return times


def rows(times: dict[str, dict[str, list[float]]]) -> list[Result]:
    """The table rows: each subject's median wall time against the baseline's."""
    base = times["baseline"]
    base_wall, base_cpu = statistics.median(base["wall"]), statistics.median(base["cpu"])
    out = []
    for name, seen in times.items():
        if name == "baseline":
            continue
        wall, cpu = statistics.median(seen["wall"]), statistics.median(seen["cpu"])
        ratio = wall / base_wall
        out.append(
            Result(
                "startup",
                f"{name} (median wall of {len(seen['wall'])})",
                wall * 1000,
                "ms",
                base_wall * 1000,
                f'python -c "{BASELINE}"',
                ratio,
                f"<= {TARGET}x",
                ratio <= TARGET,
                notes=(
                    f"CPU {cpu * 1000:,.0f} ms vs {base_cpu * 1000:,.0f} ms "
                    f"({cpu / base_cpu:.2f}x); wall range "
                    f"{min(seen['wall']) * 1000:,.0f}-{max(seen['wall']) * 1000:,.0f} ms"
                ),
                extra={k: list(v) for k, v in seen.items()},
            )
        )
    return out


def run(ctx: Context) -> list[Result]:
    return rows(measure(ctx.work, max(5, 3 * ctx.repeat)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tide start-up against its libraries' import")
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix=f"startup-{os.getpid()}-") as work:
        for row in rows(measure(Path(work), args.repeat)):
            print(
                f"{row.metric}: {row.value:,.0f} ms, baseline {row.baseline:,.0f} ms, "
                f"ratio {row.ratio:.2f} (target {row.target}); {row.notes}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
