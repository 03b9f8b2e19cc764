"""The quiet-tick rule's A/B: one generated day simulated in process at one behaviour level.

``python -m benchmarks.bench_quiet --minutes 20 --level 3`` (run the levels in separate
processes, alternating, on the same day) prints the sessions run, the decisions and
records written, the run's CPU seconds and the CPU spent in trigger sessions
(``Step._decide``). Level 2 wakes a tick on every watch change, level 3 not on a node
update no session can see (a heartbeat); the decisions and records must be equal.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import yaml

from benchmarks.day import CONFIG, DayScale, ensure_day
from controller.policy.loader import load_policy
from controller.policy.step import Step
from controller.simulate.inputs import read_inputs
from controller.simulate.runner import Simulation
from streams.events import Event


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--minutes", type=int, default=20)
    parser.add_argument("--level", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args(argv)
    day = DayScale(nodes=args.nodes, pods=args.nodes * 30, minutes=args.minutes)
    manifest = ensure_day(day, args.out)
    spent = [0.0]
    plain = Step._decide

    def timed(self: Step, trigger: Event) -> list[Event]:
        start = time.process_time()
        try:
            return plain(self, trigger)
        finally:
            spent[0] += time.process_time() - start

    Step._decide = timed  # type: ignore[method-assign]
    events = iter(read_inputs(Path(manifest.path)).events)
    policy = load_policy(yaml.safe_load(CONFIG))
    start = time.process_time()
    sim = Simulation(policy.config, eviction=policy.eviction, behaviour=args.level)
    result = sim.run(events)
    total = time.process_time() - start
    print(
        f"{day.name} level {args.level}: {result.sessions} sessions, "
        f"{len(result.decisions)} decisions, {len(result.log.events)} records; "
        f"run CPU {total:.1f} s, trigger sessions CPU {spent[0]:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
