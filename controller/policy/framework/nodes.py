"""THE node search: which nodes fit a task, how they score, which one is best.

One API for every action that places a task (Volcano's ``pkg/scheduler/util``
``PredicateNodes`` / ``PrioritizeNodes`` / ``SortNodes`` / ``SelectBestNode``, and the
session's ``PredicateForPreemptAction``):

* **predicate** — :func:`predicate_nodes` walks the session nodes with a ``check`` that
  raises :class:`FitError` (:func:`allocate_check`: resources fit ``future_idle`` and every
  session predicate passes; :func:`preempt_check`: only fit errors that no eviction can
  resolve reject a node), returning feasible nodes and each rejected node's error;
* **prioritise** — :func:`prioritize_nodes`: the session's node-order score per node;
* **select** — :func:`select_best_node` / :func:`sort_nodes`: highest score first, ties
  to the lowest node name.

Allocate runs thousands of searches per cycle, so it calls :func:`fitting_nodes` and
:func:`best_node`, which answer through the hot path :mod:`controller.policy.framework.search`;
``tests/controller/policy/framework/test_search.py`` proves them equal to the definitions here
(``predicate_nodes`` with ``allocate_check``, then ``prioritize_nodes`` +
``select_best_node``), visiting order, cursor and error cache included.

Differences from Volcano, on purpose (a session's outcome must depend only on the log):

* :func:`predicate_nodes` checks nodes serially, in name order rotated by the session's
  ``predicate_cursor`` (Volcano: 16 goroutines and a process-global index, so the set
  found depends on scheduling and on earlier sessions); the feasible list comes back in
  visiting order.
* :func:`select_best_node` and :func:`sort_nodes` break score ties by the lowest node
  name (Volcano: random among the best).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.policy.framework import search
from controller.policy.framework.feasible import calculate_num_feasible_nodes_to_find
from controller.policy.framework.points import FitError
from controller.policy.framework.resources import fits
from controller.policy.framework.search import Gradients
from controller.policy.framework.session import Session
from projections.model import NodeInfo, TaskInfo

__all__ = [
    "Check",
    "Gradients",
    "PredicateResult",
    "allocate_check",
    "best_node",
    "calculate_num_feasible_nodes_to_find",
    "fitting_nodes",
    "memo_predicate",
    "predicate_nodes",
    "preempt_check",
    "preempt_check_memo",
    "preempt_nodes",
    "prioritize_nodes",
    "select_best_node",
    "sort_nodes",
]

#: A node check: returns when ``task`` may go on ``node``, raises :class:`FitError` if not.
Check = Callable[[TaskInfo, NodeInfo], None]


@dataclass
class PredicateResult:
    """Feasible nodes in visiting order, and the fit error of each rejected node."""

    feasible: list[NodeInfo] = field(default_factory=list)
    errors: dict[str, FitError] = field(default_factory=dict)


def allocate_check(ssn: Session) -> Check:
    """Allocate's node check: ``init_resreq ≤ future_idle``, then the session predicates.

    Volcano's allocate ``predicateFn`` (``allocate.go``): a resource shortfall is a plain
    Unschedulable fit error named ``Insufficient resources``.
    """

    def check(task: TaskInfo, node: NodeInfo) -> None:
        if not fits(task.init_resreq, node, future=True):
            raise search.INSUFFICIENT
        ssn.predicate(task, node)

    return check


def preempt_check(ssn: Session) -> Check:
    """Volcano's ``Session.PredicateForPreemptAction``: the session predicates, but a node
    is rejected only by an error eviction cannot resolve.

    A plain Unschedulable answer (too many pods, say) may be fixed by evicting victims, so
    the node stays a candidate; an unresolvable one (taint, affinity) rejects it. Resources
    are not checked: the preempt action weighs victims against the request itself.
    """

    def check(task: TaskInfo, node: NodeInfo) -> None:
        try:
            ssn.predicate(task, node)
        except FitError as exc:
            if not exc.resolvable_by_preemption:
                raise

    return check


def memo_predicate(
    ssn: Session,
    task: TaskInfo,
    node: NodeInfo,
    *,
    plan: list[tuple[Any, dict[int, Any] | None]] | None = None,
) -> None:
    """:meth:`Session.predicate` for a session node, answered from the session's memo
    while the node is unchanged (keyed predicates only, as the allocate hot path does:
    :mod:`controller.policy.framework.search`). ``plan`` is ``ssn.plan("predicate", task)``
    when the caller asks about many nodes for one task.

    Raises the first plugin's :class:`FitError`, as the session does.
    """
    pos = ssn.nodes.position(node.name)
    version = ssn.view.versions[pos]
    for fn, memo in plan if plan is not None else ssn.plan("predicate", task):
        if memo is not None:
            hit = memo.get(pos)
            if hit is not None and hit[0] == version:
                if hit[1] is not None:
                    raise hit[1]
                continue
        error: FitError | None = None
        try:
            fn(task, node)
        except FitError as exc:
            error = exc.with_traceback(None)  # memoised: no frames kept (search.py)
        if memo is not None:
            memo[pos] = (version, error)
        if error is not None:
            raise error


def preempt_check_memo(ssn: Session) -> Check:
    """:func:`preempt_check` answered through :func:`memo_predicate` (session nodes only)."""

    plans: dict[str, list[tuple[Any, dict[int, Any] | None]]] = {}

    def check(task: TaskInfo, node: NodeInfo) -> None:
        plan = plans.get(task.key)
        if plan is None:
            plans.clear()  # one task at a time: keep only its plan
            plan = plans[task.key] = ssn.plan("predicate", task)
        try:
            memo_predicate(ssn, task, node, plan=plan)
        except FitError as exc:
            if not exc.resolvable_by_preemption:
                raise

    return check


def predicate_nodes(
    ssn: Session,
    task: TaskInfo,
    check: Check,
    *,
    nodes: Sequence[NodeInfo] | None = None,
    cache: dict[str, FitError] | None = None,
    move_cursor: bool = True,
) -> PredicateResult:
    """Check nodes from the session's rotating start until enough are feasible.

    Volcano's ``util.PredicateNodes``. ``check`` raises :class:`FitError` to reject a
    node. ``cache`` (node name → error), when given, short-cuts nodes that already failed
    for the same job and role, and records new failures (Volcano's predicate error cache).
    The session's ``predicate_cursor`` advances past the nodes visited (unless
    ``move_cursor`` is false).

    Args:
        ssn: The session (its nodes, and its cursor, which this call moves).
        task: The task to place.
        check: The node check (:func:`allocate_check`, :func:`preempt_check`, ...).
        nodes: The nodes to search (default: every session node, in name order).
        cache: The predicate error cache of the task's job and role.
        move_cursor: False for a dry run (e.g. over scratch node copies,
            :mod:`controller.policy.framework.simulate`), which must leave the session as it was.

    Returns:
        The feasible nodes in visiting order and the errors of the rejected ones.
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
            exc = exc.with_traceback(None)  # kept: no frames kept with it (search.py)
            errors[node.name] = exc
            if cache is not None:
                cache[node.name] = exc
            continue
        feasible.append(node)
        if len(feasible) >= want:
            break
    if move_cursor:
        ssn.predicate_cursor = (start + processed) % total
    return result


