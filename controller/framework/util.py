"""Node search helpers shared by the actions (Volcano's ``pkg/scheduler/util``, spec §4).

Differences from Volcano, on purpose (DESIGN "Deterministic"):

* :func:`predicate_nodes` checks nodes serially, in name order rotated by the session's
  ``predicate_cursor`` (Volcano: 16 goroutines and a process-global index, so the set
  found depends on scheduling and on earlier sessions); the feasible list comes back in
  visiting order.
* :func:`select_best_node` breaks score ties by the lowest node name (Volcano: random).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from controller.framework.points import FitError
from controller.framework.session import Session
from projections.model import NodeInfo, TaskInfo

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
    """How many feasible nodes to look for among ``n`` (spec §4.1)."""
    if n <= min_nodes or percentage >= 100:
        return n
    p = percentage
    if p <= 0:
        p = max(50 - n // 125, min_percentage)
    return max(n * p // 100, min_nodes)


@dataclass
class PredicateResult:
    """Feasible nodes in visiting order, and the fit error of each rejected node."""

    feasible: list[NodeInfo] = field(default_factory=list)
    errors: dict[str, FitError] = field(default_factory=dict)


def predicate_nodes(
    ssn: Session,
    task: TaskInfo,
    check: Callable[[TaskInfo, NodeInfo], None],
    *,
    nodes: Sequence[NodeInfo] | None = None,
    cache: dict[str, FitError] | None = None,
) -> PredicateResult:
    """Check nodes from the session's rotating start until enough are feasible.

    ``check`` raises :class:`FitError` to reject a node. ``cache`` (node name → error),
    when given, short-cuts nodes that already failed for the same job and role, and
    records new failures (Volcano's predicate error cache).
    """
    pool = ssn.view.node_list if nodes is None else nodes
    total = len(pool)
    result = PredicateResult()
    if total == 0:
        return result
    want = calculate_num_feasible_nodes_to_find(total)
    start = ssn.predicate_cursor % total
    feasible = result.feasible
    errors = result.errors
    processed = 0
    for i in range(total):
        node = pool[(start + i) % total]
        processed += 1
        if cache is not None:
            cached = cache.get(node.name)
            if cached is not None:
                errors[node.name] = cached
                continue
        try:
            check(task, node)
        except FitError as exc:
            errors[node.name] = exc
            if cache is not None:
                cache[node.name] = exc
            continue
        feasible.append(node)
        if len(feasible) >= want:
            break
    ssn.predicate_cursor = (start + processed) % total
    return result


def prioritize_nodes(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
    """Node name → the session's node-order score (zeros when nothing scores)."""
    if not ssn.flat("node_order"):
        return dict.fromkeys((node.name for node in nodes), 0.0)
    return {node.name: ssn.node_order(task, node) for node in nodes}


def select_best_node(scores: dict[str, float]) -> tuple[str, float] | None:
    """The highest score; ties go to the lowest node name. None when empty."""
    best: tuple[str, float] | None = None
    for name, score in scores.items():
        if best is None or score > best[1] or (score == best[1] and name < best[0]):
            best = (name, score)
    return best
