"""The live controller's Prometheus metrics: a :class:`LiveObserver` that counts.

Why a registry of its own: ``tide run`` serves exactly these families on ``/metrics``
(:mod:`controller.drive.observe.http`), and a test or a second observer in one process must not
collide in ``prometheus_client``'s global registry. Every label set tide can increment is
exported at 0 from the start (and no other), so ``rate()`` and ``increase()`` see a
series' first increment: a series born at 1 has no earlier sample to rise from, and
Prometheus reads its first increment as none.

Families:

* ``tide_decisions_total{kind, reason, source}`` — decisions appended; the label sets at 0
  are :data:`DECISION_LABELS`, the (kind, reason code, source) of every decision tide
  writes, taken from each emitter's own constants (``kind="bind",reason="cpu-pressure"``
  is never exported: nothing writes it);
* ``tide_effects_total{kind, result, reason}`` — outcomes: ``applied`` (reason ""),
  ``failed`` and ``skipped`` with the outcome's reason code
  (:data:`streams.payloads.EFFECT_REASONS`; ``unknown`` for an outcome that carries none);
* ``tide_event_errors_total`` — core/v1 Events the effector could not create (the effect
  itself stands; the warning line names the decision);
* ``tide_session_seconds`` — histogram of one trigger's decide, real time;
* ``tide_log_append_lag_seconds`` — histogram from a record observed (or a trigger due)
  to its append;
* ``tide_watch_restarts_total{resource}`` — watches restarted or relisted;
* ``tide_leader`` / ``tide_ready`` — 1 while this replica leads / is ready;
* ``tide_build_info{version}`` — 1;
* the ``koordlet_*`` pressure-eviction families of :mod:`controller.drive.observe.koordlet`,
  folded from the decisions and outcomes as they are appended (and from any other record
  handed to :meth:`PrometheusObserver.record`, which the cooldown, accuracy and
  pressure-after gauges need).
"""

from __future__ import annotations

from importlib import metadata

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from controller.drive.observe.koordlet import MetricsCollector
from controller.policy.actions import allocate, backfill, preempt
from controller.policy.plugins import rescheduling, tdm
from controller.policy.pressure.decisions import TAINT_REASON
from projections.metrics import KOORDLET_REASONS, EvictionMetrics
from projections.pressure import SOURCE as PRESSURE
from streams.events import Event
from streams.payloads import DECISION_KINDS, EFFECT_REASONS, as_decision, as_effect

__all__ = [
    "DECISION_LABELS",
    "EFFECT_LABELS",
    "RESULTS",
    "WATCHED_RESOURCES",
    "PrometheusObserver",
    "build_version",
]

#: every (kind, reason, source) of a decision tide writes, from the writers' own constants:
#: the allocate and backfill actions bind; the preempt action evicts (its own reason, or
#: tdm's when the victim is preemptable); the shuffle action evicts the victims of the tdm
#: and rescheduling plugins, each with its plugin's reason and name; pressure eviction
#: evicts with one of its reasons (:data:`projections.metrics.KOORDLET_REASONS`, the codes
#: the koordlet families count) and taints and untaints the node it relieves
DECISION_LABELS: tuple[tuple[str, str, str], ...] = tuple(
    sorted(
        {
            ("bind", allocate.REASON, allocate.NAME),
            ("bind", backfill.REASON, backfill.NAME),
            ("evict", preempt.REASON, preempt.NAME),
            ("evict", preempt.TDM_REASON, preempt.NAME),
            ("evict", tdm.REASON_WINDOW_CLOSED, tdm.NAME),
            ("evict", rescheduling.REASON, rescheduling.NAME),
            *(("evict", code, PRESSURE) for code in KOORDLET_REASONS),
            ("taint", TAINT_REASON, PRESSURE),
            ("untaint", TAINT_REASON, PRESSURE),
        }
    )
)

#: the outcomes of an effect (the suffix of its ``effect.*`` record type)
RESULTS = ("applied", "failed", "skipped")
#: every (result, reason) of an outcome the Kubernetes effector writes
EFFECT_LABELS: tuple[tuple[str, str], ...] = tuple(
    (result, reason)
    for result in RESULTS
    for reason in sorted(EFFECT_REASONS[f"effect.{result}"]) or [""]
)
#: the collections the watch sources watch (``controller.drive.kube.resources.WATCHED``)
WATCHED_RESOURCES = ("nodes", "pods", "queues", "podgroups", "poddisruptionbudgets")
SESSION_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LAG_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0)


