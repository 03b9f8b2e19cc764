"""PodDisruptionBudgets on the log: what validation accepts and the reason it gives."""

from __future__ import annotations

from typing import Any

import pytest

from streams.validation import ValidationError, validate


def pdb(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "web", "namespace": "shop"}}
    if spec is not None:
        obj["spec"] = spec
    if status is not None:
        obj["status"] = status
    return {"resource": "poddisruptionbudgets", "event": "ADDED", "object": obj}


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (pdb({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}), None),
        (pdb({"maxUnavailable": "25%"}), None),
        (pdb({"minAvailable": "100%"}, {"disruptionsAllowed": 0}), None),
        (pdb(), None),
        (
            pdb({"minAvailable": 1, "maxUnavailable": 1}),
            "poddisruptionbudgets shop/web: spec: minAvailable and maxUnavailable cannot both"
            " be set",
        ),
        (
            pdb({"minAvailable": -1}),
            "poddisruptionbudgets shop/web: spec.minAvailable: -1 is not an integer >= 0 or a"
            " percentage",
        ),
        (
            pdb({"maxUnavailable": "half"}),
            "poddisruptionbudgets shop/web: spec.maxUnavailable: 'half' is not an integer >= 0"
            " or a percentage",
        ),
        (
            pdb({"maxUnavailable": "150%"}),
            "poddisruptionbudgets shop/web: spec.maxUnavailable: '150%' is not an integer >= 0"
            " or a percentage",
        ),
        (
            pdb({"selector": "app=web"}),
            "poddisruptionbudgets shop/web: spec.selector: a string, not an object",
        ),
        (
            pdb({}, {"disruptionsAllowed": "1"}),
            "poddisruptionbudgets shop/web: status.disruptionsAllowed: '1' is not an integer >= 0",
        ),
        (
            {
                "resource": "poddisruptionbudgets",
                "event": "ADDED",
                "object": {"metadata": {"name": "x"}},
            },
            "poddisruptionbudget x without metadata.namespace",
        ),
    ],
    ids=[
        "min-int",
        "max-percent",
        "status",
        "bare",
        "both-bounds",
        "negative",
        "not-a-number",
        "over-100",
        "selector-string",
        "allowed-string",
        "no-namespace",
    ],
)
def test_pdb_validation(data: dict[str, Any], reason: str | None) -> None:
    if reason is None:
        validate("k8s.watch", data)
        return
    with pytest.raises(ValidationError) as caught:
        validate("k8s.watch", data)
    assert caught.value.reason == reason