def preempt_nodes(
    ssn: Session, task: TaskInfo, *, cache: dict[str, FitError] | None = None
) -> PredicateResult:
    """``predicate_nodes(ssn, task, preempt_check_memo(ssn), cache=cache)``, in one loop.

    The same walk (session nodes from the cursor, the error cache, the stopping rule, the
    cursor moved past the nodes visited) and the same answers: each predicate answered
    from the session's memo while the node's version holds, else asked and memoised, the
    first error ending the node's checks, and the node rejected only by an error no
    eviction can resolve. Without the two calls per node and the node's position looked
    up by name (a session node's position is its index in ``node_list``): preempt walks
    the nodes twice for every pending task of a full cluster.
    """
    pool = ssn.view.node_list
    total = len(pool)
    result = PredicateResult()
    if total == 0:
        return result
    want = calculate_num_feasible_nodes_to_find(total)
    start = ssn.predicate_cursor % total
    feasible, errors = result.feasible, result.errors
    versions = ssn.view.versions
    plan = ssn.plan("predicate", task)
    processed = 0
    for i in range(total):
        pos = (start + i) % total
        node = pool[pos]
        processed += 1
        if cache is not None:
            cached = cache.get(node.name)
            if cached is not None:
                errors[node.name] = cached
                continue
        version = versions[pos]
        error: FitError | None = None
        for fn, memo in plan:
            if memo is not None:
                hit = memo.get(pos)
                if hit is not None and hit[0] == version:
                    error = hit[1]
                    if error is not None:
                        break
                    continue
            try:
                fn(task, node)
            except FitError as exc:
                error = exc.with_traceback(None)
            if memo is not None:
                memo[pos] = (version, error)
            if error is not None:
                break
        if error is not None and not error.resolvable_by_preemption:
            errors[node.name] = error
            if cache is not None:
                cache[node.name] = error
            continue
        feasible.append(node)
        if len(feasible) >= want:
            break
    ssn.predicate_cursor = (start + processed) % total
    return result


