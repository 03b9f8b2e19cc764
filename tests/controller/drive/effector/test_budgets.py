"""The simulated cluster refuses an eviction a PodDisruptionBudget forbids, the way the
Eviction API does (429, the budget named), and grants the ones it allows."""

from __future__ import annotations

from typing import Any

import pytest

from controller.drive.effector import SimulatedCluster
from tests.builders import build_pod, watch
from tests.controller.drive.effector.test_cluster import evict


def budget(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec},
    }
    if status is not None:
        obj["status"] = status
    return obj


def outcomes(pdb: dict[str, Any] | None, victims: list[str], *, labelled: bool = True) -> list[str]:
    cluster = SimulatedCluster()
    for i in range(3):
        labels = {"app": "web"} if labelled else {"app": "db"}
        pod = build_pod("default", f"web-{i}", node="n1", labels=labels)
        pod["metadata"]["uid"] = f"default-web-{i}"
        cluster.observe(watch("pods", pod))
    if pdb is not None:
        cluster.observe(watch("poddisruptionbudgets", pdb))
    said = []
    for victim in victims:
        [outcome, *_] = cluster.apply(evict(victim)).now
        said.append(
            outcome.type + (f": {outcome.data['error']}" if "error" in outcome.data else "")
        )
    return said


REFUSED = (
    "effect.failed: 429 TooManyRequests: evicting pod default/{} would violate the pod's"
    " disruption budget default/web"
)


@pytest.mark.parametrize(
    ("pdb", "labelled", "expected"),
    [
        (None, True, ["effect.applied", "effect.applied"]),
        (
            budget({"minAvailable": 3}, {"disruptionsAllowed": 0}),
            True,
            [REFUSED.format("web-0"), REFUSED.format("web-1")],
        ),
        (
            budget({"minAvailable": 2}, {"disruptionsAllowed": 1}),
            True,
            ["effect.applied", REFUSED.format("web-1")],
        ),
        (budget({"minAvailable": 2}), True, ["effect.applied", REFUSED.format("web-1")]),
        # 50% of 3 rounds up to 2 unavailable: both evictions are allowed
        (budget({"maxUnavailable": "50%"}), True, ["effect.applied", "effect.applied"]),
        (budget({"minAvailable": 3}), False, ["effect.applied", "effect.applied"]),
    ],
    ids=[
        "no-budget",
        "status-zero",
        "status-one",
        "min-available",
        "max-unavailable-percent",
        "not-selected",
    ],
)
def test_evictions_against_a_budget(
    pdb: dict[str, Any] | None, labelled: bool, expected: list[str]
) -> None:
    assert outcomes(pdb, ["web-0", "web-1"], labelled=labelled) == expected


def test_a_new_status_of_the_budget_resets_what_was_spent() -> None:
    cluster = SimulatedCluster()
    for i in range(2):
        pod = build_pod("default", f"web-{i}", node="n1", labels={"app": "web"})
        pod["metadata"]["uid"] = f"default-web-{i}"
        cluster.observe(watch("pods", pod))
    cluster.observe(
        watch("poddisruptionbudgets", budget({"maxUnavailable": 1}, {"disruptionsAllowed": 1}))
    )
    assert cluster.apply(evict("web-0")).now[0].type == "effect.applied"
    assert cluster.apply(evict("web-1")).now[0].type == "effect.failed"
    cluster.observe(
        watch(
            "poddisruptionbudgets",
            budget({"maxUnavailable": 1}, {"disruptionsAllowed": 1}),
            event="MODIFIED",
        )
    )
    assert cluster.apply(evict("web-1")).now[0].type == "effect.applied"
