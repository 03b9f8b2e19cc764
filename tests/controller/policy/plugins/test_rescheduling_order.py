"""The victim order built by C-level getters (low_node_utilization.in_victim_order) is the
order of victim_order, with Kubernetes QoS classes known or not."""

from __future__ import annotations

import random

import pytest

from controller.policy.plugins.rescheduling.low_node_utilization import (
    in_victim_order,
    victim_order,
)
from projections.model import Resource, TaskInfo, TaskStatus


def tasks(classes: tuple[str, ...], seed: int) -> list[TaskInfo]:
    rng = random.Random(seed)
    out = []
    for i in range(60):
        out.append(
            TaskInfo(
                f"uid-{rng.randrange(5)}-{i}",
                rng.choice(("a", "b")),
                f"p{rng.randrange(8)}",
                "a/job",
                TaskStatus.RUNNING,
                Resource(),
                Resource(),
                pod_priority=rng.choice((-5, 0, 0, 100)),
                best_effort=rng.random() < 0.3,
                k8s_qos=rng.choice(classes),
            )
        )
    return out


@pytest.mark.parametrize(
    "classes",
    [("BestEffort", "Burstable", "Guaranteed"), ("", "Burstable"), ("",)],
    ids=["known-classes", "some-unknown", "all-unknown"],
)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_in_victim_order_sorts_as_victim_order(classes: tuple[str, ...], seed: int) -> None:
    given = tasks(classes, seed)
    assert [t.uid for t in in_victim_order(given)] == [
        t.uid for t in sorted(given, key=victim_order)
    ]
