"""Start-up: what an offline command costs before it does anything, against importing the
libraries every command needs (issue 26, item 4).

Baseline: ``python -c "import typer, rich, orjson, yaml"`` in a fresh interpreter (the
command line's own libraries: no command can start cheaper). Subjects, each a fresh
interpreter running ``controller.cli.main`` as the ``tide`` script does: ``tide
--version``, and ``tide audit decisions`` on a small log (the golden ``tdm-budgets`` log,
123 records, so the answer itself costs next to nothing). Baseline and subjects are
interleaved, ``repeat`` rounds; the figure is the median of each (wall and CPU: user + sys
of the child), the ratio subject / baseline of the medians, the target ratio ≤ 1.5
(wall).

Every child runs with its bytecode cached, as an installed tide runs (pip compiles a
wheel's modules when it installs them; the image does too): ``PYTHONDONTWRITEBYTECODE`` is
dropped from the children's environment and ``PYTHONPYCACHEPREFIX`` points at the run's
scratch directory, so the warm-up round writes the bytecode of the baseline's libraries
and of tide alike and every timed round reads it. A shell that exports
``PYTHONDONTWRITEBYTECODE=1`` (this machine's does) would otherwise compile tide's ~90
modules from source in every run of an editable install and none of the baseline's
(site-packages holds their bytecode): ``--no-bytecode`` measures that way.

Before issue 26, every command imported every command's module (the Kubernetes client,
aiohttp, prometheus_client: ``tide --version`` took 1.3-1.5 s).

``python -m benchmarks.bench_startup [--repeat N] [--no-bytecode]`` runs it alone (no
recording needed).
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


def child_env(work: Path, *, bytecode: bool = True) -> dict[str, str]:
    """The children's environment: bytecode cached under ``work`` (see the module
    docstring), or (``bytecode=False``) never written, so never read for tide's modules."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        return env
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env


def _once(code: str, *args: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU (user + sys) seconds of ``python -c code args`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, check=False, cwd=ROOT, env=env
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{code} {' '.join(args)}: exit {done.returncode}: {done.stderr!r}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(work: Path, repeat: int, *, bytecode: bool = True) -> dict[str, dict[str, list[float]]]:
    """Interleaved runs of the baseline and of each subject: their wall and CPU times."""
    db = _small_log(work)
    env = child_env(work, bytecode=bytecode)
    runs: dict[str, tuple[str, ...]] = {
        "baseline": (BASELINE,),
        "tide --version": (_TIDE, "--version"),
        "tide audit decisions": (_TIDE, "audit", "decisions", "--log", str(db)),
    }
    times: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in runs}
    for argv in runs.values():  # warm the file cache and the bytecode once
        _once(*argv, env=env)
    for _ in range(repeat):
        for name, argv in runs.items():
            wall, cpu = _once(*argv, env=env)
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
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="children write no bytecode (tide's modules compiled from source every run)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix=f"startup-{os.getpid()}-") as work:
        for row in rows(measure(Path(work), args.repeat, bytecode=not args.no_bytecode)):
            print(
                f"{row.metric}: {row.value:,.0f} ms, baseline {row.baseline:,.0f} ms, "
                f"ratio {row.ratio:.2f} (target {row.target}); {row.notes}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
