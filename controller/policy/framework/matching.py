"""Kubernetes label, field and taint matching, shared by the plugins that need it.

Why in the framework: plugins may not import each other (the independence contract), and
both a predicate (required node affinity, NoSchedule taints) and a scorer (preferred
node affinity, PreferNoSchedule taints) ask the same questions. Semantics as
kubernetes/kubernetes ``Toleration.ToleratesTaint`` (staging/src/k8s.io/api/core/v1/
toleration.go) and ``nodeaffinity`` ``NodeSelectorRequirementsAsSelector``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from projections.model import NodeInfo


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Whether ``toleration`` tolerates ``taint``."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return False


def match_expression(expr: Mapping[str, Any], value: str | None) -> bool:
    """One ``NodeSelectorRequirement`` against a label (or field) value."""
    operator = expr.get("operator")
    values = expr.get("values") or []
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            have, want = int(value), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def match_term(term: Mapping[str, Any], node: NodeInfo) -> bool:
    """A ``NodeSelectorTerm``: every expression and field holds (an empty term: none)."""
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False
    for expr in exprs:
        if not match_expression(expr, node.labels.get(str(expr.get("key")))):
            return False
    for expr in fields:
        value = node.name if expr.get("key") == "metadata.name" else None
        if not match_expression(expr, value):
            return False
    return True
