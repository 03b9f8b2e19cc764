"""Checkpoints by position (issue 26): their size and speed, and what they buy the readers.

``python -m benchmarks.bench_checkpoints [--nodes 1000 --pods 30000 --minutes 15]`` (or
``python -m benchmarks.run --only checkpoints``, at the run's ``--nodes``/``--pods``)
prints, all measured in one run (CPU = user + sys of this process):

* the World checkpoint at that scale, before (the single World checkpoint tide wrote
  until now: ``World.dump()`` / ``World.load()``) and after
  (:func:`projections.checkpoint_codec.encode_snapshot` / ``decode_snapshot``): size, write
  and load CPU, and the ratios after/before;
* ``tide state --at T`` (:func:`controller.cli.state_cmd.fold_log`, T a minute before the
  log's end) on a generated day of ``--minutes`` and on one 4x longer (same cluster),
  both imported with ``tide log import``'s checkpoints: the ratio long/short (target
  <= 1.3);
* a ``tide run`` restart's fold on the same two logs: ``LiveLoop.prepare`` from the
  latest checkpoint (target <= 1.3), and beside it the recorder's own fold of the log
  (:class:`projections.known.KnownObjects`, from the latest checkpoint that holds it, as
  ``Recorder.prepare`` does);
* the writers' cost: ``tide simulate --log`` of the short day in this process with the
  checkpoints kept (default interval) against the same run with none (target <= 10 %).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from benchmarks.common import Context, Result
from benchmarks.day import CONFIG, DayScale, ensure_day
from benchmarks.generate import OUT_DIR


def _cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.process_time()
    value = fn()
    return time.process_time() - start, value


def _best(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    runs = [_cpu(fn) for _ in range(repeat)]
    return min(t for t, _ in runs), runs[-1][1]


def world_rows(recording: Path, repeat: int) -> list[Result]:
    """Size, write and load of a World checkpoint folded from ``recording``."""
    from projections.checkpoint_codec import Snapshot, decode_snapshot, encode_snapshot
    from projections.effects import EffectsState
    from projections.world import World

    world = World()
    with recording.open("rb") as lines:
        world.fold_lines(lines)
    effects = EffectsState()
    effects.position = world.position
    pods = len(world.cluster.tasks)
    write_old, old = _best(repeat, world.dump)
    load_old, _ = _best(repeat, lambda: World().load(old))
    snapshot = Snapshot(world.position, "", None, world, effects, None)
    write_new, new = _best(repeat, lambda: encode_snapshot(snapshot))
    load_new, back = _best(repeat, lambda: decode_snapshot(new))
    assert back.world.dump() == old  # the same World
    mib = 2**20
    rows = [
        ("size", len(new) / mib, len(old) / mib, "MiB"),
        ("write CPU", write_new, write_old, "s"),
        ("load CPU", load_new, load_old, "s"),
    ]
    return [
        Result(
            "checkpoints",
            f"World checkpoint at {pods:,} pods: {metric}",
            value=after,
            unit=unit,
            baseline=before,
            baseline_name="the single World checkpoint (World.dump/load)",
            ratio=after / before if before else None,
            target="smaller and faster (ratio < 1)",
            ok=after < before,
        )
        for metric, after, before, unit in rows
    ]


def _import(recording: Path, db: Path) -> None:
    from typer.testing import CliRunner

    from controller.cli import app

    result = CliRunner().invoke(app, ["log", "import", str(recording), "--log", str(db)])
    assert result.exit_code == 0, result.output


def _state_at(db: Path) -> float:
    from controller.cli.state_cmd import fold_log
    from streams.backends import open_reader

    async def end() -> Any:
        async with await open_reader(str(db)) as log:
            return max(e.at for e in await log.read_all(max(0, await log.head() - 2000)))

    moment = asyncio.run(end()) - timedelta(minutes=1)
    cpu, _ = _cpu(lambda: asyncio.run(fold_log(str(db), at=moment)))
    return cpu


def _restart(db: Path) -> tuple[float, float]:
    """CPU of a restart's World fold (``LiveLoop.prepare`` from the checkpoints) and of
    the recorder's own fold of the log (from the latest checkpoint holding it)."""
    from controller.drive.loop.live import LiveLoop
    from controller.policy.step import Step
    from projections.checkpoints import nearest_known
    from projections.known import KnownObjects
    from streams.backends import open_log
    from streams.backends.checkpoints import open_log_store

    async def prepare() -> None:
        async with await open_log(str(db)) as log:
            loop = LiveLoop(Step(config=None, eviction=None), log)
            loop.checkpoints = await open_log_store(str(db), create=False)
            try:
                await loop.prepare()
            finally:
                if loop.checkpoints is not None:
                    await loop.checkpoints.close()

    async def known() -> None:  # as Recorder.prepare: from the latest checkpoint holding it
        async with await open_log(str(db)) as log:
            store = await open_log_store(str(db), create=False)
            found = None
            if store is not None:
                async with store:
                    found = await nearest_known(store, log)
            start, fold = found if found is not None else (0, KnownObjects())
            async for event in log.read(start):
                fold.fold((event,))

    loop_cpu, _ = _cpu(lambda: asyncio.run(prepare()))
    known_cpu, _ = _cpu(lambda: asyncio.run(known()))
    return loop_cpu, known_cpu


