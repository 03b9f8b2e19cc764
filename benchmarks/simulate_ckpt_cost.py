"""What checkpoints cost ``tide simulate --log`` (issue 26, item 3), on a recording of
one's own, interleaved, each run in a fresh interpreter (so no run inherits another's heap;
CPU = user + sys of the run, imports left out):

``python -m benchmarks.simulate_ckpt_cost RECORDING CONFIG [--rounds 2] [--minutes 20 30]
[--hashed-twice]``

prints the CPU of the run keeping no checkpoint, keeping them at the default interval
(``TIDE_CHECKPOINT_*`` of the environment), at each ``--minutes`` of log time
(``TIDE_CHECKPOINT_MINUTES`` set for that run), and with ``--hashed-twice`` keeping them
with the chain state hashing every record again (``ChainChecker.linked`` swapped for
``feed``: as before the keeper reused the writer's hashes), and the ratios to the first.
Each run keeping checkpoints also times the keeper's own work inside it (``keeper``: its
share of the rest of the run), a figure the machine's noise between runs (on a shared
2-core machine, +-15 % for the same run) does not blur.
"""

from __future__ import annotations

import argparse
import inspect
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from benchmarks.bench_checkpoints import _simulate
from streams.chain_check import ChainChecker

MINUTES = "TIDE_CHECKPOINT_MINUTES"


def _attributed(spent: dict[str, float]) -> None:
    """Time every call of the keeper's own work (CPU): the World's part held, the saves
    (the head's included) and the fold of every record (its timing costs ~0.5 µs a
    record, counted in)."""
    from projections.checkpoints import Keeper

    def timed(method: Callable[..., Any], label: str) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(method):

            async def run_async(*args: Any, **kwargs: Any) -> Any:
                start = time.process_time()
                try:
                    return await method(*args, **kwargs)
                finally:
                    spent[label] = spent.get(label, 0.0) + time.process_time() - start

            return run_async

        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return method(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + time.process_time() - start

        return run

    for name in ("hold", "save", "feed"):
        setattr(Keeper, name, timed(getattr(Keeper, name), name))


def _run(name: str, recording: Path, config: Path, db: Path) -> float:
    linked, minutes = ChainChecker.linked, os.environ.get(MINUTES)
    if name == "hashed twice":
        ChainChecker.linked = ChainChecker.feed  # type: ignore[method-assign,assignment]
    if name.startswith("every "):
        os.environ[MINUTES] = name.split()[1]
    try:
        return _simulate(recording, config, db, keep=name != "none")
    finally:
        ChainChecker.linked = linked  # type: ignore[method-assign]
        if minutes is None:
            os.environ.pop(MINUTES, None)
        else:
            os.environ[MINUTES] = minutes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recording", type=Path)
    parser.add_argument("config", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--minutes", type=float, nargs="*", default=[])
    parser.add_argument("--hashed-twice", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # one run, in this interpreter
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = ["none", "kept", *(f"every {m:g} min" for m in args.minutes)]
    if args.hashed_twice:
        names.append("hashed twice")
    costs: dict[str, list[float]] = {name: [] for name in names}
    shares: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    if args.one is not None:
        spent: dict[str, float] = {}
        if args.one != "none":
            _attributed(spent)
        cpu = _run(args.one, args.recording, args.config, Path(args.db))
        print(orjson.dumps({"cpu": cpu, "spent": spent}).decode())
        return 0
    with tempfile.TemporaryDirectory() as work:
        for _ in range(args.rounds):
            for name in costs:
                db = Path(work) / "run.db"
                for stale in Path(work).glob(f"{db.name}*"):
                    stale.unlink()
                one = [sys.executable, "-m", "benchmarks.simulate_ckpt_cost", "--one", name]
                one += ["--db", str(db), str(args.recording), str(args.config)]
                done = subprocess.run(one, check=True, capture_output=True, text=True)
                found = orjson.loads(done.stdout.splitlines()[-1])
                costs[name].append(found["cpu"])
                shares[name].append(found["spent"])
    base = min(costs["none"])
    for name, times in costs.items():
        shown = ", ".join(f"{t:.2f}" for t in times)
        print(f"{name:>14}: CPU {shown} s  min/none {min(times) / base:.3f}")
        for cpu, spent in zip(times, shares[name], strict=True):
            if spent:
                keeper = sum(spent.values())
                parts = ", ".join(f"{k} {v:.2f} s" for k, v in sorted(spent.items()))
                print(f"{'':>16}keeper {keeper:.2f} s = {keeper / (cpu - keeper):.1%} ({parts})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
