"""Global guard rails on evictions, beside the policies' own limits.

Why: a policy bounds what *it* evicts (TDM's budgets, pressure eviction's per-minute
limits), but nothing bounds their sum, nor a bug in one of them. As the descheduler does
(``maxNoOfPodsToEvictPerNode`` / ``...PerNamespace`` / ``...Total``), the live effector
refuses an eviction once evictions applied in the last minute reach the limit on the pod's
node, in its namespace or in the whole cluster; the refusal is an ``effect.skipped``
naming the limit, and the decision's overlay reverts so the next session sees the truth.

The window is the real clock's last 60 seconds of *applied* evictions (refused and failed
ones do not count). The guard is a fold of the log like the policies' own limits: on start
and on a takeover the live loop feeds it the log (:meth:`LimitGuard.seen`), so the
evictions applied in the minute before a restart, by this replica or another, still count.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime, timedelta

from streams.events import Event
from streams.payloads import as_effect, as_evict

__all__ = ["EvictionLimits", "LimitGuard"]

WINDOW = timedelta(minutes=1)


@dataclass(frozen=True, slots=True)
class EvictionLimits:
    """Evictions per minute allowed per node, per namespace and in the cluster (None: no
    limit)."""

    per_node: int | None = None
    per_namespace: int | None = None
    per_cluster: int | None = None


class LimitGuard:
    """Counts applied evictions in a sliding minute and says which limit refuses the next."""

    def __init__(self, limits: EvictionLimits) -> None:
        self.limits = limits
        self._applied: deque[tuple[datetime, str, str]] = deque()  # (at, node, namespace)
        #: evictions decided, by decision id: (node, namespace), until their outcome
        self._decided: dict[str, tuple[str, str]] = {}
        #: decisions whose applied eviction was counted (a log read twice counts once)
        self._counted: set[str] = set()

    def seen(self, record: Event) -> None:
        """Fold one record of the log: an ``effect.applied`` eviction counts at its time."""
        if record.type == "decision.evict":
            data = as_evict(record)
            self._decided[record.id] = (str(data.get("node") or ""), str(data.get("namespace")))
        elif record.type in ("effect.applied", "effect.failed", "effect.skipped"):
            decision = str(as_effect(record).get("decision"))
            where = self._decided.pop(decision, None)
            if where is None or record.type != "effect.applied" or decision in self._counted:
                return
            self._counted.add(decision)
            self._applied.append((record.at, *where))
            self._expire(record.at)

    def refusal(self, *, node: str, namespace: str, now: datetime) -> str | None:
        """The limit an eviction on ``node`` in ``namespace`` at ``now`` would exceed, named
        (``limit: evictions per node per minute (2) reached on node n1``), or None."""
        self._expire(now)
        limits = self.limits
        checks = (
            ("node", node, limits.per_node, lambda n, _: n == node),
            ("namespace", namespace, limits.per_namespace, lambda _, ns: ns == namespace),
            ("cluster", "", limits.per_cluster, lambda _n, _ns: True),
        )
        for scope, name, limit, match in checks:
            if limit is None:
                continue
            used = sum(1 for _, n, ns in self._applied if match(n, ns))
            if used >= limit:
                where = f" on {scope} {name}" if name else ""
                return f"limit: evictions per {scope} per minute ({limit}) reached{where}"
        return None

    def applied(self, *, node: str, namespace: str, now: datetime) -> None:
        """Count an eviction applied at ``now``."""
        self._applied.append((now, node, namespace))

    def _expire(self, now: datetime) -> None:
        while self._applied and now - self._applied[0][0] >= WINDOW:
            self._applied.popleft()
