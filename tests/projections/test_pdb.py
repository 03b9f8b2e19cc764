"""PodDisruptionBudgets folded from the log, and the disruption controller's arithmetic."""

from __future__ import annotations

from typing import Any

import pytest

from projections.pdb import Budget, PDBState, disruptions_allowed, selector_matches
from projections.world import World
from tests.builders import watch


@pytest.mark.parametrize(
    ("bounds", "healthy", "expected", "allowed"),
    [
        ({"min_available": 2}, 3, 3, 1),
        ({"min_available": 3}, 3, 3, 0),
        ({"min_available": 3}, 2, 3, 0),
        ({"min_available": "50%"}, 3, 3, 1),  # ceil(1.5) = 2 desired
        ({"max_unavailable": 1}, 4, 4, 1),
        ({"max_unavailable": 1}, 3, 4, 0),
        ({"max_unavailable": "30%"}, 10, 10, 3),  # ceil(3) unavailable → 7 desired
        ({"max_unavailable": "25%"}, 3, 3, 1),  # ceil(0.75) = 1
        ({}, 2, 2, 2),
        ({"min_available": 5, "status_allowed": 1}, 1, 1, 1),
    ],
    ids=[
        "min-int",
        "min-int-none-left",
        "min-int-unhealthy",
        "min-percent-rounds-up",
        "max-int",
        "max-int-one-down",
        "max-percent",
        "max-percent-rounds-up",
        "no-bound",
        "status-wins",
    ],
)
def test_disruptions_allowed(
    bounds: dict[str, Any], healthy: int, expected: int, allowed: int
) -> None:
    budget = Budget("ns", "b", {}, **bounds)
    assert disruptions_allowed(budget, healthy=healthy, expected=expected) == allowed


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        (None, {"app": "web"}, False),
        ({}, {"app": "web"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
        (
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a"]}]},
            {"tier": "a"},
            True,
        ),
        (
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]},
            {"tier": "a"},
            False,
        ),
        ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {}, True),
        ({"matchExpressions": [{"key": "tier", "operator": "Near"}]}, {"tier": "a"}, False),
    ],
    ids=[
        "null",
        "empty",
        "labels",
        "labels-differ",
        "in",
        "not-in",
        "exists",
        "absent",
        "unknown-op",
    ],
)
def test_selector_matches(
    selector: dict[str, Any] | None, labels: dict[str, str], selected: bool
) -> None:
    assert selector_matches(selector, labels) is selected


def pdb(name: str, spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name, "namespace": "shop"}, "spec": spec}
    if status is not None:
        obj["status"] = status
    return obj


def test_the_fold_follows_added_modified_deleted_and_checkpoints() -> None:
    world = World()
    state = world.pdbs  # a typed member of every World
    web = {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": 2}
    events = [
        watch("poddisruptionbudgets", pdb("web", web)),
        watch("poddisruptionbudgets", pdb("all", {"selector": {}, "maxUnavailable": "10%"})),
        watch("poddisruptionbudgets", pdb("web", web, {"disruptionsAllowed": 0}), event="MODIFIED"),
        watch("poddisruptionbudgets", pdb("all", {}), event="DELETED"),
        watch("pods", {"metadata": {"name": "p", "namespace": "shop"}}),
    ]
    for offset, event in enumerate(events):
        world.apply(event.with_offset(offset))
    assert sorted(state.budgets) == ["shop/web"]
    [budget] = state.covering("shop", {"app": "web"})
    assert (budget.min_available, budget.status_allowed) == (2, 0)
    assert state.covering("other", {"app": "web"}) == []
    copy = PDBState()
    copy.load(state.dump())
    assert copy.budgets == state.budgets and copy.position == state.position == 5
