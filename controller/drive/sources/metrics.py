"""Polling metrics-server (``metrics.k8s.io/v1beta1``) onto the log.

Every ``interval`` the source lists NodeMetrics and PodMetrics and offers each object as
one ``metrics.node`` / ``metrics.pod`` record, as the API returned it; the tap drops a
sample whose ``timestamp`` did not advance (metrics-server refreshes every 15 s or so,
more slowly than tide may poll). When the API is not served — metrics-server missing, or
its APIService unavailable (503) — the source says so once, keeps polling, and
``available`` stays false: pressure eviction then has no samples to act on, and the
recorder's ``/readyz`` and startup lines say it.

The source also keeps each node's newest sample's own time (``timestamp`` and ``window``,
:func:`projections.usage_fresh.freshness`), whether or not the tap wrote it: a node whose
kubelet stopped answering is served with the same point again (the tap drops it) or not
served at all, and either way its last sample ages. :meth:`MetricsSource.stale_nodes`
names the nodes whose newest sample is older than three resolutions at the tap's time
(pressure eviction takes such a sample as no evidence, ``docs/BEHAVIOUR.md``
``stale-metrics``), and :meth:`MetricsSource.report` says it for ``/readyz``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from controller.drive.kube.client import KubeClient
from controller.drive.kube.errors import KubeError
from controller.drive.kube.resources import METRICS
from controller.drive.sources.tap import Tap
from projections.usage_fresh import Freshness, freshness
from streams.payloads import RawObject

__all__ = ["MetricsSource", "StaleNode"]


class StaleNode(NamedTuple):
    """A node whose newest sample is no evidence: ``age`` and ``limit`` in seconds."""

    name: str
    age: float
    limit: float


class MetricsSource:
    """Polls the metrics API (see the module docstring).

    Args:
        client: the API connection.
        tap: where samples go.
        interval: seconds between polls.
        warn: told one line when the metrics API stops or starts answering.
        sleep: how to wait.
    """

    def __init__(
        self,
        client: KubeClient,
        tap: Tap,
        *,
        interval: float,
        warn: Callable[[str], None],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if interval <= 0:
            raise ValueError(f"the metrics interval must be positive, not {interval}")
        self.client = client
        self.tap = tap
        self.interval = interval
        self.warn = warn
        self.sleep = sleep
        self.available: bool | None = None
        self.polls = 0
        #: node -> the own time of the newest sample metrics-server served for it
        self.node_times: dict[str, Freshness] = {}

    async def run(self) -> None:
        """Poll until cancelled."""
        while True:
            await self.poll()
            await self.sleep(self.interval)

    async def poll(self) -> None:
        """One poll of both collections."""
        self.polls += 1
        failures: list[KubeError] = []
        for type_, resource in METRICS.items():
            try:
                result = await self.client.list(resource.path)
            except KubeError as exc:
                if not (exc.retriable or exc.status == 404):
                    raise
                failures.append(exc)
                continue
            for item in result.items:
                if type_ == "metrics.node":
                    self._noted(item)
                self.tap.sample(type_, item)
        available = not failures
        if available != self.available:
            if not available:
                self.warn(
                    f"metrics: metrics.k8s.io is not answering ({failures[0]}); is "
                    "metrics-server installed? pressure eviction has nothing to act on"
                )
            elif self.available is not None:
                self.warn("metrics: metrics.k8s.io answers again")
        self.available = available

    def _noted(self, item: RawObject) -> None:
        meta = item.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        fresh = freshness(item)
        if not isinstance(name, str) or fresh is None:
            return
        was = self.node_times.get(name)
        if was is None or fresh.stamp >= was.stamp:
            self.node_times[name] = fresh

    def stale_nodes(self) -> list[StaleNode]:
        """The nodes whose newest sample is stale at the tap's time, by name; a node the
        log no longer holds (deleted) is not named once the nodes are watched."""
        at = self.tap.now().timestamp()
        nodes = self.tap.known.of("nodes")
        return [
            StaleNode(name, round(fresh.age(at), 1), fresh.limit)
            for name, fresh in sorted(self.node_times.items())
            if fresh.stale(at) and (not nodes or name in nodes)
        ]

    def report(self) -> list[str]:
        """``/readyz``'s lines about the node samples: none while every one is fresh."""
        stale = self.stale_nodes()
        if not stale:
            return []
        named = ", ".join(f"{n.name} ({n.age:g} s old, limit {n.limit:g} s)" for n in stale)
        return [
            f"metrics: stale on {len(stale)} node{'s' if len(stale) > 1 else ''}, no "
            f"evidence for pressure eviction: {named}"
        ]
