"""Pressure-eviction metrics as a fold of the log: the numbers, without an exposition.

Why here and not in ``replay``: the live controller serves the same numbers on
``/metrics`` as ``tide audit metrics`` prints for a log, and it may not import ``replay``.
:class:`EvictionMetrics` folds records one by one (a live process feeds it as it appends);
:func:`compute_metrics` folds a whole log. The Prometheus exposition (metric families,
text format) is :mod:`replay.metrics`; this module imports no ``prometheus_client``.

Only decisions with ``source == "pressure"`` count. What is kept:

* ``totals[(koordlet reason, reason code)]`` — eviction decisions; the koordlet reason is
  ``cpu_pressure``, ``memory_pressure``, ``oom_risk``, ``faulty_pod``,
  ``predicted_pressure`` (tide's eviction reasons, in the koordlet's style), the code tide's reason
  code (``faulty_pod`` is ``faulty-oom`` or ``faulty-memory-leak``);
* ``latencies`` — seconds from each decision (whose ``at`` is its trigger's) to its
  ``effect.applied`` (the notice delay included), and ``applied``, how many;
* ``state`` — the pressure projection (cooldowns, their verification);
* ``judged`` / ``accurate`` — predictive rounds judged, and those whose prediction came
  true: a later sample within ``predictionWindow`` showed the pressure above
  ``advanceEvictThreshold`` once the usage of the round's victims already gone is added
  back (what the node would have carried without the eviction). A round is judged at the
  first sample that shows it, or as wrong at the first sample after its window;
* ``freed[node]`` — usage (CPU milli, memory bytes) of the victims of the node's latest
  round (all its batches).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from projections.parsing import milli, units
from projections.pressure import SOURCE, PressureState
from streams.events import Event
from streams.payloads import (
    EvictPayload,
    as_effect,
    as_evict,
    as_node_sample,
    as_watch,
    pressure_evidence,
)

KOORDLET_REASONS = {
    "cpu-pressure": "cpu_pressure",
    "memory-pressure": "memory_pressure",
    "oom-risk": "oom_risk",
    "faulty-oom": "faulty_pod",
    "faulty-memory-leak": "faulty_pod",
    "predicted-pressure": "predicted_pressure",
}


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
        if kind == "decision.evict":
            data = as_evict(event)
            if data.get("source") == SOURCE:
                self._eviction(event, data)
        elif kind == "effect.applied":
            at = self._decided.pop(str(as_effect(event).get("decision") or event.cause), None)
            if at is not None:
                self.applied += 1
                self.latencies.append((event.at - at).total_seconds())
        elif kind in ("effect.failed", "effect.skipped"):
            self._decided.pop(str(as_effect(event).get("decision") or event.cause), None)
        elif kind == "k8s.watch":
            # the payload typed without a call per record (a TypedDict is the dict itself)
            if TYPE_CHECKING:
                watch = as_watch(event)
            else:
                watch = event.data
            if watch.get("event") != "DELETED":
                return
            uid = str(((watch.get("object") or {}).get("metadata") or {}).get("uid"))
            held = self._victim_usage.pop(uid, None)
            if held is not None and held[0] in self._predictions:
                self._predictions[held[0]].gone += held[1]
        elif kind == "metrics.node" and self._predictions:
            self._judge(event)

    def _eviction(self, event: Event, data: EvictPayload) -> None:
        reason = str(data.get("reason") or "")
        key = (KOORDLET_REASONS.get(reason, reason.replace("-", "_")), reason)
        self.totals[key] = self.totals.get(key, 0) + 1
        self._decided[event.id] = event.at
        evidence = pressure_evidence(data)
        victim = evidence.get("victim", {}) or {}
        cpu, memory = float(victim.get("cpu_milli") or 0), float(victim.get("memory") or 0)
        node = str(data.get("node") or "")
        round_id = str((evidence.get("round", {}) or {}).get("id") or event.id)
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
        if TYPE_CHECKING:
            data = as_node_sample(sample)
        else:
            data = sample.data
        node = (data.get("metadata") or {}).get("name")
        usage = data.get("usage") or {}
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


def compute_metrics(events: Iterable[Event]) -> EvictionMetrics:
    """Fold a whole log (records in offset order) into the metrics."""
    metrics = EvictionMetrics()
    for event in events:
        metrics.apply(event)
    return metrics
