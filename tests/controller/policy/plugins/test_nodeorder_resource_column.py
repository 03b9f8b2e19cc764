"""``nodeorder.resource_column`` (the one-pass form allocate's batch scorer uses) equals
the per-node arithmetic ``_resource_total`` on seeded random columns, edge values
(zero or negative allocatable, requests above allocatable, exact fits) included."""

from __future__ import annotations

import random

import pytest

from controller.policy.plugins import nodeorder
from controller.policy.plugins.nodeorder import scores as nodeorder_scores

EDGES = [0.0, -1.0, 1.0, 1000.0, 4000.0, 8000.0, 16 * 1024.0**3]


def _value(rng: random.Random) -> float:
    return rng.choice(EDGES) if rng.random() < 0.3 else rng.uniform(0, 2e10)


@pytest.mark.parametrize("seed", range(12))
def test_the_column_equals_the_per_node_total(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randint(1, 300)
    used = ([_value(rng) for _ in range(count)], [_value(rng) for _ in range(count)])
    alloc = ([_value(rng) for _ in range(count)], [_value(rng) for _ in range(count)])
    cpu, memory = rng.choice([100.0, 1500.0, 0.5]), rng.choice([2e8, 3e9])
    weights = (rng.choice([0, 1, 3]), rng.choice([0, 1, 2]), rng.choice([0, 1, 5]))
    column = nodeorder.resource_column(cpu, memory, used, alloc, weights=weights)
    plain = [
        nodeorder_scores._resource_total(
            used[0][i] + cpu, used[1][i] + memory, alloc[0][i], alloc[1][i], *weights
        )
        for i in range(count)
    ]
    assert column == plain
