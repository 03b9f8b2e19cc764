"""The Prometheus exposition of the pressure-eviction metrics fold, for a whole log.

``tide audit metrics --log URL`` folds a whole log with :func:`compute_metrics` and prints
:func:`render`. The metric families themselves (names, labels, what each means) are
:mod:`controller.drive.observe.koordlet`'s, which the live controller serves on ``/metrics`` as
it folds record by record: both give the same numbers for the same log.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from controller.drive.observe.koordlet import LATENCY_BUCKETS, MetricsCollector, collect
from projections.metrics import EvictionMetrics, compute_metrics

__all__ = [
    "LATENCY_BUCKETS",
    "EvictionMetrics",
    "MetricsCollector",
    "collect",
    "compute_metrics",
    "registry",
    "render",
]


def registry(metrics: EvictionMetrics) -> CollectorRegistry:
    """A registry serving ``metrics`` (for ``/metrics`` or ``generate_latest``)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(MetricsCollector(metrics))
    return reg


def render(metrics: EvictionMetrics) -> str:
    """The Prometheus text exposition of ``metrics``."""
    text: bytes = generate_latest(registry(metrics))
    return text.decode()
