"""The Prometheus exposition of the pressure-eviction (``koordlet_*``) metrics fold.

The numbers are :class:`projections.metrics.EvictionMetrics`, a fold of the log;
``tide audit metrics --log URL`` folds a whole log and prints it (:mod:`replay.metrics`);
the live controller folds the same record by record and serves :class:`MetricsCollector`
on ``/metrics`` (:mod:`controller.drive.observe.metrics`): both give the same numbers for the
same log. It lives here, below both, because the live controller may not import
``replay``. The collector builds metric families from the fold's state (no
``prometheus_client`` counters with wall-clock ``_created`` samples), so the exposition of
a log is deterministic. The names take the koordlet's ``koordlet_`` prefix; the metric set and the
``reason`` values are tide's design (beyond upstream koordlet, which exports only
``koordlet_pod_eviction{node, reason}`` and ``koordlet_pod_eviction_detail``:
koordinator-sh/koordinator pkg/koordlet/metrics).

Only decisions with ``source == "pressure"`` count. Metrics:

* ``koordlet_eviction_total{reason, code}`` — eviction decisions; ``reason`` one of Koordinator's
  eviction reasons (``cpu_pressure``, ``memory_pressure``, ``oom_risk``, ``faulty_pod``,
  ``predicted_pressure``), ``code`` tide's reason code (``faulty_pod`` is
  ``faulty-oom`` or ``faulty-memory-leak``);
* ``koordlet_eviction_latency_seconds`` — histogram, from the decision (whose ``at`` is
  its trigger's) to its ``effect.applied`` (the notice delay included);
* ``koordlet_eviction_cooldown_active{node, resource}`` — 1 while a cooldown holds at the
  log's newest record, else 0 (every node/resource that ever had one);
* ``koordlet_predictive_eviction_accuracy`` — the share of judged predictive rounds whose
  prediction came true: a later sample within ``predictionWindow`` showed the pressure
  above ``advanceEvictThreshold`` once the usage of the round's victims already gone is
  added back (what the node would have carried without the eviction). A round is judged
  at the first sample that shows it, or as wrong at the first sample after its window;
  absent until a round is judged;
* ``koordlet_evicted_pods_total`` — evictions applied (``effect.applied``);
* ``koordlet_eviction_freed_cpu_cores{node}`` / ``koordlet_eviction_freed_memory_bytes{node}``
  — usage of the victims of the node's latest round (all its batches);
* ``koordlet_eviction_pressure_after_eviction{node, resource}`` — the pressure (%) at the
  verification of the node's latest round of that resource (the first sample once its
  cooldown has passed).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from projections.metrics import KOORDLET_REASONS, EvictionMetrics

__all__ = ["LATENCY_BUCKETS", "MetricsCollector", "collect"]

LATENCY_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 120.0, 300.0)


class MetricsCollector:
    """A ``prometheus_client`` custom collector serving an :class:`EvictionMetrics` fold."""

    def __init__(self, metrics: EvictionMetrics, *, zeros: bool = False) -> None:
        self.metrics = metrics
        self.zeros = zeros

    def collect(self) -> Iterator[Metric]:
        """Metric families built from the fold's current state."""
        return collect(self.metrics, zeros=self.zeros)


def collect(metrics: EvictionMetrics, *, zeros: bool = False) -> Iterator[Metric]:
    """The metric families of ``metrics`` (see the module docstring); with ``zeros`` every
    known ``{reason, code}`` of ``koordlet_eviction_total`` is present from the start."""
    total = CounterMetricFamily(
        "koordlet_eviction", "Pressure evictions decided, by reason.", labels=["reason", "code"]
    )
    counts = dict(metrics.totals)
    if zeros:
        for code, reason in KOORDLET_REASONS.items():
            counts.setdefault((reason, code), 0)
    for (reason, code), count in sorted(counts.items()):
        total.add_metric([reason, code], count)
    yield total

    buckets, cumulative = [], 0
    ordered = sorted(metrics.latencies)
    i = 0
    for bound in LATENCY_BUCKETS:
        while i < len(ordered) and ordered[i] <= bound:
            i += 1
        cumulative = i
        buckets.append((_fmt(bound), float(cumulative)))
    buckets.append(("+Inf", float(len(ordered))))
    latency = HistogramMetricFamily(
        "koordlet_eviction_latency_seconds",
        "Seconds from an eviction's trigger to its effect being applied.",
    )
    latency.add_metric([], buckets, sum_value=sum(ordered))
    yield latency

    state = metrics.state
    active = GaugeMetricFamily(
        "koordlet_eviction_cooldown_active",
        "1 while a pressure-eviction cooldown holds on the node for the resource.",
        labels=["node", "resource"],
    )
    clock = state.clock
    for node, resource in sorted(state.cooldowns):
        until = state.cooldowns[(node, resource)].until
        active.add_metric([node, resource], 1.0 if clock is not None and clock < until else 0.0)
    yield active

    accuracy = GaugeMetricFamily(
        "koordlet_predictive_eviction_accuracy",
        "Share of judged predictive eviction rounds whose predicted pressure was reached.",
    )
    if metrics.judged:
        accuracy.add_metric([], metrics.accurate / metrics.judged)
    yield accuracy

    evicted = CounterMetricFamily(
        "koordlet_evicted_pods", "Pods evicted by pressure eviction (effect applied)."
    )
    evicted.add_metric([], metrics.applied)
    yield evicted

    cpu = GaugeMetricFamily(
        "koordlet_eviction_freed_cpu_cores",
        "CPU cores used by the victims of the node's latest eviction round.",
        labels=["node"],
    )
    mem = GaugeMetricFamily(
        "koordlet_eviction_freed_memory_bytes",
        "Memory bytes used by the victims of the node's latest eviction round.",
        labels=["node"],
    )
    for node in sorted(metrics.freed):
        cores, memory = metrics.freed[node]
        cpu.add_metric([node], cores / 1000.0)
        mem.add_metric([node], memory)
    yield cpu
    yield mem

    after = GaugeMetricFamily(
        "koordlet_eviction_pressure_after_eviction",
        "Pressure (%) at the verification of the node's latest round of the resource.",
        labels=["node", "resource"],
    )
    for node, resource in sorted(state.cooldowns):
        value = state.cooldowns[(node, resource)].after
        if value is not None:
            after.add_metric([node, resource], round(value, 3))
    yield after


def _fmt(bound: float) -> str:
    return f"{bound:g}" if bound != int(bound) else f"{bound:.1f}"
