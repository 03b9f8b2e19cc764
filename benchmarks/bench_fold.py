"""Fold rate: the recording's lines folded through the projections, against raw
``orjson.loads`` of the same lines.

Baseline: ``for line in file: orjson.loads(line)`` (the same buffered read as the subject).
Subject: ``for line in file: world.apply(codec.decode(line))`` into a fresh
``projections.world.World`` (``fold_path`` picks a faster entry point if the tree
offers one). Informational rows split the time: ``codec.decode`` alone, and the fold
from the SQLite log the import benchmark left behind (``SQLiteLog.read`` +
``World.apply``) against ``sqlite3`` + ``orjson.loads`` of the stored payloads.
"""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import time
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from benchmarks.common import Context, Result, Skip, gc_disabled, need, rate_row, read_lines

TARGET = 0.7


def new_world() -> Any:
    """A fresh ``World``; until ``projections.world`` lands, a bare ``ClusterState``."""
    try:
        world_mod = need("projections.world", "World")
    except Skip:
        cluster = need("projections.cluster", "ClusterState")
        return cluster.ClusterState()
    world = world_mod.World()
    if "pressure" not in world.extra:  # the policies need it; not a default extra yet
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


def fold_path() -> tuple[str, Callable[[Any, Iterable[bytes]], int]]:
    """The fastest line-fold the tree offers: ``(description, fold(world, lines) -> n)``."""
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


def fold_recording(ctx: Context) -> tuple[Any, int, float]:
    """A fresh World folded over the whole recording: ``(world, events, seconds)``."""
    _, fold = fold_path()
    world = new_world()
    gc.collect()
    start = time.perf_counter()
    count = fold(world, read_lines(ctx.recording))
    return world, count, time.perf_counter() - start


def raw_loads(ctx: Context) -> tuple[int, float]:
    loads = orjson.loads
    start = time.perf_counter()
    count = 0
    for line in read_lines(ctx.recording):
        loads(line)
        count += 1
    return count, time.perf_counter() - start


def decode_only(ctx: Context) -> tuple[int, float]:
    decode = need("streams.codec", "decode").decode
    start = time.perf_counter()
    count = 0
    for line in read_lines(ctx.recording):
        decode(line)
        count += 1
    return count, time.perf_counter() - start


def run(ctx: Context) -> list[Result]:
    description, _ = fold_path()
    new_world()  # Skip early if the projections are not there
    best_base = best_fold = (0, float("inf"))
    for _ in range(ctx.repeat):
        ctx.world = None
        gc.collect()
        best_base = min(best_base, raw_loads(ctx), key=lambda x: x[1])
        world, count, spent = fold_recording(ctx)
        best_fold = min(best_fold, (count, spent), key=lambda x: x[1])
        ctx.world = world
        del world
    best_decode = min((decode_only(ctx) for _ in range(max(1, ctx.repeat - 1))), key=lambda x: x[1])
    ctx.world = None
    gc.collect()
    with gc_disabled():
        world, count, spent = fold_recording(ctx)
        ctx.world = world
        del world
    gc.collect()
    nogc = (count, spent)
    rows = [
        rate_row(
            "fold",
            f"recording -> {description}",
            best_fold[0],
            best_fold[1],
            best_base[0],
            best_base[1],
            "orjson.loads, same lines",
            TARGET,
        ),
        rate_row(
            "fold",
            "  codec.decode only (info)",
            best_decode[0],
            best_decode[1],
            best_base[0],
            best_base[1],
            "orjson.loads",
            0.0,
        ),
    ]
    rows.append(
        rate_row(
            "fold",
            "  same fold, gc.disable() (info)",
            nogc[0],
            nogc[1],
            best_base[0],
            best_base[1],
            "orjson.loads",
            0.0,
        )
    )
    for row in rows[1:]:
        row.target, row.ok = "(info)", None
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
