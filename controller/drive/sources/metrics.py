"""Polling metrics-server (``metrics.k8s.io/v1beta1``) onto the log.

Every ``interval`` the source lists NodeMetrics and PodMetrics and offers each object as
one ``metrics.node`` / ``metrics.pod`` record, as the API returned it; the tap drops a
sample whose ``timestamp`` did not advance (metrics-server refreshes every 15 s or so,
more slowly than tide may poll). When the API is not served — metrics-server missing, or
its APIService unavailable (503) — the source says so once, keeps polling, and
``available`` stays false: pressure eviction then has no samples to act on, and the
recorder's ``/readyz`` and startup lines say it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from controller.drive.kube.client import KubeClient
from controller.drive.kube.errors import KubeError
from controller.drive.kube.resources import METRICS
from controller.drive.sources.tap import Tap

__all__ = ["MetricsSource"]


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
