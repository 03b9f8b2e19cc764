"""Peak RSS of the folded state, measured in a fresh subprocess per mode.

``python -m benchmarks.rss tide RECORDING`` folds the recording into a ``World`` and
prints, as JSON: the RSS after imports (``base``), the RSS after the fold with the
world alive and a ``gc.collect()`` (``after``), the high-water mark (``peak``), and
counts. ``raw`` mode keeps the latest raw object per (resource, namespace/name) from
the watch events (what holding the raw JSON alone costs) and is the same-run baseline.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks.common import Context, Result, Skip, need, proc_status, read_lines

TARGET = 2**30  # 1 GiB of folded state for 150,000 pods


def child(mode: str, recording: Path) -> dict[str, Any]:
    if mode.startswith("tide"):
        from benchmarks.bench_fold import fold_path, new_world

        _, fold = fold_path()
        world: Any = new_world()
    gc.collect()
    base = proc_status()
    start = time.perf_counter()
    counts: dict[str, int] = {}
    if mode.startswith("tide"):
        counts["events"] = fold(world, read_lines(recording))
        cluster = getattr(world, "cluster", world)
        for name in ("pods", "tasks", "nodes", "jobs"):
            value = getattr(cluster, name, None)
            if value is not None:
                counts[name] = len(value)
    else:
        store: dict[tuple[str, str], Any] = {}
        events = 0
        for line in read_lines(recording):
            record = orjson.loads(line)
            events += 1
            if record["type"] != "k8s.watch":
                continue
            data = record["data"]
            meta = data["object"]["metadata"]
            key = (data["resource"], f"{meta.get('namespace', '')}/{meta['name']}")
            if data["event"] == "DELETED":
                store.pop(key, None)
            else:
                store[key] = data["object"]
        counts["events"] = events
        counts["pods"] = sum(1 for k in store if k[0] == "pods")
    spent = time.perf_counter() - start
    gc.collect()
    after = proc_status()
    return {
        "base": base["VmRSS"],
        "after": after["VmRSS"],
        "peak": after["VmHWM"],
        "seconds": spent,
        "counts": counts,
    }


def measure(mode: str, recording: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.rss", mode, str(recording)],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parent.parent,
    )
    if proc.returncode == 3:
        raise Skip(proc.stdout.strip() or "not available yet")
    if proc.returncode != 0:
        raise RuntimeError(f"rss child ({mode}) failed:\n{proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run(ctx: Context) -> list[Result]:
    from benchmarks.bench_fold import new_world, world_name

    new_world()  # Skip early when nothing to fold into
    need("streams.codec", "decode")
    raw = measure("raw", ctx.recording)
    tide = measure("tide", ctx.recording)
    state = tide["after"] - tide["base"]
    raw_state = raw["after"] - raw["base"]
    pods = tide["counts"].get("pods") or tide["counts"].get("tasks") or 0
    scale = ctx.manifest.pods_final
    target = TARGET * scale / 150_000
    counts = ", ".join(f"{k} {v:,}" for k, v in tide["counts"].items())
    rows = [
        Result(
            "rss",
            f"folded state, {scale:,} pods (RSS after fold - base)",
            state,
            "B",
            raw_state,
            "raw dicts of the latest objects",
            state / raw_state,
            f"<= {target / 2**30:.2f} GiB",
            state <= target,
            notes=f"{world_name()}: {counts}; {state / max(1, pods):,.0f} B per pod",
            extra={"tide": tide, "raw": raw},
        ),
        Result(
            "rss",
            "  absolute RSS after fold / peak (info)",
            tide["after"],
            "B",
            tide["peak"],
            "peak (VmHWM)",
            target="(info)",
        ),
    ]
    return rows


def main(argv: list[str]) -> int:
    mode, recording = argv[0], Path(argv[1])
    try:
        result = child(mode, recording)
    except Skip as exc:
        print(str(exc))
        return 3
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
