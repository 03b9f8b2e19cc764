"""The metrics source: one record per sample that advanced; a missing metrics-server is
one warning, and /readyz says pressure eviction has nothing to act on."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import aiohttp

from controller.drive.kube.client import KubeClient
from controller.drive.sources.metrics import MetricsSource
from controller.drive.sources.recorder import RecorderOptions
from controller.drive.sources.tap import Tap
from projections.known import KnownObjects
from streams.backends.memory import MemoryLog
from streams.events import Event
from tests.controller.drive.sources.helpers import FAST, Running
from tests.kubedouble import ApiDouble

T = datetime(2026, 1, 1, tzinfo=UTC)


def node_sample(name: str, stamp: str, cpu: str = "1") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "timestamp": stamp,
        "window": "10s",
        "usage": {"cpu": cpu, "memory": "1Gi"},
    }


def pod_sample(name: str, stamp: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "timestamp": stamp,
        "window": "10s",
        "containers": [{"name": "c", "usage": {"cpu": "100m", "memory": "64Mi"}}],
    }


def queued(tap: Tap) -> list[tuple[str, str, str]]:
    out = []
    while not tap.queue.empty():
        item = tap.queue.get_nowait()
        assert isinstance(item, Event)
        out.append((item.type, item.data["metadata"]["name"], item.data["timestamp"]))
    return out


async def test_each_poll_writes_only_samples_that_advanced(
    double: ApiDouble, client: KubeClient
) -> None:
    warnings: list[str] = []
    tap = Tap(KnownObjects(), lambda: T)
    source = MetricsSource(client, tap, interval=10, warn=warnings.append)
    double.metrics = {
        "nodes": {"n1": node_sample("n1", "2026-01-01T00:00:10Z")},
        "pods": {"default/p": pod_sample("p", "2026-01-01T00:00:10Z")},
    }
    await source.poll()
    double.metrics["nodes"]["n2"] = node_sample("n2", "2026-01-01T00:00:15Z")
    await source.poll()
    double.metrics["nodes"]["n1"] = node_sample("n1", "2026-01-01T00:00:25Z", cpu="3")
    await source.poll()
    assert queued(tap) == [
        ("metrics.node", "n1", "2026-01-01T00:00:10Z"),
        ("metrics.pod", "p", "2026-01-01T00:00:10Z"),
        ("metrics.node", "n2", "2026-01-01T00:00:15Z"),
        ("metrics.node", "n1", "2026-01-01T00:00:25Z"),
    ]
    assert source.available is True and warnings == []


async def test_a_missing_metrics_server_warns_once_and_recovers(
    double: ApiDouble, client: KubeClient
) -> None:
    warnings: list[str] = []
    tap = Tap(KnownObjects(), lambda: T)
    source = MetricsSource(client, tap, interval=10, warn=warnings.append)
    double.metrics_served = False
    await source.poll()
    await source.poll()
    assert source.available is False
    double.metrics_served = True
    await source.poll()
    assert source.available is True
    assert warnings == [
        "metrics: metrics.k8s.io is not answering (GET /apis/metrics.k8s.io/v1beta1/nodes:"
        " HTTP 404: the server could not find the requested resource); is metrics-server"
        " installed? pressure eviction has nothing to act on",
        "metrics: metrics.k8s.io answers again",
    ]


async def test_readyz_waits_for_the_lists_and_says_metrics_are_missing(
    double: ApiDouble, client: KubeClient
) -> None:
    double.metrics_served = False
    options = RecorderOptions(
        metrics_interval=0.1,
        watch_timeout=2,
        health_address="127.0.0.1:0",
        backoff_base=0.01,
        backoff_cap=0.1,
    )
    assert FAST.health_address is None
    runner = Running(client, MemoryLog(), options)
    async with runner as recorder, aiohttp.ClientSession() as session:
        assert recorder.health is not None
        base = f"http://127.0.0.1:{recorder.health.port}"
        async with session.get(f"{base}/healthz") as answer:
            assert (answer.status, await answer.text()) == (200, "ok\n")
        while recorder.metrics is not None and recorder.metrics.available is None:
            await asyncio.sleep(0.02)
        async with session.get(f"{base}/readyz") as answer:
            body = await answer.text()
            assert answer.status == 200
    assert body.splitlines()[0] == "ready"
    assert "pods: listed (resourceVersion 0)" in body
    assert "metrics: unavailable; pressure eviction has nothing to act on" in body


async def test_a_frozen_node_is_named_stale_though_the_tap_drops_its_repeats(
    double: ApiDouble, client: KubeClient
) -> None:
    now = [T]
    tap = Tap(KnownObjects(), lambda: now[0])
    source = MetricsSource(client, tap, interval=10, warn=lambda _: None)
    # n1's kubelet stopped at 00:00:00: metrics-server re-serves that point (window 10 s)
    double.metrics = {
        "nodes": {
            "n1": node_sample("n1", "2026-01-01T00:00:00Z"),
            "n2": node_sample("n2", "2026-01-01T00:00:00Z"),
        },
        "pods": {},
    }
    await source.poll()
    assert source.stale_nodes() == [] and source.report() == []
    now[0] = datetime(2026, 1, 1, 0, 0, 31, tzinfo=UTC)
    double.metrics["nodes"]["n2"] = node_sample("n2", "2026-01-01T00:00:30Z")
    await source.poll()
    assert [n.name for n in source.stale_nodes()] == ["n1"]  # 31 s > 3 x 10 s
    assert source.report() == [
        "metrics: stale on 1 node, no evidence for pressure eviction: n1 (31 s old, limit 30 s)"
    ]
    assert [item[1] for item in queued(tap)] == ["n1", "n2", "n2"]  # n1 written once
    # metrics-server stops serving n1 (its scrapes fail): still stale, as it ages
    del double.metrics["nodes"]["n1"]
    now[0] = datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)
    double.metrics["nodes"]["n2"] = node_sample("n2", "2026-01-01T00:00:55Z")
    await source.poll()
    assert [(n.name, n.age) for n in source.stale_nodes()] == [("n1", 60.0)]


async def test_a_deleted_node_is_not_named_once_nodes_are_watched(
    double: ApiDouble, client: KubeClient
) -> None:
    known = KnownObjects()
    known.note("nodes", "ADDED", {"metadata": {"name": "n2", "resourceVersion": "1"}})
    tap = Tap(known, lambda: datetime(2026, 1, 1, 0, 5, tzinfo=UTC))
    source = MetricsSource(client, tap, interval=10, warn=lambda _: None)
    double.metrics = {
        "nodes": {
            "n1": node_sample("n1", "2026-01-01T00:00:00Z"),
            "n2": node_sample("n2", "2026-01-01T00:00:00Z"),
        },
        "pods": {},
    }
    await source.poll()
    assert [n.name for n in source.stale_nodes()] == ["n2"]


async def test_readyz_names_the_nodes_whose_metrics_are_stale(
    double: ApiDouble, client: KubeClient
) -> None:
    double.metrics = {"nodes": {"n1": node_sample("n1", "2025-12-31T23:00:00Z")}, "pods": {}}
    options = RecorderOptions(
        metrics_interval=0.1,
        watch_timeout=2,
        health_address="127.0.0.1:0",
        backoff_base=0.01,
        backoff_cap=0.1,
    )
    runner = Running(client, MemoryLog(), options)
    async with runner as recorder, aiohttp.ClientSession() as session:
        assert recorder.health is not None
        while recorder.metrics is not None and recorder.metrics.available is None:
            await asyncio.sleep(0.02)
        async with session.get(f"http://127.0.0.1:{recorder.health.port}/readyz") as answer:
            body = await answer.text()
    assert "metrics: available" in body
    assert "metrics: stale on 1 node, no evidence for pressure eviction: n1 (" in body
