"""Fold rate: the recording's lines folded through the projections, against raw
``orjson.loads`` of the same lines.

A fold reads the log, whose records always carry ids, so the headline folds the recording
*as exported from a log* (the same recording generated with ``--ids``, as ``tide log
export`` writes it). The recording as captured (no ids: ``codec.decode`` then hashes each
payload for its content id) is folded too, as information.

Baseline: ``for line in file: orjson.loads(line)`` (the same buffered read as the subject).
Subject: ``World.fold_lines(lines)`` when the tree has it (decode + apply with the cyclic
GC paused, as ``projections.store.run_projection`` folds), else
``for line in file: world.apply(codec.decode(line))``, into a fresh
``projections.world.World``. Informational rows split the time: the per-event loop with
the GC running, ``codec.decode`` alone, and the fold from the SQLite log the import
benchmark left behind (``SQLiteLog.read`` + ``World.apply``) against ``sqlite3`` +
``orjson.loads`` of the stored payloads.
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from benchmarks.common import Context, Result, Skip, need, rate_row, read_lines
from benchmarks.generate import Scale, ensure_recording

TARGET = 0.7


def new_world() -> Any:
    """A fresh ``World``; until ``projections.world`` lands, a bare ``ClusterState``."""
    try:
        world_mod = need("projections.world", "World")
    except Skip:
        cluster = need("projections.cluster", "ClusterState")
        return cluster.ClusterState()
    world = world_mod.World()
    # older trees: extras found by importlib, and no pressure projection among them
    if hasattr(world_mod, "default_extras") and "pressure" not in world.extra:
        try:
            pressure = need("projections.pressure", "PressureState")
        except Skip:
            return world
        extras = [*world_mod.default_extras(), pressure.PressureState()]
        world = world_mod.World(extra=extras)
    return world


def world_name() -> str:
    try:
        need("projections.world", "World")
    except Skip:
        need("projections.cluster", "ClusterState")
        return "ClusterState (projections.world not available yet)"
    return "World"


def apply_loop() -> tuple[str, Callable[[Any, Iterable[bytes]], int]]:
    """The plain per-event fold: ``world.apply(codec.decode(line))``, GC left as it is."""
    codec = need("streams.codec", "decode")
    decode = codec.decode

    def fold(world: Any, lines: Iterable[bytes]) -> int:
        apply = world.apply
        n = 0
        for line in lines:
            apply(decode(line))
            n += 1
        return n

    return f"{world_name()}.apply(codec.decode(line))", fold


def fold_path() -> tuple[str, Callable[[Any, Iterable[bytes]], int]]:
    """The fastest line-fold the tree offers: ``(description, fold(world, lines) -> n)``."""
    if hasattr(new_world(), "fold_lines"):

        def fold(world: Any, lines: Iterable[bytes]) -> int:
            count: int = world.fold_lines(lines)
            return count

        return f"{world_name()}.fold_lines (decode + apply, GC paused)", fold
    return apply_loop()


def ids_recording(ctx: Context) -> Path:
    """The benchmark's recording as a log exports it (with ids); generated once, cached."""
    if ctx.manifest.scale.get("ids"):
        return ctx.recording
    scale = replace(Scale(**ctx.manifest.scale), ids=True)
    return Path(ensure_recording(scale).path)


def fold_recording(
    ctx: Context,
    path: Path | None = None,
    fold: Callable[[Any, Iterable[bytes]], int] | None = None,
) -> tuple[Any, int, float]:
    """A fresh World folded over a recording (default: the run's, by :func:`fold_path`):
    ``(world, events, seconds)``."""
    path = ctx.recording if path is None else path
    fold = fold_path()[1] if fold is None else fold
    world = new_world()
    gc.collect()
    start = time.perf_counter()
    count = fold(world, read_lines(path))
    return world, count, time.perf_counter() - start


def raw_loads(path: Path) -> tuple[int, float]:
    loads = orjson.loads
    start = time.perf_counter()
    count = 0
    for line in read_lines(path):
        loads(line)
        count += 1
    return count, time.perf_counter() - start


def decode_only(path: Path) -> tuple[int, float]:
    decode = need("streams.codec", "decode").decode
    start = time.perf_counter()
    count = 0
    for line in read_lines(path):
        decode(line)
        count += 1
    return count, time.perf_counter() - start


Timing = tuple[int, float]


def _best(a: Timing, b: Timing) -> Timing:
    return min(a, b, key=lambda x: x[1])


def _fold_once(ctx: Context, path: Path, fold: Callable[[Any, Iterable[bytes]], int]) -> Timing:
    ctx.world = None
    gc.collect()
    world, count, spent = fold_recording(ctx, path, fold)
    ctx.world = world
    del world
    gc.collect()
    return count, spent


