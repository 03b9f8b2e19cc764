"""Allocate's node choice with upper bounds: only nodes that can still win are scored.

Why: at 5,000 nodes a pod has ~500 feasible candidates, and scoring every one exactly
(``nodeorder``'s resource arithmetic for a request that few other pods share, so its
memo rarely helps) was half of an allocate cycle. The winner is almost always among a
few nodes whose scores *could* be the highest; the others need not be scored at all.

How: every node-order plugin of the task's plan contributes a column over the session
nodes (view order) that bounds its score from above:

* a plugin that registered a ``bound`` (``Session.add_node_order_fn``) gives its own
  column and a slack for the task (``score ≤ column[i] + slack``);
* a keyed plugin without one: the framework keeps its exact scores per key value for
  every node, computed once and then again for each node a statement changes
  (``ClusterView.changed``).

The sum of the columns (kept per combination, also brought up to date from
``ClusterView.changed``) plus the slacks bounds each node's total. The candidate with the
highest bound is scored exactly (``first``); every candidate whose bound reaches
``first`` is scored exactly too, and the best of those is the answer, ties to the lowest
name as always: any other candidate's total is below ``first``, so it can neither win
nor tie. The exact scoring is the caller's (:func:`controller.policy.framework.search.best_node`
on the smaller list), so the winner and its score are the ones the full scoring gives;
``tests/controller/policy/framework/test_pruning.py`` compares the two on seeded clusters.
When every plugin is keyed (no bound, no slack) the sum column is the exact total itself,
added up in the same order, and the best is read off it without scoring any node.

Not used (the caller scores every candidate) when a plugin is neither bounded nor keyed,
a bound declines the task, a plugin's exact scores raised or were NaN on some node, a
plugin has more than :data:`MAX_KEYS` key values, there are fewer than
:data:`MIN_CANDIDATES` candidates, or ``first ≤ 0`` (a raising scorer zeroes its node's
total, and a zero could then win or tie).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from itertools import compress
from operator import itemgetter
from typing import Any

from controller.policy.framework.extensions import BatchScoreFn
from controller.policy.framework.points import SCORE_ERRORS
from controller.policy.framework.session import Session
from controller.policy.framework.view import ClusterView
from projections.model import NodeInfo, TaskInfo

#: Below this many candidates the exact scoring is about as cheap as the bounds.
MIN_CANDIDATES = 32
#: Exact score columns kept per plugin (one per key value; each costs a pass over the
#: session nodes).
MAX_KEYS = 8
#: Relative allowance for float rounding between a bound and the exact sum.
EPSILON = 1e-9

Exact = Callable[[list[int]], tuple[NodeInfo, float]]


class _ExactColumn:
    """One keyed plugin's exact scores at every session node, for one key value."""

    __slots__ = ("batch", "broken", "fn", "seen", "task", "values")

    def __init__(self, fn: Any, batch: BatchScoreFn | None, task: TaskInfo, count: int) -> None:
        self.fn = fn
        self.batch = batch
        #: a task with this key: the plugin's key promise makes its scores everyone's
        self.task = task
        self.values: list[float] = [0.0] * count
        self.seen = 0
        self.broken = False

    def fill(self, view: ClusterView, positions: Sequence[int]) -> None:
        pool, values = view.node_list, self.values
        try:
            if self.batch is not None:
                found = self.batch(self.task, positions)
            else:
                found = [self.fn(self.task, pool[i]) for i in positions]
        except SCORE_ERRORS:
            self.broken = True
            return
        for i, value in zip(positions, found, strict=True):
            if value != value:  # NaN: no order
                self.broken = True
            values[i] = value


class _SumColumn:
    """The sum of some columns, per node, in plan order."""

    __slots__ = ("columns", "seen", "values")

    def __init__(self, columns: tuple[Sequence[float], ...], view: ClusterView) -> None:
        #: held so that the ids in this column's key stay theirs
        self.columns = columns
        self.values: list[float] = [0.0] * len(view.node_list)
        self.refresh(range(len(self.values)))
        self.seen = len(view.changed)

    def refresh(self, positions: Sequence[int]) -> None:
        values, columns = self.values, self.columns
        for i in positions:
            total = 0.0
            for column in columns:
                total += column[i]
            values[i] = total


