"""What checkpoints cost ``tide simulate --log`` (issue 26, item 3), on a recording of
one's own, interleaved in one process (CPU = user + sys):

``python -m benchmarks.simulate_ckpt_cost RECORDING CONFIG [--rounds 2]``

prints the CPU of the run keeping no checkpoint, keeping them at the default interval
(``TIDE_CHECKPOINT_*`` of the environment), and keeping them with the chain state hashing
every record again (``ChainChecker.linked`` swapped for ``feed``: as before the keeper
reused the writer's hashes), and the ratios to the first.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmarks.bench_checkpoints import _simulate
from streams.chain_check import ChainChecker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recording", type=Path)
    parser.add_argument("config", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    linked = ChainChecker.linked
    costs: dict[str, list[float]] = {"none": [], "kept": [], "hashed twice": []}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(args.rounds):
            for name in costs:
                db = Path(work) / f"{name.replace(' ', '-')}.db"
                for stale in Path(work).glob(f"{db.name}*"):
                    stale.unlink()
                if name == "hashed twice":
                    ChainChecker.linked = ChainChecker.feed  # type: ignore[method-assign,assignment]
                try:
                    costs[name].append(
                        _simulate(args.recording, args.config, db, keep=name != "none")
                    )
                finally:
                    ChainChecker.linked = linked  # type: ignore[method-assign]
    base = min(costs["none"])
    for name, times in costs.items():
        shown = ", ".join(f"{t:.2f}" for t in times)
        print(f"{name:>12}: CPU {shown} s  min/none {min(times) / base:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
