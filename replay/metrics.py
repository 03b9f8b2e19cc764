"""Pressure-eviction metrics (seed §9.11), computed as a fold of the log.

``tide audit metrics --log URL`` folds a whole log with :func:`compute_metrics`; a live
controller folds the same :class:`EvictionMetrics` record by record and serves its
:meth:`~EvictionMetrics.collect` on ``/metrics`` (``registry(metrics)`` or
``REGISTRY.register(metrics)``): both give the same numbers for the same log. The
collector builds metric families from the fold's state (no ``prometheus_client`` counters
with wall-clock ``_created`` samples), so :func:`render` is deterministic.

Only decisions with ``source == "pressure"`` count. Metrics:

* ``koordlet_eviction_total{reason, code}`` — eviction decisions; ``reason`` in the seed's
  vocabulary (``cpu_pressure``, ``memory_pressure``, ``oom_risk``, ``faulty_pod``,
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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from projections.parsing import milli, units
from projections.pressure import SOURCE, PressureState
from streams.events import Event

SEED_REASONS = {
    "cpu-pressure": "cpu_pressure",
    "memory-pressure": "memory_pressure",
    "oom-risk": "oom_risk",
    "faulty-oom": "faulty_pod",
    "faulty-memory-leak": "faulty_pod",
    "predicted-pressure": "predicted_pressure",
}
LATENCY_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 120.0, 300.0)


@dataclass(slots=True)
class _Prediction:
    node: str
    resource: str
    deadline: datetime
    threshold: float
    capacity: float
    gone: float = 0.0  # usage of the victims already deleted


class EvictionMetrics:
    """The metrics fold (see the module docstring). Feed it every record in log order."""

    def __init__(self) -> None:
        self.state = PressureState()
        self.totals: dict[tuple[str, str], int] = {}
        self.applied = 0
        self.latencies: list[float] = []
        self._decided: dict[str, datetime] = {}  # pressure eviction id -> decision time
        self._rounds: dict[str, tuple[str, float, float]] = {}  # round -> node, cpu, memory
        self.freed: dict[str, tuple[float, float]] = {}  # node -> latest round's cpu, memory
        self._predictions: dict[str, _Prediction] = {}  # round id -> pending prediction
        self._victim_usage: dict[str, tuple[str, float]] = {}  # uid -> round id, usage
        self._judged: set[str] = set()
        self.judged = 0
        self.accurate = 0

    def apply(self, event: Event) -> None:
        self.state.apply(event)
        kind = event.type
        if kind == "decision.evict" and event.data.get("source") == SOURCE:
            self._eviction(event)
        elif kind == "effect.applied":
            at = self._decided.pop(str(event.data.get("decision") or event.cause), None)
            if at is not None:
                self.applied += 1
                self.latencies.append((event.at - at).total_seconds())
        elif kind == "effect.failed":
            self._decided.pop(str(event.data.get("decision") or event.cause), None)
        elif kind == "k8s.watch" and event.data.get("event") == "DELETED":
            uid = str(((event.data.get("object") or {}).get("metadata") or {}).get("uid"))
            held = self._victim_usage.pop(uid, None)
            if held is not None and held[0] in self._predictions:
                self._predictions[held[0]].gone += held[1]
        elif kind == "metrics.node" and self._predictions:
            self._judge(event)

    def _eviction(self, event: Event) -> None:
        data = event.data
        reason = str(data.get("reason") or "")
        key = (SEED_REASONS.get(reason, reason.replace("-", "_")), reason)
        self.totals[key] = self.totals.get(key, 0) + 1
        self._decided[event.id] = event.at
        evidence = data.get("evidence") or {}
        victim = evidence.get("victim") or {}
        cpu, memory = float(victim.get("cpu_milli") or 0), float(victim.get("memory") or 0)
        node = str(data.get("node") or "")
        round_id = str((evidence.get("round") or {}).get("id") or event.id)
        _, sum_cpu, sum_mem = self._rounds.get(round_id, (node, 0.0, 0.0))
        self._rounds[round_id] = (node, sum_cpu + cpu, sum_mem + memory)
        self.freed[node] = (sum_cpu + cpu, sum_mem + memory)
        if reason != "predicted-pressure":
            return
        resource = str(evidence.get("resource") or "cpu")
        prediction = evidence.get("prediction") or {}
        if round_id not in self._predictions and round_id not in self._judged:
            window = float(prediction.get("prediction_window") or 0)
            self._predictions[round_id] = _Prediction(
                node=node,
                resource=resource,
                deadline=event.at + timedelta(seconds=window),
                threshold=float(prediction.get("advance_threshold") or 0),
                capacity=float(evidence.get("capacity") or 0),
            )
        if round_id in self._predictions:
            uid = str(data.get("uid") or "")
            self._victim_usage[uid] = (round_id, cpu if resource == "cpu" else memory)

    def _judge(self, sample: Event) -> None:
        node = (sample.data.get("metadata") or {}).get("name")
        usage = sample.data.get("usage") or {}
        for round_id in sorted(self._predictions):
            held = self._predictions[round_id]
            if held.node != node:
                continue
            used = (
                milli(usage.get("cpu", 0))
                if held.resource == "cpu"
                else units(usage.get("memory", 0))
            )
            if sample.at > held.deadline:
                self.judged += 1
            elif held.capacity > 0 and 100.0 * (used + held.gone) / held.capacity > held.threshold:
                self.judged += 1
                self.accurate += 1
            else:
                continue
            del self._predictions[round_id]
            self._judged.add(round_id)

    # ---- prometheus ------------------------------------------------------------------

    def collect(self) -> Iterator[Metric]:
        """Metric families for ``prometheus_client`` (a custom collector)."""
        total = CounterMetricFamily(
            "koordlet_eviction", "Pressure evictions decided, by reason.", labels=["reason", "code"]
        )
        for (reason, code), count in sorted(self.totals.items()):
            total.add_metric([reason, code], count)
        yield total

        buckets, cumulative = [], 0
        ordered = sorted(self.latencies)
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

        active = GaugeMetricFamily(
            "koordlet_eviction_cooldown_active",
            "1 while a pressure-eviction cooldown holds on the node for the resource.",
            labels=["node", "resource"],
        )
        clock = self.state.clock
        for node, resource in sorted(self.state.cooldowns):
            until = self.state.cooldowns[(node, resource)].until
            active.add_metric([node, resource], 1.0 if clock is not None and clock < until else 0.0)
        yield active

        accuracy = GaugeMetricFamily(
            "koordlet_predictive_eviction_accuracy",
            "Share of judged predictive eviction rounds whose predicted pressure was reached.",
        )
        if self.judged:
            accuracy.add_metric([], self.accurate / self.judged)
        yield accuracy

        evicted = CounterMetricFamily(
            "koordlet_evicted_pods", "Pods evicted by pressure eviction (effect applied)."
        )
        evicted.add_metric([], self.applied)
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
        for node in sorted(self.freed):
            cores, memory = self.freed[node]
            cpu.add_metric([node], cores / 1000.0)
            mem.add_metric([node], memory)
        yield cpu
        yield mem

        after = GaugeMetricFamily(
            "koordlet_eviction_pressure_after_eviction",
            "Pressure (%) at the verification of the node's latest round of the resource.",
            labels=["node", "resource"],
        )
        for node, resource in sorted(self.state.cooldowns):
            value = self.state.cooldowns[(node, resource)].after
            if value is not None:
                after.add_metric([node, resource], round(value, 3))
        yield after


def _fmt(bound: float) -> str:
    return f"{bound:g}" if bound != int(bound) else f"{bound:.1f}"


def compute_metrics(events: Iterable[Event]) -> EvictionMetrics:
    """Fold a whole log (records in offset order) into the metrics."""
    metrics = EvictionMetrics()
    for event in events:
        metrics.apply(event)
    return metrics


def registry(metrics: EvictionMetrics) -> CollectorRegistry:
    """A registry serving ``metrics`` (for ``/metrics`` or ``generate_latest``)."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(metrics)
    return reg


def render(metrics: EvictionMetrics) -> str:
    """The Prometheus text exposition of ``metrics``."""
    text: bytes = generate_latest(registry(metrics))
    return text.decode()
