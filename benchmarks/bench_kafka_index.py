"""``tide audit timeline --node`` on a Kafka log 4x longer: the local subject index.

Two :mod:`benchmarks.day` recordings of one cluster (same nodes, pods and seed), one
``--minutes`` long and one ``--long-minutes`` long (by default the span that gives about
4x the records, "4x" below: the cluster's listing at the start is the same in both), are
each imported (``tide log import``) onto a topic of one tansu broker
(``tests/streams/tansu.py``, memory storage) with a ``checkpoints=`` file, so the
importing writer keeps the topic's subject index there
(``streams.backends.kafka_index``). Then ``tide audit timeline --node NODE`` runs as a
command (start-up included) on each log, through the index (the URL with the file)
and by a scan (the same topic without it), alternating, ``--repeat`` times. The figures
are the median CPU (user + sys of the command) and wall time; the target is the longer
log's cost through the index ≤ 1.3x the shorter one's (measured in the same run). The
outputs of the indexed and the scanning command are compared: they must be equal::

    .venv/bin/python -m benchmarks.bench_kafka_index --nodes 200 --pods 6000 --minutes 60 \
        --long-minutes 320
    .venv/bin/python -m benchmarks.run --only kafkaindex --quick
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
from dataclasses import dataclass
from pathlib import Path

import orjson

from benchmarks.common import Context, Result
from benchmarks.day import DayScale, ensure_day
from tests.streams.tansu import Broker, start_broker

TARGET = 1.3
TIDE = str(Path(sys.executable).parent / "tide")


@dataclass(frozen=True)
class Timed:
    """One command's cost and what it printed."""

    cpu: float
    wall: float
    out: bytes


def command(args: list[str]) -> Timed:
    """Run ``tide ARGS``: its CPU (user + sys), wall time and output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([TIDE, *args], capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"tide {' '.join(args)}: exit {done.returncode}: {done.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timed(cpu, wall, done.stdout)


def a_node(recording: Path) -> str:
    """The first node the recording lists (the same cluster in every span)."""
    with recording.open("rb") as lines:
        for line in lines:
            event = orjson.loads(line)
            data = event.get("data") or {}
            if data.get("resource") == "nodes":
                return str(data["object"]["metadata"]["name"])
    raise SystemExit(f"{recording}: no node")


def imported(broker: Broker, recording: Path, work: Path, name: str) -> tuple[str, str, int]:
    """``recording`` imported onto a fresh topic: (URL with the index file, URL without,
    records imported)."""
    url = broker.url(checkpoints=str(work / f"{name}.db"))
    command(["log", "import", str(recording), "--log", url])
    with recording.open("rb") as lines:
        count = sum(1 for _ in lines)
    return url, url.split("?", 1)[0], count


def measure(
    *, nodes: int, pods: int, minutes: int, long_minutes: int, repeat: int
) -> dict[str, list[Timed] | int | str]:
    """Import both spans and time the timeline on each (see the module docstring)."""
    short = ensure_day(DayScale(nodes=nodes, pods=pods, minutes=minutes))
    long = ensure_day(DayScale(nodes=nodes, pods=pods, minutes=long_minutes))
    factor = 4
    node = a_node(Path(short.path))
    found: dict[str, list[Timed] | int | str] = {"node": node}
    broker = start_broker()
    try:
        with tempfile.TemporaryDirectory(prefix="bench-kafka-index-") as tmp:
            logs = {}
            for label, manifest in (("1x", short), (f"{factor}x", long)):
                url, plain, count = imported(broker, Path(manifest.path), Path(tmp), label)
                logs[label] = (url, plain)
                found[f"{label} records"] = count
            for _ in range(repeat):
                for label, (url, plain) in logs.items():
                    for how, log in (("index", url), ("scan", plain)):
                        timed = command(["audit", "timeline", "--node", node, "--log", log])
                        runs = found.setdefault(f"{label} {how}", [])
                        assert isinstance(runs, list)
                        runs.append(timed)
            for label in logs:
                index, scan = found[f"{label} index"], found[f"{label} scan"]
                assert isinstance(index, list) and isinstance(scan, list)
                if index[0].out != scan[0].out:
                    raise SystemExit(f"{label}: the indexed timeline differs from the scan's")
    finally:
        broker.stop()
    return found


def _median(runs: object, clock: str) -> float:
    assert isinstance(runs, list)
    return float(statistics.median(getattr(t, clock) for t in runs))


def report(found: dict[str, list[Timed] | int | str], factor: int) -> list[str]:
    """The figures as lines."""
    long = f"{factor}x"
    short_n, long_n = found["1x records"], found[f"{long} records"]
    assert isinstance(short_n, int) and isinstance(long_n, int)
    lines = [
        f"node {found['node']}; records: 1x {short_n:,}, {long} {long_n:,} "
        f"({long_n / short_n:.2f}x)"
    ]
    for how in ("index", "scan"):
        for label in ("1x", long):
            runs = found[f"{label} {how}"]
            lines.append(
                f"{how:5s} {label:3s} CPU {_median(runs, 'cpu'):.2f} s, "
                f"wall {_median(runs, 'wall'):.2f} s"
            )
        ratio = _median(found[f"{long} {how}"], "cpu") / _median(found[f"1x {how}"], "cpu")
        wall = _median(found[f"{long} {how}"], "wall") / _median(found[f"1x {how}"], "wall")
        lines.append(f"{how:5s} {long} / 1x: CPU {ratio:.2f}x, wall {wall:.2f}x")
    return lines


def run(ctx: Context) -> list[Result]:
    """The row of ``benchmarks.run``: the CPU ratio through the index, 4x log / 1x."""
    minutes, long_minutes = (15, 130) if ctx.quick else (60, 320)
    found = measure(
        nodes=200, pods=6000, minutes=minutes, long_minutes=long_minutes, repeat=ctx.repeat
    )
    ratio = _median(found["4x index"], "cpu") / _median(found["1x index"], "cpu")
    scan = _median(found["4x scan"], "cpu") / _median(found["1x scan"], "cpu")
    return [
        Result(
            "kafkaindex",
            f"audit timeline --node on Kafka, {long_minutes} min log / {minutes} min (CPU)",
            value=ratio,
            unit="x",
            target=f"<= {TARGET}",
            ok=ratio <= TARGET,
            notes=f"scan without the index: {scan:.2f}x; " + "; ".join(report(found, 4)),
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=6_000)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--long-minutes", type=int, default=320)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("COLUMNS", "120")
    found = measure(
        nodes=args.nodes,
        pods=args.pods,
        minutes=args.minutes,
        long_minutes=args.long_minutes,
        repeat=args.repeat,
    )
    print("\n".join(report(found, 4)))


if __name__ == "__main__":
    main()
