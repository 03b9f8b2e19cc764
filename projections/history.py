"""Decision history: what the controller did and when, as policies need to know it.

Upstream keeps these in process memory (TDM's global ``lastEvictAt``, the koordlet's
eviction timestamps); here they are a fold of the log, so replay sees exactly what the
live run saw. Folded:

* ``decision.evict``: the last eviction per TDM zone (``source == "tdm"``, zone from
  ``evidence.zone``, else ``"*"``) and the last in any zone, the TDM eviction times per
  job (``evidence.job``; the newest :data:`KEEP_PER_JOB`), and eviction times per
  node, per namespace and overall (the newest ``keep`` of each, for rate limits);
* any decision: the last decision time per ``source``;
* ``decision.taint`` / ``decision.untaint``: the taints the controller holds on each node;
* ``trigger.fired``: the last firing time per trigger name (interval gating);
* ``effect.failed`` / ``effect.skipped``: the ids of decisions whose effect failed or was
  not attempted.

Evictions are counted when decided, whether or not the effect later fails (a failed
eviction still spent the budget, as the koordlet counts attempts). ``failed`` tells them
apart.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from datetime import datetime

from projections.base import BaseProjection, decode_state, encode_state, handles
from projections.parsing import time_or_none
from streams.events import Event, format_time
from streams.payloads import (
    EvictPayload,
    Taint,
    TaintPayload,
    as_decision,
    as_effect,
    as_evict,
    as_taint,
    as_trigger,
    tdm_evidence,
)

#: the newest eviction times kept per node / namespace / overall
DEFAULT_KEEP = 1024
#: the newest TDM eviction times kept per job (a budget never counts more in one period)
KEEP_PER_JOB = 64


def _push(times: list[datetime], at: datetime, keep: int) -> None:
    """Insert in time order (the log is nearly sorted by ``at``) and cap to ``keep``."""
    if not times or times[-1] <= at:
        times.append(at)
    else:
        times.insert(bisect_right(times, at), at)
    if len(times) > keep:
        del times[: len(times) - keep]


def _count(times: list[datetime], start: datetime, end: datetime | None) -> int:
    lo = bisect_left(times, start)
    hi = len(times) if end is None else bisect_left(times, end)
    return max(hi - lo, 0)


class History(BaseProjection):
    """Decision history (see the module docstring). Times are the decisions' ``at``."""

    name = "history"

    def __init__(self, *, keep: int = DEFAULT_KEEP) -> None:
        super().__init__()
        self.keep = keep
        self.last_tdm_eviction_any: datetime | None = None
        self.last_tdm_eviction_by_zone: dict[str, datetime] = {}
        self.tdm_evictions_by_job: dict[str, list[datetime]] = {}
        self.evictions_by_node: dict[str, list[datetime]] = {}
        self.evictions_by_namespace: dict[str, list[datetime]] = {}
        self.evictions: list[datetime] = []
        self.last_decision_by_source: dict[str, datetime] = {}
        self.taints: dict[str, dict[str, Taint]] = {}  # node -> key -> taint
        self.last_fired: dict[str, datetime] = {}
        self.failed: set[str] = set()

    # ---- accessors ---------------------------------------------------------------------

    def last_tdm_eviction(self, zone: str | None = None) -> datetime | None:
        """When TDM last evicted in ``zone`` (``None``: in any zone); None if never."""
        if zone is None:
            return self.last_tdm_eviction_any
        return self.last_tdm_eviction_by_zone.get(zone)

    def tdm_evictions_of_job(self, job: str, since: datetime) -> int:
        """TDM evictions of job ``job`` decided after ``since`` (exclusive)."""
        times = self.tdm_evictions_by_job.get(job)
        if not times:
            return 0
        return len(times) - bisect_right(times, since)

    def evictions_on_node(self, node: str, start: datetime, end: datetime | None = None) -> int:
        """Evictions decided on ``node`` with ``start <= at < end``."""
        return _count(self.evictions_by_node.get(node, []), start, end)

    def evictions_in_namespace(
        self, namespace: str, start: datetime, end: datetime | None = None
    ) -> int:
        """Evictions decided in ``namespace`` with ``start <= at < end``."""
        return _count(self.evictions_by_namespace.get(namespace, []), start, end)

    def evictions_between(self, start: datetime, end: datetime | None = None) -> int:
        """All evictions decided with ``start <= at < end``."""
        return _count(self.evictions, start, end)

    def last_eviction_on_node(self, node: str) -> datetime | None:
        times = self.evictions_by_node.get(node)
        return times[-1] if times else None

    def held_taints(self, node: str) -> list[Taint]:
        """Taints the controller decided to put on ``node`` and has not removed, by key."""
        held = self.taints.get(node, {})
        return [held[key] for key in sorted(held)]

    # ---- folding -----------------------------------------------------------------------

    @handles("decision.evict", "decision.bind", "decision.taint", "decision.untaint")
    def _on_decision(self, event: Event) -> None:
        data = as_decision(event)
        at = event.at
        source = str(data.get("source") or "")
        previous = self.last_decision_by_source.get(source)
        if previous is None or previous < at:
            self.last_decision_by_source[source] = at
        if event.type == "decision.evict":
            self._on_evict(as_evict(event), at, source)
        elif event.type in ("decision.taint", "decision.untaint"):
            self._on_taint(event.type, as_taint(event))

    def _on_evict(self, data: EvictPayload, at: datetime, source: str) -> None:
        if source == "tdm":
            evidence = data.get("evidence")
            zone = tdm_evidence(data).get("zone") if isinstance(evidence, dict) else None
            zone = zone if isinstance(zone, str) and zone else "*"
            last = self.last_tdm_eviction_by_zone.get(zone)
            if last is None or last < at:
                self.last_tdm_eviction_by_zone[zone] = at
            if self.last_tdm_eviction_any is None or self.last_tdm_eviction_any < at:
                self.last_tdm_eviction_any = at
            job = tdm_evidence(data).get("job") if isinstance(evidence, dict) else None
            if isinstance(job, str) and job:
                _push(self.tdm_evictions_by_job.setdefault(job, []), at, KEEP_PER_JOB)
        node = data.get("node")
        if isinstance(node, str) and node:
            _push(self.evictions_by_node.setdefault(node, []), at, self.keep)
        namespace = data.get("namespace")
        if isinstance(namespace, str) and namespace:
            _push(self.evictions_by_namespace.setdefault(namespace, []), at, self.keep)
        _push(self.evictions, at, self.keep)

    def _on_taint(self, kind: str, data: TaintPayload) -> None:
        node, taint = data.get("node"), data.get("taint")
        if not isinstance(node, str) or not isinstance(taint, dict):
            return
        key = str(taint.get("key") or "")
        if kind == "decision.taint":
            self.taints.setdefault(node, {})[key] = taint.copy()
        else:
            held = self.taints.get(node)
            if held is not None:
                held.pop(key, None)
                if not held:
                    del self.taints[node]

    @handles("trigger.fired")
    def _on_trigger(self, event: Event) -> None:
        name = as_trigger(event).get("trigger")
        if isinstance(name, str):
            last = self.last_fired.get(name)
            if last is None or last < event.at:
                self.last_fired[name] = event.at

    @handles("effect.failed", "effect.skipped")
    def _on_failed(self, event: Event) -> None:
        decision = as_effect(event).get("decision") or event.cause
        if isinstance(decision, str):
            self.failed.add(decision)

    # ---- checkpoints -------------------------------------------------------------------

    def dump(self) -> bytes:
        # one instant is in several lists (an eviction: by node, by namespace, in all)
        texts: dict[datetime, str] = {}

        def text(at: datetime) -> str:
            found = texts.get(at)
            if found is None:
                found = texts[at] = format_time(at)
            return found

        def times(values: list[datetime]) -> list[str]:
            return [text(t) for t in values]

        def stamps(values: dict[str, datetime]) -> dict[str, str]:
            return {k: text(v) for k, v in values.items()}

        body = {
            "keep": self.keep,
            "last_tdm_eviction_any": format_time(self.last_tdm_eviction_any)
            if self.last_tdm_eviction_any
            else None,
            "last_tdm_eviction_by_zone": stamps(self.last_tdm_eviction_by_zone),
            "tdm_evictions_by_job": {k: times(v) for k, v in self.tdm_evictions_by_job.items()},
            "evictions_by_node": {k: times(v) for k, v in self.evictions_by_node.items()},
            "evictions_by_namespace": {k: times(v) for k, v in self.evictions_by_namespace.items()},
            "evictions": times(self.evictions),
            "last_decision_by_source": stamps(self.last_decision_by_source),
            "taints": self.taints,
            "last_fired": stamps(self.last_fired),
            "failed": sorted(self.failed),
        }
        return encode_state(self.name, self.position, body)

    def load(self, state: bytes) -> None:
        position, body = decode_state(self.name, state)

        def times(values: list[str]) -> list[datetime]:
            return [t for t in (time_or_none(v) for v in values) if t is not None]

        def stamps(values: dict[str, str]) -> dict[str, datetime]:
            return {k: t for k, v in sorted(values.items()) if (t := time_or_none(v))}

        fresh = History(keep=int(body.get("keep", DEFAULT_KEEP)))
        fresh.position = position
        fresh.last_tdm_eviction_any = time_or_none(body.get("last_tdm_eviction_any"))
        fresh.last_tdm_eviction_by_zone = stamps(body.get("last_tdm_eviction_by_zone", {}))
        fresh.tdm_evictions_by_job = {
            k: times(v) for k, v in sorted(body.get("tdm_evictions_by_job", {}).items())
        }
        fresh.evictions_by_node = {
            k: times(v) for k, v in sorted(body.get("evictions_by_node", {}).items())
        }
        fresh.evictions_by_namespace = {
            k: times(v) for k, v in sorted(body.get("evictions_by_namespace", {}).items())
        }
        fresh.evictions = times(body.get("evictions", []))
        fresh.last_decision_by_source = stamps(body.get("last_decision_by_source", {}))
        fresh.taints = {
            node: dict(sorted(held.items()))
            for node, held in sorted(body.get("taints", {}).items())
        }
        fresh.last_fired = stamps(body.get("last_fired", {}))
        fresh.failed = set(body.get("failed", []))
        vars(self).update(vars(fresh))