def prioritize_nodes(ssn: Session, task: TaskInfo, nodes: Sequence[NodeInfo]) -> dict[str, float]:
    """Node name → the session's node-order score (zeros when nothing scores).

    Volcano's ``util.PrioritizeNodes`` without the batch and map/reduce variants (no
    plugin here registers them).
    """
    if not ssn.flat("node_order"):
        return dict.fromkeys((node.name for node in nodes), 0.0)
    return {node.name: ssn.node_order(task, node) for node in nodes}


def select_best_node(scores: dict[str, float]) -> tuple[str, float] | None:
    """The highest score; ties go to the lowest node name. None when empty.

    Volcano's ``util.SelectBestNodeAndScore`` (which picks a random node among the best).
    """
    best: tuple[str, float] | None = None
    for name, score in scores.items():
        if best is None or score > best[1] or (score == best[1] and name < best[0]):
            best = (name, score)
    return best


def sort_nodes(scores: dict[str, float]) -> list[str]:
    """Node names by score, highest first; ties by name (Volcano's ``util.SortNodes``).

    ``sort_nodes(s)[0]`` is ``select_best_node(s)[0]`` whenever ``s`` is not empty.
    """
    return sorted(scores, key=lambda name: (-scores[name], name))


def fitting_nodes(
    ssn: Session,
    task: TaskInfo,
    *,
    cache: dict[int, FitError] | None = None,
    plan: list[tuple[Any, dict[int, Any] | None]] | None = None,
) -> Gradients:
    """Allocate's search: :func:`predicate_nodes` with :func:`allocate_check`, split by
    whether the request also fits ``idle``; nodes as view indices (hot path).

    Args:
        ssn: The session (its cursor moves as in :func:`predicate_nodes`).
        task: The task to place.
        cache: The predicate error cache of the task's job and role (node index → error).
        plan: ``ssn.plan("predicate", task)``, when the caller has it already.

    Returns:
        Feasible node indices: ``idle`` (fits now) and ``future`` (fits only future idle).
    """
    return search.find_fitting_nodes(ssn, task, cache=cache, plan=plan)


def best_node(ssn: Session, task: TaskInfo, indices: list[int]) -> tuple[NodeInfo, float]:
    """The best of ``indices`` (non-empty) with its score: :func:`prioritize_nodes` then
    :func:`select_best_node`, answered by the hot path."""
    return search.best_node(ssn, task, indices)
