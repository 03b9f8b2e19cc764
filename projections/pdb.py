"""PodDisruptionBudgets folded from the log: which pods a voluntary eviction may not touch.

Why a projection of its own: the Eviction API refuses (429) to evict a pod whose budget
allows no more disruptions, and descheduler's ``DefaultEvictor`` skips such pods when it
picks victims; tide's simulated cluster and victim selection must answer the same
question from the log alone. The fold keeps only what that question needs: each budget's
namespace, selector, ``minAvailable`` / ``maxUnavailable`` (an integer or a percentage)
and the API's own ``status.disruptionsAllowed`` when the log carries it.

:func:`disruptions_allowed` restates the disruption controller's arithmetic
(kubernetes/kubernetes pkg/controller/disruption/disruption.go ``getExpectedPodCount`` and
``updatePdbStatus``): with ``minAvailable`` the desired healthy count is that number (a
percentage of the expected pods, rounded up); with ``maxUnavailable`` it is the expected
count minus that number (a percentage rounded up); the allowance is healthy − desired, at
least 0. A budget whose status says how many disruptions it allows is taken at its word.
Selectors follow ``metav1.LabelSelectorAsSelector`` (k8s.io/apimachinery
pkg/apis/meta/v1/helpers.go): a missing selector matches nothing, an empty one everything
in the namespace.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from projections.base import BaseProjection, decode_state, encode_state, handles
from streams.events import Event
from streams.payloads import RawObject, as_watch

__all__ = ["Budget", "PDBState", "disruptions_allowed", "selector_matches"]

IntOrPercent = int | str


@dataclass(frozen=True)
class Budget:
    """One PodDisruptionBudget as the log last showed it."""

    namespace: str
    name: str
    selector: RawObject | None = None  # a LabelSelector as the API object holds it
    min_available: IntOrPercent | None = None
    max_unavailable: IntOrPercent | None = None
    status_allowed: int | None = None

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether this budget covers a pod of ``namespace`` with ``labels``."""
        return namespace == self.namespace and selector_matches(self.selector, labels)


def _scaled(value: IntOrPercent, total: int) -> int:
    """An int as is, or a percentage of ``total`` rounded up (``intstr`` with roundUp)."""
    if isinstance(value, int):
        return value
    return math.ceil(total * int(value.rstrip("%")) / 100)


def disruptions_allowed(budget: Budget, *, healthy: int, expected: int) -> int:
    """How many of the budget's pods may be disrupted now (see the module docstring).

    Args:
        budget: the budget.
        healthy: its pods that are Running and Ready.
        expected: its pods in all (the scale of their controllers, or their count).
    """
    if budget.status_allowed is not None:
        return budget.status_allowed
    if budget.max_unavailable is not None:
        desired = expected - _scaled(budget.max_unavailable, expected)
    elif budget.min_available is not None:
        desired = _scaled(budget.min_available, expected)
    else:
        return healthy  # a budget without a bound forbids nothing
    return max(0, healthy - desired)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """``matchLabels`` and ``matchExpressions`` (In, NotIn, Exists, DoesNotExist)."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = expression.get("values") or []
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False  # an unknown operator selects nothing, as the API rejects it
    return True


def _budget(obj: Mapping[str, Any]) -> Budget:
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    selector = spec.get("selector")
    allowed = status.get("disruptionsAllowed")
    return Budget(
        namespace=str(meta["namespace"]),
        name=str(meta["name"]),
        selector=dict(selector) if isinstance(selector, dict) else None,
        min_available=spec.get("minAvailable"),
        max_unavailable=spec.get("maxUnavailable"),
        status_allowed=allowed if isinstance(allowed, int) else None,
    )


class PDBState(BaseProjection):
    """``budgets``: "namespace/name" → :class:`Budget`, folded from ``k8s.watch`` records
    of ``poddisruptionbudgets``; every World has one as its ``pdbs`` member."""

    name = "pdbs"

    def __init__(self) -> None:
        super().__init__()
        self.budgets: dict[str, Budget] = {}

    @handles("k8s.watch")
    def _on_watch(self, event: Event) -> None:
        # the payload typed without a call per record (a TypedDict is the dict itself)
        if TYPE_CHECKING:
            data = as_watch(event)
        else:
            data = event.data
        if data.get("resource") == "poddisruptionbudgets":
            self.note(data.get("event"), data.get("object"))

    def note(self, kind: object, obj: object) -> str | None:
        """Fold one watch event of a budget; returns its key ("ns/name"), None if unusable."""
        if not isinstance(obj, dict):
            return None
        try:
            budget = _budget(obj)
        except (KeyError, TypeError):
            return None
        if kind == "DELETED":
            self.budgets.pop(budget.key, None)
        elif kind in ("ADDED", "MODIFIED"):
            self.budgets[budget.key] = budget
        return budget.key

    def covering(self, namespace: str, labels: Mapping[str, str]) -> list[Budget]:
        """The budgets that select a pod, by name."""
        return [
            self.budgets[key]
            for key in sorted(self.budgets)
            if self.budgets[key].selects(namespace, labels)
        ]

    def dump(self) -> bytes:
        body = {key: asdict(budget) for key, budget in sorted(self.budgets.items())}
        return encode_state(self.name, self.position, body)

    def load(self, state: bytes) -> None:
        position, body = decode_state(self.name, state)
        self.budgets = {key: Budget(**fields) for key, fields in sorted(body.items())}
        self.position = position
