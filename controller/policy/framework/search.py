"""Allocate's node search and node choice, in hot-path form (callers go through
:mod:`controller.policy.framework.nodes`, which is the API and holds the definitions).

Allocate asks, for each of up to 1,000 pending pods, which of ~500 nodes (on 5,000 nodes Volcano's
``CalculateNumOfFeasibleNodesToFind``, volcano-sh/volcano pkg/scheduler/util/scheduler_helper.go,
stops after 10 %: ``50 − n // 125`` percent) fit and which of those is best. At that volume the cost
is Python's per-node overhead, so this module does the same thing as
:func:`~controller.policy.framework.nodes.predicate_nodes` with ``allocate_check``, then
:func:`~controller.policy.framework.nodes.prioritize_nodes` + ``select_best_node``, with three
shortcuts
that change no answer:

* the fit test (``init_resreq ≤ future_idle``, and whether it also fits ``idle``) reads
  the view's free-resource columns (:mod:`controller.policy.framework.columns`);
* a predicate or scorer registered with a ``key`` (``Session.add_predicate_fn``) answers
  from the session's memo while the node is unchanged (the view's node versions); when
  every predicate is keyed, one list per key combination (``Session.passes``) records the
  node version at which all of them passed, so such a node costs one comparison;
* the loop is inlined (no per-node function call of the framework's own); where every
  predicate is keyed, one comprehension classifies the nodes of a stretch (``want −
  found`` nodes, all visited anyway) from the columns, the pass list and a refusal list
  per key combination (``Session.refusals``: the version at which the plan refused the
  node, and its error for the error cache); only nodes known neither way are visited
  one by one;
* when every scorer registered a ``batch`` (``Session.add_node_order_fn``), the scores of
  all candidate nodes come from one call per scorer (plugins answer from columns), summed
  in tier order from ``0.0`` as the per-node loop sums them;
* when every scorer is bounded or keyed, only the candidates whose upper bound reaches
  the best exact score are scored (:mod:`controller.policy.framework.pruning`).

Visiting order, stopping rule, cursor advance and the predicate error cache are those of
``predicate_nodes``; ties go to the lowest node name.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from controller.policy.framework import pruning
from controller.policy.framework.columns import ROOM_UNITS
from controller.policy.framework.extensions import BatchScoreFn
from controller.policy.framework.feasible import calculate_num_feasible_nodes_to_find
from controller.policy.framework.points import SCORE_ERRORS, FitError, FitStatus
from controller.policy.framework.session import Session
from projections.model import NodeInfo, TaskInfo

#: The fit error of a node whose free resources are too small (allocate's own check).
INSUFFICIENT = FitError(FitStatus.UNSCHEDULABLE, "Insufficient resources", plugin="allocate")


@dataclass
class Gradients:
    """Feasible nodes (as view indices): the request fits ``idle``, or only future idle."""

    idle: list[int] = field(default_factory=list)
    future: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.idle) + len(self.future)


def find_fitting_nodes(
    ssn: Session,
    task: TaskInfo,
    *,
    cache: dict[int, FitError] | None = None,
    plan: list[tuple[Any, dict[int, Any] | None]] | None = None,
) -> Gradients:
    """Nodes where ``task`` fits ``future_idle`` and every session predicate passes.

    ``cache`` (node index → error) is Volcano's predicate error cache for the task's job
    and role: nodes in it are skipped, and new failures are added. ``plan`` is
    ``ssn.plan("predicate", task)`` when the caller has it already.
    """
    view = ssn.view
    pool = view.node_list
    total = len(pool)
    out = Gradients()
    if total == 0:
        return out
    want = calculate_num_feasible_nodes_to_find(total)
    start = ssn.predicate_cursor % total
    cols = view.columns()
    idle_cpu, idle_mem = cols.idle_cpu, cols.idle_mem
    fut_cpu, fut_mem = cols.future_cpu, cols.future_mem
    req = task.init_resreq
    cpu, mem = req.milli_cpu, req.memory
    scalars = [(value, *cols.scalar(name)) for name, value in sorted(req.scalars.items())]
    if plan is None:
        plan = ssn.plan("predicate", task)
    passed = ssn.passes(plan, total)
    refused, refusal = ssn.refusals(plan, total) if passed is not None else ([], [])
    versions = view.versions
    idle_fit, future_fit = out.idle, out.future

    def visit(i: int) -> int:
        """Node ``i``: 0 refused (recorded in the cache), 1 fits future idle, 2 idle."""
        if cache is not None and i in cache:
            return 0
        if not (cpu < fut_cpu[i] and mem < fut_mem[i]):
            if cache is not None:
                cache[i] = INSUFFICIENT
            return 0
        fits_idle = cpu < idle_cpu[i] and mem < idle_mem[i]
        error: FitError | None = None
        for value, idle_col, fut_col in scalars:
            if not value < fut_col[i]:
                error = INSUFFICIENT
                break
            if fits_idle and not value < idle_col[i]:
                fits_idle = False
        if error is None and (passed is None or passed[i] != versions[i]):
            version = versions[i]
            for fn, memo in plan:
                if memo is not None:
                    hit = memo.get(i)
                    if hit is not None and hit[0] == version:
                        error = hit[1]
                        if error is not None:
                            break
                        continue
                try:
                    fn(task, pool[i])
                except FitError as exc:
                    # kept in memos: without its traceback, whose frames would make a
                    # cycle with it (exc -> frame -> error) for the collector to free
                    error = exc.with_traceback(None)
                if memo is not None:
                    memo[i] = (version, error)
                if error is not None:
                    break
            if passed is not None:
                if error is None:
                    passed[i] = version
                else:
                    refused[i], refusal[i] = version, error
        if error is not None:
            if cache is not None:
                cache[i] = error
            return 0
        return 2 if fits_idle else 1

    order = _twice(total)  # positions start, start + 1, ... wrapping: order[start + k]
    # the one-scalar fast lane (pods): nodes that fit and passed at their version are
    # classified in one comprehension per chunk; only the others are visited one by one
    lane = passed is not None and len(scalars) <= 1
    s_value, s_idle, s_fut = scalars[0] if scalars else (-math.inf, idle_cpu, fut_cpu)
    # the request's largest part in the room's units: below a node's room, it fits
    # idle and future idle there (FreeColumns.room)
    scalar_name = min(req.scalars) if len(scalars) == 1 else None
    room = cols.room(scalar_name) if lane else []
    units = ROOM_UNITS
    need = max(cpu / units[0], mem / units[1], s_value / units[2])
    # the cache gains only nodes this search has already passed: read it as it was
    held: dict[int, FitError] = cache or {}
    cached = bool(held)
    refused_code, small_code = (3, 5) if cache is not None else (0, 0)
    found = processed = 0
    while processed < total and found < want:
        # never past ``want``: the chunk holds at most that many nodes, all visited
        size = min(want - found, total - processed)
        chunk = order[start + processed : start + processed + size]
        processed += len(chunk)
        if not lane or passed is None:
            for i in chunk:
                verdict = visit(i)
                if verdict:
                    (idle_fit if verdict == 2 else future_fit).append(i)
                    found += 1
            continue
        # 1 fits future idle, 2 idle (passed at its version), 0 skipped (in the error
        # cache); to record in the cache: 3 refused at its version, 5 too small (0 both
        # without a cache: nothing to record); 4 unknown
        codes = [
            # the usual node first: fits idle and future idle, passed at its version
            2
            if need < room[i] and passed[i] == versions[i] and not (cached and i in held)
            else 0
            if cached and i in held
            else (
                (2 if cpu < idle_cpu[i] and mem < idle_mem[i] and s_value < s_idle[i] else 1)
                if passed[i] == versions[i]
                else refused_code
                if refused[i] == versions[i]
                else 4
            )
            if cpu < fut_cpu[i] and mem < fut_mem[i] and s_value < s_fut[i]
            else small_code
            for i in chunk
        ]
        if max(codes) > 2:
            for k in [k for k, code in enumerate(codes) if code > 2]:
                code, i = codes[k], chunk[k]
                if code == 4:
                    codes[k] = visit(i)
                    continue
                codes[k] = 0
                if cache is not None:
                    cache[i] = refusal[i] if code == 3 else INSUFFICIENT
        if 0 not in codes and 1 not in codes:  # the usual stretch: every node fits idle
            found += len(chunk)
            idle_fit += chunk
            continue
        found += len(codes) - codes.count(0)
        if 1 not in codes:  # codes are 0 or 2 now: the nonzero ones fit idle
            idle_fit += compress(chunk, codes)
            continue
        idle_fit += [i for i, code in zip(chunk, codes, strict=True) if code == 2]
        future_fit += [i for i, code in zip(chunk, codes, strict=True) if code == 1]
    ssn.predicate_cursor = (start + processed) % total
    return out


@functools.lru_cache(maxsize=4)
def _twice(total: int) -> list[int]:
    """``0 … total − 1`` twice over (shared: never mutated), so that a search's visiting
    order from any start is a slice."""
    return [*range(total), *range(total)]


def best_node(ssn: Session, task: TaskInfo, indices: list[int]) -> tuple[NodeInfo, float]:
    """The highest-scoring node of ``indices`` (non-empty); ties go to the lowest name.

    Scores as :meth:`Session.node_order`: the sum of the scorers, zero when one raises.
    """
    pool = ssn.view.node_list
    entries = ssn.score_plan(task)
    if not entries:
        return min((pool[i] for i in indices), key=_name), 0.0
    found = pruning.pruned_best(
        ssn, task, indices, lambda subset: _scored_best(ssn, task, subset, entries)
    )
    return found if found is not None else _scored_best(ssn, task, indices, entries)


def _scored_best(
    ssn: Session,
    task: TaskInfo,
    indices: list[int],
    entries: list[tuple[Any, dict[int, Any] | None, BatchScoreFn | None]],
) -> tuple[NodeInfo, float]:
    """:func:`best_node` scoring every node of ``indices`` (``entries``: the score plan)."""
    pool = ssn.view.node_list
    if any(batch is not None for _, _, batch in entries):
        found = _batch_best(ssn, task, indices, entries)
        if found is not None:
            return found
    plan = ssn.plan("node_order", task)
    if not plan:
        return min((pool[i] for i in indices), key=_name), 0.0
    versions = ssn.view.versions
    best: NodeInfo | None = None
    best_score = 0.0
    for i in indices:
        node = pool[i]
        version = versions[i]
        score = 0.0
        try:
            for fn, memo in plan:
                value: Any
                if memo is not None:
                    hit = memo.get(i)
                    if hit is not None and hit[0] == version:
                        value = hit[1]
                    else:
                        value = fn(task, node)
                        memo[i] = (version, value)
                else:
                    value = fn(task, node)
                score += value
        except SCORE_ERRORS:
            score = 0.0
        if best is None or score > best_score or (score == best_score and node.name < best.name):
            best, best_score = node, score
    assert best is not None
    return best, best_score


def _batch_best(
    ssn: Session,
    task: TaskInfo,
    indices: list[int],
    entries: list[tuple[Any, dict[int, Any] | None, BatchScoreFn | None]],
) -> tuple[NodeInfo, float] | None:
    """:func:`best_node` with each batch scorer asked once for every node (the others node
    by node, a raising scorer zeroing its node); None when a batch raised."""
    pool = ssn.view.node_list
    versions = ssn.view.versions
    totals = [0.0] * len(indices)
    zeroed: set[int] = set()
    try:
        for fn, memo, batch in entries:
            if batch is not None:
                values = batch(task, indices)
            else:
                values = []
                for k, i in enumerate(indices):
                    value: Any = 0.0
                    if k not in zeroed:
                        try:
                            hit = memo.get(i) if memo is not None else None
                            if hit is not None and hit[0] == versions[i]:
                                value = hit[1]
                            else:
                                value = fn(task, pool[i])
                                if memo is not None:
                                    memo[i] = (versions[i], value)
                        except SCORE_ERRORS:
                            zeroed.add(k)
                            value = 0.0
                    values.append(value)
            totals = [total + value for total, value in zip(totals, values, strict=True)]
    except SCORE_ERRORS:
        return None  # some node's batch score raised: the per-node loop zeroes just it
    for k in zeroed:
        totals[k] = 0.0
    top = max(totals)
    ties = [k for k, total in enumerate(totals) if total == top]
    k = min(ties, key=lambda k: pool[indices[k]].name)
    return pool[indices[k]], totals[k]


def _name(node: NodeInfo) -> str:
    return node.name