def build_version() -> str:
    """tide's installed version ("unknown" when not installed as a distribution)."""
    try:
        return metadata.version("tide")
    except metadata.PackageNotFoundError:
        return "unknown"


class PrometheusObserver:
    """Counts what the live loop reports (see the module docstring).

    Args:
        registry: where the families are registered; None: a new registry of its own
            (``self.registry``), never the global one.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        reg = self.registry
        self.decisions = Counter(
            "tide_decisions",
            "Decisions appended to the log.",
            ["kind", "reason", "source"],
            registry=reg,
        )
        self.effects = Counter(
            "tide_effects",
            "Effect outcomes appended to the log.",
            ["kind", "result", "reason"],
            registry=reg,
        )
        self.event_errors = Counter(
            "tide_event_errors",
            "core/v1 Events the effector could not create (the effect itself stands).",
            registry=reg,
        )
        self.sessions = Histogram(
            "tide_session_seconds",
            "Real seconds one trigger's session took to decide.",
            buckets=SESSION_BUCKETS,
            registry=reg,
        )
        self.lag = Histogram(
            "tide_log_append_lag_seconds",
            "Real seconds from a record observed (or a trigger due) to its append.",
            buckets=LAG_BUCKETS,
            registry=reg,
        )
        self.restarts = Counter(
            "tide_watch_restarts", "Watches restarted or relisted.", ["resource"], registry=reg
        )
        self.leading = Gauge("tide_leader", "1 while this replica leads.", registry=reg)
        self.readiness = Gauge("tide_ready", "1 while this replica is ready.", registry=reg)
        info = Gauge("tide_build_info", "tide's version.", ["version"], registry=reg)
        info.labels(version=build_version()).set(1)
        self.evictions = EvictionMetrics()
        reg.register(MetricsCollector(self.evictions, zeros=True))
        self.is_ready = False
        for kind, reason, source in DECISION_LABELS:
            self.decisions.labels(kind=kind, reason=reason, source=source)
        for kind in sorted(DECISION_KINDS):
            for result, reason in EFFECT_LABELS:
                self.effects.labels(kind=kind, result=result, reason=reason)
        for resource in WATCHED_RESOURCES:
            self.restarts.labels(resource=resource)

    def decided(self, decision: Event) -> None:
        """Count a decision and fold it into the eviction metrics."""
        data = as_decision(decision)
        kind = str(data.get("kind") or decision.type.removeprefix("decision."))
        self.decisions.labels(
            kind=kind, reason=str(data.get("reason") or ""), source=str(data.get("source") or "")
        ).inc()
        self.evictions.apply(decision)

    def effect(self, outcome: Event) -> None:
        """Count an outcome and fold it into the eviction metrics."""
        result = outcome.type.removeprefix("effect.")
        data = as_effect(outcome)
        reason = str(data.get("reason") or ("" if result == "applied" else "unknown"))
        self.effects.labels(kind=str(data.get("kind") or ""), result=result, reason=reason).inc()
        self.evictions.apply(outcome)

    def record(self, event: Event) -> None:
        """Fold any other appended record (watch events, metric samples) into the
        eviction metrics; decisions and outcomes go through :meth:`decided` /
        :meth:`effect` and are ignored here, so feeding every record is safe."""
        if not event.type.startswith(("decision.", "effect.")):
            self.evictions.apply(event)

    def event_failed(self, decision: Event, error: str) -> None:
        """Count an Event the API refused to create for ``decision`` (the effector's hook)."""
        del decision, error
        self.event_errors.inc()

    def session(self, seconds: float) -> None:
        """Observe one session's duration."""
        self.sessions.observe(seconds)

    def append_lag(self, seconds: float) -> None:
        """Observe one append's lag."""
        self.lag.observe(seconds)

    def watch_restarted(self, resource: str) -> None:
        """Count a watch restart."""
        self.restarts.labels(resource=resource).inc()

    def leader(self, leading: bool) -> None:
        """Set the leader gauge."""
        self.leading.set(1 if leading else 0)

    def ready(self, ready: bool) -> None:
        """Set the readiness gauge (and what ``/readyz`` answers)."""
        self.is_ready = ready
        self.readiness.set(1 if ready else 0)
