"""Record rate: `tide record`'s first list of the pods onto a SQLite log, against a raw
fetch-parse-store of the same pages.

A small aiohttp server on 127.0.0.1 serves the recording's pods as ``/api/v1/pods`` in
pages of 500 (``limit`` / ``continue``, each page encoded when asked, as an API server
does) and empty lists of the other collections; watches stay open and silent until their
timeout. Both sides pay the same server.

Baseline: an ``aiohttp`` session GETs the same pages, ``orjson.loads`` each (the cyclic
collector paused, as the recorder pauses it), dumps every
pod with ``orjson.dumps`` and stores it with ``sqlite3.executemany`` + ``COMMIT`` (one
transaction per page) into a fresh WAL file (``synchronous=NORMAL``) — the least any
recorder that fetches, parses and keeps the raw objects must spend.

Subject: a :class:`controller.drive.sources.recorder.Recorder` over a fresh ``SQLiteLog``
(pods only, no metrics, no probes), timed from ``run`` until it is ready — the first list
is on the log: fetched through kubernetes-asyncio's connection, diffed against the empty
fold, validated, stamped, content-hashed, encoded and appended in batches.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from benchmarks.common import Context, Result, need, rate_row, read_lines
from streams.gcpause import paused_gc

TARGET = 0.5
PAGE = 500


def _pods(ctx: Context, limit: int) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = []
    for line in read_lines(ctx.recording):
        record = orjson.loads(line)
        data = record.get("data") or {}
        added = data.get("resource") == "pods" and data.get("event") == "ADDED"
        if record.get("type") == "k8s.watch" and added:
            pods.append(data["object"])
            if len(pods) >= limit:
                break
    return pods


async def _serve(pods: list[dict[str, Any]]) -> tuple[web.AppRunner, str]:
    async def collection(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            response = web.StreamResponse()
            await response.prepare(request)
            await asyncio.sleep(float(request.query.get("timeoutSeconds", "5")))
            return response
        items = pods if request.path == "/api/v1/pods" else []
        start = int(request.query.get("continue") or 0)
        limit = int(request.query.get("limit") or PAGE)
        meta: dict[str, Any] = {"resourceVersion": "1"}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        body = {"kind": "List", "metadata": meta, "items": items[start : start + limit]}
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    app = web.Application()
    app.router.add_get("/{tail:.*}", collection)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


async def _baseline(url: str, db: Path) -> tuple[int, float]:
    db.unlink(missing_ok=True)
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute('CREATE TABLE events ("offset" INTEGER PRIMARY KEY, data BLOB)')
    count = 0
    start = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        token = ""
        while True:
            query = {"limit": str(PAGE), **({"continue": token} if token else {})}
            async with session.get(f"{url}/api/v1/pods", params=query) as answer:
                raw = await answer.read()
            with paused_gc():  # as the recorder parses a page
                body = orjson.loads(raw)
            rows = [(count + i, orjson.dumps(item)) for i, item in enumerate(body["items"])]
            connection.executemany("INSERT INTO events VALUES (?, ?)", rows)
            connection.commit()
            count += len(rows)
            token = body["metadata"].get("continue", "")
            if not token:
                break
    spent = time.perf_counter() - start
    connection.close()
    return count, spent


async def _subject(url: str, db: Path) -> tuple[int, float]:
    client_module = need("controller.drive.kube.client", "KubeClient")
    recorder_module = need("controller.drive.sources.recorder", "Recorder", "RecorderOptions")
    resources = need("controller.drive.kube.resources", "WATCHED")
    sqlite_backend = need("streams.backends.sqlite", "SQLiteLog")
    db.unlink(missing_ok=True)
    pods_only = tuple(r for r in resources.WATCHED if r.plural == "pods")
    options = recorder_module.RecorderOptions(
        metrics_interval=None, health_address=None, watch_timeout=5, resources=pods_only
    )
    log = await sqlite_backend.SQLiteLog.open(db)
    async with client_module.KubeClient.for_host(url) as client:
        recorder = recorder_module.Recorder(
            client, log, now=lambda: datetime.now(UTC), options=options, warn=lambda _: None
        )
        await recorder.prepare()
        stop = asyncio.Event()
        start = time.perf_counter()
        task = asyncio.create_task(recorder.run(stop))
        while not recorder.ready:
            await asyncio.sleep(0.001)
        spent = time.perf_counter() - start
        stop.set()
        await task
    await log.close()
    return recorder.written, spent


def run(ctx: Context) -> list[Result]:
    need("controller.drive.sources.recorder", "Recorder")
    pods = _pods(ctx, 20_000 if not ctx.quick else 6_000)

    async def measure() -> tuple[tuple[int, float], tuple[int, float]]:
        runner, url = await _serve(pods)
        best_base = best_subject = (0, float("inf"))
        try:
            for _ in range(ctx.repeat):  # interleaved, so noise hits both alike
                best_base = min(best_base, await _baseline(url, ctx.work / "raw.db"), key=_secs)
                best_subject = min(
                    best_subject, await _subject(url, ctx.work / "rec.db"), key=_secs
                )
        finally:
            await runner.cleanup()
        return best_base, best_subject

    base, subject = asyncio.run(measure())
    return [
        rate_row(
            "record",
            f"tide record: first list of {len(pods):,} pods onto SQLite",
            *subject,
            *base,
            "aiohttp GET + orjson + sqlite3.executemany, same pages",
            TARGET,
            unit="objects/s",
        )
    ]


def _secs(result: tuple[int, float]) -> float:
    return result[1]
