"""Two figures of issue 26's audit work that need a log or a recording of one's own (see
benchmarks/README.md, "Audit and start-up"):

``python -m benchmarks.audit_costs write RECORDING [--rounds 3]``: CPU of
``import_recording`` into a fresh SQLite log with the subject index and without it
(``subjects_of`` patched to index nothing), interleaved, what the index costs a writer.

``python -m benchmarks.audit_costs why POD LOG [--scan]``: ``tide audit why POD --log LOG``
in this process and its CPU on stderr; ``--scan`` swaps back the lookup of before
(``replay.whynot.task_key``, a scan of every task, at every call) to compare; ``--whole``
folds the whole log from offset 0 as before checkpoints and the subject index bounded it
(``explain_cmd._why_span`` answering "from 0, to the head"); ``--old`` answers through
``explain_cmd.why_streamed`` (one fold from the nearest checkpoint before the pod's first
record over its whole life, the answer before :mod:`replay.whyread`). Beside the process's
CPU it prints the command's own (CPU spent in the command after the imports every command
pays, "beyond start-up") and, on the new path, how many records were folded and which
checkpoints were loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import resource
import sys
import tempfile
from pathlib import Path

from projections.world import World
from replay import whynot
from streams.backends import sqlite as backend
from streams.backends.sqlite import SQLiteLog
from streams.recording import import_recording

_KEYS = "subjects_of"


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


async def _import(recording: Path, path: Path, *, indexed: bool) -> float:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    saved = getattr(backend, _KEYS)  # what the SQLite writer indexes each record under
    if not indexed:
        setattr(backend, _KEYS, lambda event: [])
    try:
        log = await SQLiteLog.open(path)
        start = _cpu()
        await import_recording(recording, log)
        spent = _cpu() - start
        await log.close()
    finally:
        setattr(backend, _KEYS, saved)
    return spent


class _Scanning(whynot.TaskKey):
    """The lookup as it was before TaskKey: a scan of every task each time."""

    def find(self, world: World) -> str | None:
        return whynot.task_key(world, self.pod)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    write = sub.add_parser("write")
    write.add_argument("recording", type=Path)
    write.add_argument("--rounds", type=int, default=3)
    why = sub.add_parser("why")
    why.add_argument("pod")
    why.add_argument("log")
    why.add_argument("--scan", action="store_true")
    why.add_argument("--whole", action="store_true")
    why.add_argument("--old", action="store_true")
    why.add_argument("--profile", type=Path, help="write a cProfile of the command here")
    args = parser.parse_args(argv)
    if args.what == "write":
        spent: dict[bool, list[float]] = {False: [], True: []}
        with tempfile.TemporaryDirectory() as work:
            for _ in range(args.rounds):
                for indexed in (False, True):
                    db = Path(work) / "log.db"
                    spent[indexed].append(asyncio.run(_import(args.recording, db, indexed=indexed)))
        for indexed, times in spent.items():
            label = "with the index" if indexed else "without      "
            print(f"{label}: CPU {', '.join(f'{t:.2f}' for t in times)} s")
        return 0
    if args.scan:
        whynot.TaskKey = _Scanning  # type: ignore[misc]
    from controller.cli import app, audit_cmd, explain_cmd
    from replay import whyread

    if args.whole:
        explain_cmd._why_span = lambda *a, **k: (None, None)
    if args.old or args.whole or args.scan:
        audit_cmd._why_read = lambda *a, **k: None
    read = whyread.Read()
    real = whyread.fold_why
    whyread.fold_why = lambda *a, **k: real(*a, **{**k, "read": read})
    profile = cProfile.Profile() if args.profile else None
    start = _cpu()
    if profile is not None:
        profile.enable()
    try:
        app(["audit", "why", args.pod, "--log", args.log])
    except SystemExit as exc:
        code = int(exc.code or 0)
    else:
        code = 0
    if profile is not None:
        profile.disable()
        profile.dump_stats(args.profile)
    used = _cpu() - start
    sys.stderr.write(
        f"CPU {_cpu():.2f} s, the command {used:.2f} s; folded {read.folded} records, "
        f"loaded checkpoints {read.loaded}, {read.noted} fed without the World, "
        f"{read.local} to the local parts from {read.local_from}"
        f"{' (given up: folded again)' if read.again else ''}\n"
    )
    return code


if __name__ == "__main__":
    raise SystemExit(main())
