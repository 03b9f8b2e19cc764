"""Pressure check per node sample: ``controller.policy.pressure.check_node(world, sample, cfg)``.

Over the folded world (5,000 nodes by default), one ``metrics.node`` sample per Ready
node, a minute after the recording ends, at 30 % CPU and 40 % memory of allocatable:
no eviction is due, so this is the cost every sample pays. The samples are folded
into the world first (untimed); then every sample is checked, best of ``repeat``
(>= 3) passes. Target <= 20 µs per sample. Baseline (same run, for scale):
``orjson.loads`` of the sample's canonical line.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import orjson

from benchmarks.common import Context, Result, need
from benchmarks.generate import T0

TARGET_US = 20.0


def samples(world: Any) -> list[Any]:
    from streams.events import format_time, make_event

    at = T0 + timedelta(minutes=12)
    out = []
    for name in sorted(world.cluster.nodes):
        node = world.cluster.nodes[name]
        if not getattr(node, "ready", True):
            continue
        alloc = node.allocatable
        data = {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "NodeMetrics",
            "metadata": {"name": name},
            "timestamp": format_time(at - timedelta(seconds=5)),
            "window": "20s",
            "usage": {
                "cpu": f"{int(alloc.milli_cpu * 0.3 * 1_000_000)}n",
                "memory": f"{int(alloc.memory * 0.4) // 1024}Ki",
            },
        }
        out.append(make_event("metrics.node", at, data))
    return out


def run(ctx: Context) -> list[Result]:
    pressure = need("controller.policy.pressure", "check_node")
    config_mod = need("controller.policy.pressure.config", "parse_eviction_config")
    codec = need("streams.codec", "encode")
    from benchmarks.bench_policy import world_for

    world = world_for(ctx)
    cfg = config_mod.parse_eviction_config({})
    events = samples(world)
    for event in events:
        world.apply(event)
    check = pressure.check_node
    best = float("inf")
    decisions: list[Any] = []
    for _ in range(max(3, ctx.repeat)):
        start = time.perf_counter()
        for event in events:
            result = check(world, event, cfg)
            if result:
                decisions.append(result)
        best = min(best, time.perf_counter() - start)
    lines = [codec.encode(event) for event in events]
    loads = orjson.loads
    base = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for line in lines:
            loads(line)
        base = min(base, time.perf_counter() - start)
    per = best / len(events) * 1e6
    per_base = base / len(events) * 1e6
    return [
        Result(
            "pressure",
            f"check_node, {len(events):,} nodes, no eviction due",
            per,
            "µs",
            per_base,
            "orjson.loads of the sample line",
            per / per_base,
            f"<= {TARGET_US:.0f} µs",
            per <= TARGET_US,
            notes=f"{len(decisions)} non-empty results over {max(3, ctx.repeat)} passes",
        )
    ]
