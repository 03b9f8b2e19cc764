"""Append to the SQLite log against ``eventsourcing``'s SQLite recorder, in the same run.

Both sides start from the same decoded events (the first ``--records`` of a recording)
and pay for serialising each payload and storing it with a global order: tide's
:meth:`streams.backends.sqlite.SQLiteLog.append` (offsets, the unique id index, the type
index) and ``eventsourcing``'s ``SQLiteApplicationRecorder.insert_events`` (notification
ids, the unique ``(originator_id, originator_version)`` key), each on a fresh file in
WAL mode and with its own settings: tide ``synchronous=NORMAL``, eventsourcing SQLite's
default ``FULL`` (an fsync per commit, which shows on the wall clock, hardly on the CPU
clock the ratio is taken from). Appends are made ``--batch`` events at a time (1: a live
controller's decision; 100: a burst of watch events).

Both sides are timed from opening their file to closing it (creating the tables, and
the checkpoint a close makes, included). Every repeat runs the rows back to back
(interleaved); times are ``time.process_time`` beside the wall clock; the figure is
records per CPU-second, median and range, and the ratio is tide's rate over
eventsourcing's (above 1: tide appends faster).
``eventsourcing`` is needed by this benchmark only (``pip install eventsourcing``).
``python -m benchmarks.bench_append RECORDING.jsonl [--records 5000] [--batch 1 100]``
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from pathlib import Path
from typing import Any

import orjson

from benchmarks.common import Skip, Timing, clock, fresh_db, need, read_lines, summary
from streams.backends.sqlite import SQLiteLog
from streams.codec import decode
from streams.events import Event


def load_events(recording: Path, limit: int) -> list[Event]:
    """The first ``limit`` records of a recording, decoded."""
    return [decode(line) for line in read_lines(recording, limit)]


def tide_append(events: list[Event], db: Path, *, batch: int) -> Timing:
    """:meth:`SQLiteLog.append`, ``batch`` events per call, on a fresh file."""
    fresh_db(db)

    async def run() -> int:
        log = await SQLiteLog.open(db)
        try:
            count = 0
            for k in range(0, len(events), batch):
                count += len(await log.append(events[k : k + batch]))
            return count
        finally:
            await log.close()

    return clock(lambda: asyncio.run(run()))


def eventsourcing_append(events: list[Event], db: Path, *, batch: int) -> Timing:
    """``SQLiteApplicationRecorder.insert_events``, ``batch`` events per call."""
    sqlite = need("eventsourcing.sqlite")
    persistence = need("eventsourcing.persistence")
    fresh_db(db)
    stored_event = persistence.StoredEvent
    originator = uuid.UUID(int=1)

    def run() -> int:
        # opened, created and closed inside the clock, as tide's row opens and closes its log
        datastore = sqlite.SQLiteDatastore(str(db))
        try:
            recorder = sqlite.SQLiteApplicationRecorder(datastore)
            recorder.create_table()
            count = 0
            for k in range(0, len(events), batch):
                rows = [
                    stored_event(
                        originator_id=originator,
                        originator_version=k + i,
                        topic=event.type,
                        state=orjson.dumps(event.data),
                    )
                    for i, event in enumerate(events[k : k + batch])
                ]
                recorder.insert_events(rows)
                count += len(rows)
            return count
        finally:
            datastore.close()

    return clock(run)


def measure(
    recording: Path, work: Path, *, records: int, batches: list[int], repeat: int
) -> dict[str, Any]:
    """Both rows per batch size, ``repeat`` interleaved rounds; ratio = tide's rate over
    eventsourcing's (above 1: tide appends faster)."""
    work.mkdir(parents=True, exist_ok=True)
    events = load_events(recording, records)
    out: dict[str, Any] = {}
    for batch in batches:
        runs: dict[str, list[Timing]] = {"tide": [], "eventsourcing": []}
        for _ in range(repeat):
            runs["tide"].append(tide_append(events, work / "tide.db", batch=batch))
            runs["eventsourcing"].append(eventsourcing_append(events, work / "es.db", batch=batch))
        row = {name: summary(timings) for name, timings in runs.items()}
        row["ratio"] = row["eventsourcing"]["cpu_median"] / row["tide"]["cpu_median"]
        out[f"batch={batch}"] = row
    for name in ("tide.db", "es.db"):
        fresh_db(work / name)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("recording", type=Path)
    parser.add_argument("--records", type=int, default=5_000)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 100])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--work", type=Path, default=Path(__file__).parent / "out" / "append")
    args = parser.parse_args(argv)
    try:
        out = measure(
            args.recording, args.work, records=args.records, batches=args.batch, repeat=args.repeat
        )
    except Skip as exc:
        print(f"bench_append: {exc} (pip install eventsourcing)")
        return 2
    for batch, row in out.items():
        for name in ("tide", "eventsourcing"):
            figures = row[name]
            low, high = figures["cpu_range"]
            print(
                f"{batch:10} {name:13} {figures['records']:>7,} rec  "
                f"cpu {figures['cpu_median']:7.3f} s [{low:.3f}-{high:.3f}]  "
                f"wall {figures['wall_median']:7.3f} s  "
                f"{figures['per_cpu_second']:>9,.0f} rec/cpu-s"
            )
        print(f"{batch:10} tide/eventsourcing {row['ratio']:.2f}")
    if args.json:
        args.json.write_bytes(orjson.dumps(out, option=orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
