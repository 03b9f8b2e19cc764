"""``tide run`` against the API double with one node whose metrics froze (issue 25 item 8).

metrics-server keeps serving ``frozen``'s last point, measured five minutes before the
run's clock (its kubelet stopped answering); ``hot`` is measured on. Both read 95 % CPU.
The run's ``/readyz`` names ``frozen`` as stale (it stays ready: a stale node is not the
controller's fault), and pressure eviction, at behaviour level 4, decides on ``hot`` only.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp

from streams.events import format_time
from tests.builders import build_node, build_pod
from tests.kubedouble import ApiDouble
from tests.live.scenario import Tide


def serve_metrics(double: ApiDouble, frozen_at: str) -> None:
    now = format_time(datetime.now(UTC))
    double.metrics["nodes"] = {
        name: {
            "metadata": {"name": name},
            "timestamp": stamp,
            "window": "10s",
            "usage": {"cpu": "15200m", "memory": "4Gi"},
        }
        for name, stamp in (("hot", now), ("frozen", frozen_at))
    }


async def feed(double: ApiDouble, frozen_at: str) -> None:
    while True:
        serve_metrics(double, frozen_at)
        await asyncio.sleep(0.25)


async def test_readyz_names_the_frozen_node_and_pressure_skips_it(
    double: ApiDouble, tmp_path: Path
) -> None:
    for name in ("hot", "frozen"):
        double.create("nodes", build_node(name, cpu="16"))
        for i in range(2):
            labels = {"koordinator.sh/qosClass": "BE"}
            pod = build_pod(
                "best", f"{name}-{i}", node=name, labels=labels, owner_kind="ReplicaSet"
            )
            double.create("pods", pod)
    frozen_at = format_time(datetime.now(UTC) - timedelta(minutes=5))
    config = {
        "actions": "allocate",
        "tiers": [{"plugins": [{"name": "priority"}]}, {"plugins": [{"name": "predicates"}]}],
        "eviction": {
            "cpuEvict": {"enabled": True, "evictThreshold": 80, "maxEvictionPerBatch": 1},
            "memoryEvict": {"enabled": False},
            "pressureStableThreshold": 1,
        },
    }
    feeder = asyncio.create_task(feed(double, frozen_at))
    tide = Tide(double, tmp_path, offset=0.0, dry_run=True, config=config)
    try:
        await tide.start()
        await tide.ready()
        status, body = 0, ""
        # until ready *and* naming the stale node: the first poll names it at once, and on
        # a loaded machine that comes before the last source has listed (503 "listing"),
        # which is the run's start-up, not the stale node's doing
        try:
            async with asyncio.timeout(30), aiohttp.ClientSession() as session:
                while status != 200 or "stale" not in body:
                    await asyncio.sleep(0.2)
                    async with session.get(f"{tide.url}/readyz") as answer:
                        status, body = answer.status, await answer.text()
        except TimeoutError:
            raise AssertionError(f"/readyz, 30 s after the start: {status}\n{body}") from None
        assert status == 200, body
        lines = body.splitlines()
        assert lines[0] == "ready"
        stale = [line for line in lines if "stale" in line]
        assert len(stale) == 1, body
        assert stale[0].startswith(
            "metrics: stale on 1 node, no evidence for pressure eviction: frozen ("
        ), body
        assert "limit 30 s)" in stale[0]
        await asyncio.sleep(1.0)
        assert await tide.stop() == 0, await tide.stderr()
    finally:
        feeder.cancel()
        if tide.running:
            await tide.stop()
    events = await tide.events()
    stamps = {e.data.get("behaviour") for e in events if e.type == "config.applied"}
    assert stamps == {4}
    evicted = {e.data["node"] for e in events if e.type == "decision.evict"}
    assert evicted == {"hot"}
    assert any(e.type == "metrics.node" and e.data["metadata"]["name"] == "frozen" for e in events)
