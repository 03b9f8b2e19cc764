"""The simulated API server's PodDisruptionBudget check on the eviction subresource.

Why: a real cluster refuses a voluntary eviction that would leave a budget with fewer
healthy pods than it demands — ``POST .../pods/NAME/eviction`` answers 429
TooManyRequests with a ``DisruptionBudget`` cause (kubernetes/kubernetes
pkg/registry/core/pod/storage/eviction.go ``checkAndDecrement``) — so the simulated
cluster must too, or a simulation would promise evictions production cannot make. A
budget's ``status.disruptionsAllowed``, when the log has it, is the allowance, decremented
by each eviction granted since the budget was last observed (as ``checkAndDecrement``
does); without a status the allowance is computed from the pods the budget selects
(:func:`projections.pdb.disruptions_allowed`; healthy = Ready and not terminating,
expected = every selected pod), leaving out those this simulator already evicted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projections.pdb import Budget, PDBState, disruptions_allowed
from streams.payloads import RawObject

__all__ = ["BudgetGuard"]

JSON = RawObject  # a Kubernetes object as raw JSON


def _labels(pod: Mapping[str, Any]) -> dict[str, str]:
    labels = (pod.get("metadata") or {}).get("labels")
    return dict(labels) if isinstance(labels, dict) else {}


def _healthy(pod: Mapping[str, Any]) -> bool:
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    status = pod.get("status") or {}
    conditions = status.get("conditions")
    if isinstance(conditions, list) and conditions:
        return any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in conditions
            if isinstance(c, dict)
        )
    return bool(status.get("phase") == "Running")


class BudgetGuard:
    """Budgets observed from the log, and the evictions granted against them."""

    def __init__(self) -> None:
        self.pdbs = PDBState()
        self._spent: dict[str, int] = {}
        self._evicted: set[str] = set()

    def observe(self, kind: object, obj: object) -> None:
        """Fold a ``poddisruptionbudgets`` watch event (a new status resets the count)."""
        key = self.pdbs.note(kind, obj)
        if key is not None:
            self._spent.pop(key, None)

    def readmit(self, key: str) -> None:
        """A pod named ``key`` was created again: it counts as one of the budget's again."""
        self._evicted.discard(key)

    def blocking(self, key: str, pod: Mapping[str, Any], pods: Mapping[str, JSON]) -> str | None:
        """The first budget (by name) that forbids evicting ``pod`` ("ns/name"), or None."""
        if not self.pdbs.budgets:
            return None
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        for budget in self.pdbs.covering(namespace, _labels(pod)):
            if self._allowance(budget, pods) <= 0:
                return budget.key
        return None

    def grant(self, key: str, pod: Mapping[str, Any]) -> None:
        """Count an eviction of ``pod`` ("ns/name") against every budget covering it."""
        self._evicted.add(key)
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        for budget in self.pdbs.covering(namespace, _labels(pod)):
            self._spent[budget.key] = self._spent.get(budget.key, 0) + 1

    def _allowance(self, budget: Budget, pods: Mapping[str, JSON]) -> int:
        if budget.status_allowed is not None:
            return budget.status_allowed - self._spent.get(budget.key, 0)
        prefix = f"{budget.namespace}/"
        selected = [
            (key, pods[key])
            for key in sorted(k for k in pods if k.startswith(prefix))
            if budget.selects(budget.namespace, _labels(pods[key]))
        ]
        healthy = sum(1 for key, pod in selected if key not in self._evicted and _healthy(pod))
        return disruptions_allowed(budget, healthy=healthy, expected=len(selected))