def _simulate(recording: Path, config: Path, db: Path, *, keep: bool) -> float:
    from typer.testing import CliRunner

    import controller.cli.simulate_cmd as simulate_cmd
    from controller.cli import app
    from controller.simulate.spool import Spool

    saved = (Spool.keep_checkpoints, getattr(simulate_cmd, "save_checkpoint"))  # noqa: B009
    if not keep:
        Spool.keep_checkpoints = lambda self, world, policy: None  # type: ignore[method-assign]
        setattr(simulate_cmd, "save_checkpoint", lambda *a, **k: None)  # noqa: B010
    try:
        args = ["simulate", str(recording), "-c", str(config), "--log", str(db)]
        cpu, result = _cpu(lambda: CliRunner().invoke(app, [*args, "--decisions", os.devnull]))
        assert result.exit_code == 0, result.output
    finally:
        Spool.keep_checkpoints = saved[0]  # type: ignore[method-assign]
        setattr(simulate_cmd, "save_checkpoint", saved[1])  # noqa: B010
    return cpu


def rows(nodes: int, pods: int, minutes: int, work: Path, repeat: int) -> list[Result]:
    """Every row (see the module docstring)."""
    short = ensure_day(DayScale(nodes=nodes, pods=pods, minutes=minutes), OUT_DIR)
    long = ensure_day(DayScale(nodes=nodes, pods=pods, minutes=4 * minutes), OUT_DIR)
    out = world_rows(Path(short.path), repeat)
    dbs = {}
    for name, manifest in (("short", short), ("long", long)):
        dbs[name] = work / f"{name}.db"
        _import(Path(manifest.path), dbs[name])
    states = {name: min(_state_at(db) for _ in range(repeat)) for name, db in dbs.items()}
    restarts = {name: min(_restart(db) for _ in range(repeat)) for name, db in dbs.items()}
    span = f"{minutes} min vs {4 * minutes} min"
    out.append(
        Result(
            "checkpoints",
            f"state --at T, CPU, {span} log",
            value=states["long"],
            unit="s",
            baseline=states["short"],
            baseline_name=f"the {minutes}-minute log",
            ratio=states["long"] / states["short"],
            target="<= 1.3",
            ok=states["long"] / states["short"] <= 1.3,
        )
    )
    ratio = restarts["long"][0] / restarts["short"][0]
    out.append(
        Result(
            "checkpoints",
            f"tide run restart (LiveLoop.prepare), CPU, {span} log",
            value=restarts["long"][0],
            unit="s",
            baseline=restarts["short"][0],
            baseline_name=f"the {minutes}-minute log",
            ratio=ratio,
            target="<= 1.3",
            ok=ratio <= 1.3,
            notes=(
                f"the recorder's own fold (KnownObjects, from its checkpoint): "
                f"{restarts['long'][1]:.2f} s vs {restarts['short'][1]:.2f} s"
            ),
        )
    )
    config = work / "day.yaml"
    config.write_text(CONFIG)
    costs: dict[bool, float] = {}
    for keep in (False, True, False, True)[: 2 * max(1, min(repeat, 2))]:
        db = work / f"sim-{keep}.db"
        for stale in work.glob(f"sim-{keep}.db*"):
            stale.unlink()
        cpu = _simulate(Path(short.path), config, db, keep=keep)
        costs[keep] = min(costs.get(keep, cpu), cpu)
    share = (costs[True] - costs[False]) / costs[False]
    out.append(
        Result(
            "checkpoints",
            "simulate --log CPU with checkpoints (default interval)",
            value=costs[True],
            unit="s",
            baseline=costs[False],
            baseline_name="the same run keeping none",
            ratio=costs[True] / costs[False],
            target="<= 1.10",
            ok=share <= 0.10,
        )
    )
    return out


def run(ctx: Context) -> list[Result]:
    """The benchmark in ``benchmarks.run``: at the run's scale, 15 (quick: 10) minutes."""
    scale = ctx.manifest.scale
    nodes, pods = int(scale["nodes"]), int(scale["pods"])
    return rows(nodes, pods, 10 if ctx.quick else 15, ctx.work, ctx.repeat)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--pods", type=int, default=30_000)
    parser.add_argument("--minutes", type=int, default=15)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ckpt-", dir=OUT_DIR if OUT_DIR.exists() else None))
    try:
        for row in rows(args.nodes, args.pods, args.minutes, work, args.repeat):
            ratio = f"  ratio {row.ratio:.2f}" if row.ratio is not None else ""
            print(
                f"{row.metric}: {row.value:.3f} {row.unit} (baseline {row.baseline:.3f}: "
                f"{row.baseline_name}){ratio}  target {row.target}"
                + (f"  [{row.notes}]" if row.notes else "")
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