def run(ctx: Context) -> list[Result]:
    description, fold = fold_path()
    loop_description, loop = apply_loop()
    exported = ids_recording(ctx)
    captured = ctx.recording
    none: Timing = (0, float("inf"))
    base_ids = base_raw = best_fold = best_raw_fold = best_loop = none
    for _ in range(ctx.repeat):  # interleaved, so noise hits both sides alike
        base_ids = _best(base_ids, raw_loads(exported))
        best_fold = _best(best_fold, _fold_once(ctx, exported, fold))
    for _ in range(max(1, ctx.repeat - 1)):
        base_raw = _best(base_raw, raw_loads(captured))
        best_raw_fold = _best(best_raw_fold, _fold_once(ctx, captured, fold))
        best_loop = _best(best_loop, _fold_once(ctx, exported, loop))
    decode_ids = decode_raw = none
    for _ in range(max(1, ctx.repeat - 1)):
        decode_ids = _best(decode_ids, decode_only(exported))
        decode_raw = _best(decode_raw, decode_only(captured))
    # ctx.world: the last fold's world, left for the policy and pressure benchmarks

    def info(metric: str, subject: Timing, base: Timing, base_name: str) -> Result:
        row = rate_row("fold", metric, *subject, *base, base_name, 0.0)
        row.target, row.ok = "(info)", None
        return row

    rows = [
        rate_row(
            "fold",
            f"log export (ids) -> {description}",
            *best_fold,
            *base_ids,
            "orjson.loads, same lines",
            TARGET,
            notes=f"{exported.name}",
        ),
        info(
            f"  same lines, {loop_description}, GC on",
            best_loop,
            base_ids,
            "orjson.loads",
        ),
        info("  codec.decode only, lines with ids", decode_ids, base_ids, "orjson.loads"),
        info(
            f"  recording as captured (no ids) -> {description.split(' (')[0]}",
            best_raw_fold,
            base_raw,
            "orjson.loads, same lines",
        ),
        info(
            "  codec.decode only, no ids (hashes content ids)", decode_raw, base_raw, "orjson.loads"
        ),
    ]
    rows.extend(from_sqlite(ctx))
    return rows


def from_sqlite(ctx: Context) -> list[Result]:
    """Fold from the log the import left (skipped when the import did not run)."""
    if ctx.imported_db is None or not ctx.imported_db.exists():
        return [Result("fold", "SQLite log -> World.apply", skipped="needs the import benchmark")]
    sqlite_backend = need("streams.backends.sqlite", "SQLiteLog")
    path = ctx.imported_db

    def raw() -> tuple[int, float]:
        con = sqlite3.connect(path)
        loads = orjson.loads
        start = time.perf_counter()
        count = 0
        for (data,) in con.execute('SELECT data FROM events ORDER BY "offset"'):
            loads(data)
            count += 1
        spent = time.perf_counter() - start
        con.close()
        return count, spent

    async def fold(apply: bool) -> tuple[int, float]:
        log = await sqlite_backend.SQLiteLog.open(path)
        world = new_world() if apply else None
        try:
            start = time.perf_counter()
            count = 0
            if world is not None:
                fold_one = world.apply
                async for event in log.read():
                    fold_one(event)
                    count += 1
            else:
                async for _event in log.read():
                    count += 1
            spent = time.perf_counter() - start
        finally:
            await log.close()
        del world
        gc.collect()
        return count, spent

    best_raw = best_fold = best_read = (0, float("inf"))
    for _ in range(max(1, ctx.repeat - 1)):
        best_raw = min(best_raw, raw(), key=lambda x: x[1])
        best_read = min(best_read, asyncio.run(fold(False)), key=lambda x: x[1])
        best_fold = min(best_fold, asyncio.run(fold(True)), key=lambda x: x[1])
    rows = [
        rate_row(
            "fold",
            f"SQLite log -> SQLiteLog.read + {world_name().split()[0]}.apply",
            best_fold[0],
            best_fold[1],
            best_raw[0],
            best_raw[1],
            "sqlite3 SELECT + orjson.loads",
            TARGET,
        ),
        rate_row(
            "fold",
            "  SQLiteLog.read only (info)",
            best_read[0],
            best_read[1],
            best_raw[0],
            best_raw[1],
            "sqlite3 SELECT + orjson.loads",
            0.0,
        ),
    ]
    rows[0].target = f"ratio >= {TARGET} (info)"
    rows[1].target, rows[1].ok = "(info)", None
    return rows