def _exact_column(
    ssn: Session, name: str, value: Hashable, fn: Any, batch: BatchScoreFn | None, task: TaskInfo
) -> list[float] | None:
    store, view = ssn.score_columns, ssn.view
    column: _ExactColumn | None = store.get(("exact", name, value))
    if column is None:
        keys = store.get(("keys", name), 0)
        if keys >= MAX_KEYS:
            return None
        store[("keys", name)] = keys + 1
        count = len(view.node_list)
        column = store[("exact", name, value)] = _ExactColumn(fn, batch, task, count)
        column.fill(view, range(count))
        column.seen = len(view.changed)
    elif column.seen < len(view.changed):
        column.fill(view, view.changed_since(column.seen))
        column.seen = len(view.changed)
    return None if column.broken else column.values


def _sum_column(ssn: Session, columns: tuple[Sequence[float], ...]) -> list[float]:
    store, view = ssn.score_columns, ssn.view
    key = ("sum", *map(id, columns))
    found: _SumColumn | None = store.get(key)
    if found is None:
        found = store[key] = _SumColumn(columns, view)
    elif found.seen < len(view.changed):
        found.refresh(view.changed_since(found.seen))
        found.seen = len(view.changed)
    return found.values


def bounds(ssn: Session, task: TaskInfo) -> tuple[list[float], float, bool] | None:
    """Per session node, a bound on ``task``'s total score without the slack; the slack;
    and whether the bound is the exact total (every plugin keyed: exact columns only).
    None when some plugin cannot be bounded (see the module docstring)."""
    columns: list[Sequence[float]] = []
    slack = 0.0
    only_exact = True
    for name, value, fn, batch, bound in ssn.bound_plan(task):
        if bound is not None:
            only_exact = False
            found = bound(task)
            if found is None:
                return None
            columns.append(found[0])
            slack += found[1]
        elif value is not None:
            exact = _exact_column(ssn, name, value, fn, batch, task)
            if exact is None:
                return None
            columns.append(exact)
        else:
            return None
    return _sum_column(ssn, tuple(columns)), slack, only_exact


def pruned_best(
    ssn: Session, task: TaskInfo, indices: list[int], exact: Exact
) -> tuple[NodeInfo, float] | None:
    """The best of ``indices`` as ``exact(indices)`` chooses it, scoring only the nodes
    whose bound reaches the exact score of the node with the highest bound; None when
    the bounds do not apply (the caller then scores every node)."""
    if len(indices) < MIN_CANDIDATES:
        return None
    found = bounds(ssn, task)
    if found is None:
        return None
    column, slack, exact_sum = found
    # the candidates' bounds in one C call (``indices`` holds MIN_CANDIDATES or more, so
    # itemgetter returns a tuple); the first highest, as max(indices, key=...) picks it
    values = itemgetter(*indices)(column)
    if exact_sum:
        # every column holds its plugin's exact scores (none raised or was NaN: the column
        # would be broken), summed from 0.0 in plan order as the exact scoring sums them:
        # the column is each node's total, so the best is read off it, ties to the
        # lowest name, with no scoring at all
        best = max(values)
        # the view's nodes are in name order, so the lowest position is the lowest name
        winner = min(compress(indices, [value == best for value in values]))
        return ssn.view.node_list[winner], column[winner]  # its own total (a zero's sign)
    top = indices[values.index(max(values))]
    first = exact([top])[1]
    if not first > 0.0:
        return None
    floor = first - slack - EPSILON * (1.0 + abs(first) + abs(slack))
    chosen = list(compress(indices, [value >= floor for value in values]))
    # never empty under an honest bound (``top`` itself reaches ``floor``)
    return exact(chosen) if chosen else None
