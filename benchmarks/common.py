"""What the benchmarks share: results, timing, optional imports, RSS, the table."""

from __future__ import annotations

import gc
import importlib
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.generate import Manifest

#: lines of a canonical recording line: ``{"at":"<20 chars>","data":{...},"type":"..."}``
_DATA_START = len(b'{"at":"2026-11-21T20:00:00Z","data":')


class Skip(Exception):
    """A benchmark cannot run yet (its code is not in the tree); the message says why."""


@dataclass(slots=True)
class Result:
    """One row of the results table.

    ``value`` is the measured figure (higher is better when ``unit`` ends in ``/s``),
    ``baseline`` the raw figure measured in the same run, ``ratio`` = value / baseline
    for rates (baseline / value would be misleading for times, so times carry no ratio
    unless it says otherwise), ``target`` a human string and ``ok`` whether it is met.
    """

    bench: str
    metric: str
    value: float | None = None
    unit: str = ""
    baseline: float | None = None
    baseline_name: str = ""
    ratio: float | None = None
    target: str = ""
    ok: bool | None = None
    skipped: str = ""
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "", {})}


@dataclass(slots=True)
class Context:
    """State shared by the benchmarks of one run."""

    manifest: Manifest
    recording: Path
    work: Path  # scratch directory for databases
    repeat: int
    quick: bool
    imported_db: Path | None = None  # a SQLite log holding the whole recording
    world: Any = None  # the folded World, kept for the policy and pressure benchmarks
    notes: list[str] = field(default_factory=list)


def need(module: str, *names: str) -> ModuleType:
    """Import ``module`` (and check ``names`` exist in it), or raise :class:`Skip`."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or module
        if missing != module and not missing.startswith(module):
            raise Skip(f"{module} not available yet ({missing} missing)") from None
        raise Skip(f"{module} not available yet") from None
    for name in names:
        if not hasattr(mod, name):
            raise Skip(f"{module}.{name} not available yet")
    return mod


def best_of(n: int, fn: Callable[[], float]) -> float:
    """The smallest of ``n`` timings ``fn`` returns (seconds)."""
    return min(fn() for _ in range(max(1, n)))


@contextmanager
def gc_disabled() -> Iterator[None]:
    """Cyclic GC off for the block (to show how much of a figure is the collector's)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def read_lines(path: Path, limit: int | None = None) -> Iterator[bytes]:
    """The recording's lines (with their newline), streamed."""
    with path.open("rb", buffering=1 << 20) as stream:
        for n, line in enumerate(stream):
            if limit is not None and n >= limit:
                return
            yield line


def split_line(line: bytes) -> tuple[str, str, bytes]:
    """``(at, type, data bytes)`` of a canonical generator line, by slicing (no parse)."""
    end = line.rindex(b',"type":"')
    type_ = line[end + 9 : line.rindex(b'"')].decode()
    data_end = end
    id_at = line.rfind(b',"id":"', 0, end)
    if id_at > 0:
        data_end = id_at
    return line[7:27].decode(), type_, line[_DATA_START:data_end]


def proc_status() -> dict[str, int]:
    """VmRSS / VmHWM of this process in bytes (Linux ``/proc/self/status``)."""
    out: dict[str, int] = {}
    with open("/proc/self/status") as status:
        for row in status:
            key, _, rest = row.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0]) * 1024
    return out


def rate_row(
    bench: str,
    metric: str,
    count: int,
    seconds: float,
    base_count: int,
    base_seconds: float,
    baseline_name: str,
    target: float,
    *,
    notes: str = "",
    unit: str = "events/s",
) -> Result:
    value = count / seconds
    baseline = base_count / base_seconds
    ratio = value / baseline
    return Result(
        bench,
        metric,
        value,
        unit,
        baseline,
        baseline_name,
        ratio,
        f"ratio >= {target}",
        ratio >= target,
        notes=notes,
        extra={
            "count": count,
            "seconds": round(seconds, 4),
            "baseline_count": base_count,
            "baseline_seconds": round(base_seconds, 4),
        },
    )


def human(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if unit == "B":
        for suffix, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if abs(value) >= size:
                return f"{value / size:,.2f} {suffix}"
        return f"{value:,.0f} B"
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 1:
        text = f"{value:,.2f}"
    else:
        text = f"{value:.4g}"
    return f"{text} {unit}".strip()


def table(results: list[Result]) -> str:
    """A plain-text table of the results."""
    headers = ["bench", "metric", "value", "baseline (same run)", "ratio", "target", "ok"]
    rows: list[list[str]] = []
    for r in results:
        if r.skipped:
            rows.append([r.bench, r.metric, f"skipped: {r.skipped}", "", "", r.target, ""])
            continue
        base = ""
        if r.baseline is not None:
            base = f"{human(r.baseline, r.unit)} ({r.baseline_name})"
        ok = "" if r.ok is None else ("yes" if r.ok else "NO")
        ratio = "" if r.ratio is None else f"{r.ratio:.2f}"
        rows.append([r.bench, r.metric, human(r.value, r.unit), base, ratio, r.target, ok])
    widths = [
        max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
        for i, h in enumerate(headers)
    ]
    lines = [" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("-+-".join("-" * w for w in widths))
    lines += [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


Timing = tuple[int, float, float]  # records, CPU seconds, wall seconds


def fresh_db(path: Path) -> None:
    """Remove a SQLite file and its companions (WAL, shared memory, writer lock)."""
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def clock(fn: Callable[[], int]) -> Timing:
    """``fn``'s record count with its CPU and wall seconds, after a full collection."""
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    count = fn()
    return count, time.process_time() - cpu, time.perf_counter() - wall


def summary(runs: list[Timing]) -> dict[str, Any]:
    """Median and range of interleaved runs of one row, on the CPU clock (wall beside)."""
    cpu = [r[1] for r in runs]
    wall = [r[2] for r in runs]
    return {
        "records": runs[0][0],
        "cpu_median": statistics.median(cpu),
        "cpu_range": [min(cpu), max(cpu)],
        "wall_median": statistics.median(wall),
        "per_cpu_second": runs[0][0] / statistics.median(cpu),
    }
