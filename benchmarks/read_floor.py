"""What a replay pays per record before any policy runs, against the day's budget.

Over a log written by ``tide simulate --log`` (or ``tide log import``), interleaved, on
the CPU clock (median [range] of ``--repeat`` runs, µs per record):

* **floor**: ``SELECT`` of every column in offset order, ``orjson.loads`` of each
  payload and one blake2b over each payload, with the cyclic collector off. No
  replay can do less: every record is decoded for the fold and hashed for the chain.
* **read**: tide's own paged read (:class:`streams.paging.LogReader`, events built; no
  chain hash).
* **fold**: that read plus ``World.apply`` of every record, collector paced as
  ``tide replay`` paces it.

The budget line is what "a day in two minutes" leaves per record: ``120 s / (records per
virtual day)``, exact for the log of a whole day (``--minutes 1440``); a shorter log is
scaled at its own density (the first minutes of a generated day, which list every pod,
are denser than the rest). ``python -m benchmarks.read_floor LOG.db --minutes 1440
[--repeat 3]`` (``--minutes``: the virtual span the log covers).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import sqlite3
from pathlib import Path

import orjson

from benchmarks.common import Timing, clock, summary
from projections.world import World
from streams.backends.sqlite import SQLiteLog
from streams.gcpause import paced
from streams.paging import LogReader

_SELECT = 'SELECT "offset", id, at, type, cause, v, data, prev FROM events ORDER BY "offset"'
DAY_GOAL_S = 120.0


def floor(db: Path) -> Timing:
    def run() -> int:
        was = gc.isenabled()
        gc.disable()
        try:
            with sqlite3.connect(db) as conn:
                count = 0
                for row in conn.execute(_SELECT):
                    orjson.loads(row[6])
                    hashlib.blake2b(row[6], digest_size=16).digest()
                    count += 1
            return count
        finally:
            if was:
                gc.enable()

    return clock(run)


def read(db: Path, *, fold: bool) -> Timing:
    def run() -> int:
        world, count = World(), 0
        with LogReader(lambda: SQLiteLog.open(db)) as log:
            for event in paced(log.records()):
                if fold:
                    world.apply(event)
                count += 1
        return count

    return clock(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--minutes", type=float, required=True, help="virtual span of the log")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[Timing]] = {"floor": [], "read": [], "fold": []}
    for _ in range(args.repeat):
        rows["floor"].append(floor(args.log))
        rows["read"].append(read(args.log, fold=False))
        rows["fold"].append(read(args.log, fold=True))
    records = rows["floor"][0][0]
    per_day = records * 1440 / args.minutes
    print(f"{records:,} records over {args.minutes:g} min ({per_day:,.0f} per virtual day)")
    for name, runs in rows.items():
        s = summary(runs)
        low, high = (1e6 * x / records for x in s["cpu_range"])
        print(f"{name:>6}: {1e6 * s['cpu_median'] / records:6.1f} µs/record [{low:.1f}-{high:.1f}]")
    print(f"budget: {1e6 * DAY_GOAL_S / per_day:6.1f} µs/record (a day in {DAY_GOAL_S:g} s)")


if __name__ == "__main__":
    main()
