"""How many feasible nodes a search looks for (Volcano's ``pkg/scheduler/util``).

A leaf module, so that both the node-search API (:mod:`controller.policy.framework.nodes`) and
its hot path (:mod:`controller.policy.framework.search`) read the one stopping rule without
importing each other. The search functions themselves live in
:mod:`controller.policy.framework.nodes`.
"""

from __future__ import annotations

MIN_FEASIBLE_NODES = 100
MIN_PERCENTAGE_NODES = 5
PERCENTAGE_NODES = 0


def calculate_num_feasible_nodes_to_find(
    n: int,
    *,
    min_nodes: int = MIN_FEASIBLE_NODES,
    min_percentage: int = MIN_PERCENTAGE_NODES,
    percentage: int = PERCENTAGE_NODES,
) -> int:
    """How many feasible nodes to look for among ``n``.

    Volcano's ``util.CalculateNumOfFeasibleNodesToFind``: every node up to ``min_nodes``;
    beyond, a percentage that shrinks with the cluster (``50 − n/125``, at least
    ``min_percentage``) but never fewer than ``min_nodes``.
    """
    if n <= min_nodes or percentage >= 100:
        return n
    p = percentage
    if p <= 0:
        p = max(50 - n // 125, min_percentage)
    return max(n * p // 100, min_nodes)
