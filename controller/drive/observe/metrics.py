"""The live controller's Prometheus metrics: a :class:`LiveObserver` that counts.

Why a registry of its own: ``tide run`` serves exactly these families on ``/metrics``
(:mod:`controller.drive.observe.http`), and a test or a second observer in one process must not
collide in ``prometheus_client``'s global registry. Every label value tide knows is
initialised to 0 (decision kinds and reason codes, effect results, watched collections,
the koordlet reasons), so a dashboard's ``rate()`` has a series before the first event.

Families:

* ``tide_decisions_total{kind, reason, source}`` — decisions appended; ``source`` (the
  plugin or action) is an open set, so the zero series carry an empty ``source``;
* ``tide_effects_total{kind, result}`` — outcomes: ``applied``, ``failed``, ``skipped``;
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
from projections.metrics import EvictionMetrics
from streams.events import Event
from streams.payloads import DECISION_KINDS, REASON_CODES, as_decision, as_effect

__all__ = ["RESULTS", "WATCHED_RESOURCES", "PrometheusObserver", "build_version"]

#: the outcomes of an effect (the suffix of its ``effect.*`` record type)
RESULTS = ("applied", "failed", "skipped")
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
            "tide_effects", "Effect outcomes appended to the log.", ["kind", "result"], registry=reg
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
        #: what ``/readyz`` adds about stale node samples (:meth:`stale_metrics`)
        self.notes: list[str] = []
        for kind in sorted(DECISION_KINDS):
            for reason in sorted(REASON_CODES):
                self.decisions.labels(kind=kind, reason=reason, source="")
            for result in RESULTS:
                self.effects.labels(kind=kind, result=result)
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
        self.effects.labels(kind=str(as_effect(outcome).get("kind") or ""), result=result).inc()
        self.evictions.apply(outcome)

    def record(self, event: Event) -> None:
        """Fold any other appended record (watch events, metric samples) into the
        eviction metrics; decisions and outcomes go through :meth:`decided` /
        :meth:`effect` and are ignored here, so feeding every record is safe."""
        if not event.type.startswith(("decision.", "effect.")):
            self.evictions.apply(event)

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

    def stale_metrics(self, lines: list[str]) -> None:
        """Keep the lines ``/readyz`` adds about stale node samples."""
        self.notes = list(lines)

    def ready(self, ready: bool) -> None:
        """Set the readiness gauge (and what ``/readyz`` answers)."""
        self.is_ready = ready
        self.readiness.set(1 if ready else 0)
