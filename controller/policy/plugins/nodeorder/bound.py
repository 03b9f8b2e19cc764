"""An upper bound on the ``nodeorder`` score, for allocate's pruned node choice.

Why: :mod:`controller.policy.framework.pruning` scores exactly only the candidates whose bound
reaches the best exact score; the bound must be cheap for all candidates and tight where
the winners are. A pod's request is small against a node (100m of 64 cores), so the
score a node gives *any* pod is close to the score it would give an empty request.

Per node, independent of the pod (kept current from ``ClusterView.changed``), with
``u`` used and ``a`` allocatable (CPU, memory), weights ``lw``, ``mw``, ``bw``:

* leastrequested at an empty request, ``lw × (least(u_cpu) + least(u_mem)) // 2``: the
  score only falls as the request grows (every step of
  :func:`~controller.policy.plugins.nodeorder.scores._least` is monotone, in IEEE arithmetic
  too);
* mostrequested without its floors, ``mw × (min(u, a) × 100 / a)`` averaged; a request
  ``r`` adds at most ``r × 100 / a`` per resource (slack, with the smallest ``a``);
* balancedresource without its floor, ``bw × (1 − |f_cpu − f_mem| / 2) × 100`` with
  ``f = min(u / a, 1)``: a request moves each fraction up by at most ``r / a``, so the
  difference shrinks by at most the larger of the two (slack ``bw × 50 × max``).

Per pod, the slack adds those allowances, the pod's preferred node-affinity weights (the
most any node can match) and the taint score's maximum. ``tests/controller/policy/plugins/
test_nodeorder_bound.py`` checks ``score ≤ column + slack`` on seeded clusters.
"""

from __future__ import annotations

from controller.policy.framework.session import Session
from controller.policy.plugins.nodeorder import scores as no
from controller.policy.plugins.nodeorder.args import NodeOrderArgs
from projections.model import TaskInfo


class ScoreBound:
    """The bound column of one session and the per-task slack (``Session``'s
    ``add_node_order_fn(bound=)``)."""

    def __init__(self, ssn: Session, args: NodeOrderArgs) -> None:
        self.view = ssn.view
        self.args = args
        self._column: list[float] | None = None
        self._seen = 0
        #: the smallest positive allocatable CPU and memory (a request's largest step),
        #: read on first use: building the columns walks every node, and a session that
        #: places nothing (a TDM window close) never asks
        self._smallest: tuple[float, float] | None = None

    def _min_alloc(self) -> tuple[float, float]:
        found = self._smallest
        if found is None:
            cols = self.view.columns()
            found = self._smallest = (
                min((a for a in cols.alloc_cpu if a > 0), default=0.0),
                min((a for a in cols.alloc_mem if a > 0), default=0.0),
            )
        return found

    def bound(self, task: TaskInfo) -> tuple[list[float], float] | None:
        """The column (the same list on every call) and ``task``'s slack; None when the
        task's preferred node-affinity weights cannot be read."""
        slack = self.slack(task)
        if slack is None:
            return None
        return self.column(), slack

    def column(self) -> list[float]:
        view = self.view
        column = self._column
        if column is None:
            column = self._column = [0.0] * len(view.node_list)
            self._fill(range(len(column)))
        elif self._seen < len(view.changed):
            self._fill(view.changed_since(self._seen))
        self._seen = len(view.changed)
        return column

    def _fill(self, positions: range | list[int]) -> None:
        assert self._column is not None
        column = self._column
        cols = self.view.columns()
        args = self.args
        lw, mw, bw = args.least_requested, args.most_requested, args.balanced_resource
        used_cpu, used_mem, alloc_cpu, alloc_mem = (
            cols.used_cpu,
            cols.used_mem,
            cols.alloc_cpu,
            cols.alloc_mem,
        )
        top = no.MAX_NODE_SCORE
        for i in positions:
            uc, um, ac, am = used_cpu[i], used_mem[i], alloc_cpu[i], alloc_mem[i]
            total = 0.0
            if lw:
                total += (no._least(uc, ac) + no._least(um, am)) // 2 * lw
            if mw:
                most_cpu = min(uc, ac) * top / ac if ac > 0 else 0.0
                most_mem = min(um, am) * top / am if am > 0 else 0.0
                total += (most_cpu + most_mem) / 2 * mw
            if bw:
                f_cpu = min(uc / ac, 1.0) if ac > 0 else 1.0
                f_mem = min(um / am, 1.0) if am > 0 else 1.0
                total += (1 - abs(f_cpu - f_mem) / 2) * top * bw
            column[i] = total

    def slack(self, task: TaskInfo) -> float | None:
        """What ``task``'s score may exceed the column by, at most."""
        args = self.args
        cpu = task.resreq.milli_cpu or no.DEFAULT_MILLI_CPU
        memory = task.resreq.memory or no.DEFAULT_MEMORY
        min_cpu, min_mem = self._min_alloc()
        step_cpu = cpu / min_cpu if min_cpu > 0 else 0.0
        step_mem = memory / min_mem if min_mem > 0 else 0.0
        top = no.MAX_NODE_SCORE
        slack = 0.0
        if args.most_requested:
            # each floored per-resource score gains at most step × 100
            slack += (step_cpu + step_mem) * top / 2 * args.most_requested
        if args.balanced_resource:
            slack += max(step_cpu, step_mem) * top / 2 * args.balanced_resource
        if args.node_affinity and task.affinity:
            weights = _preferred_weights(task)
            if weights is None:
                return None
            slack += weights * args.node_affinity
        slack += top * args.taint_toleration
        return slack


def _preferred_weights(task: TaskInfo) -> int | None:
    """The most :func:`nodeorder.node_affinity` can give ``task`` on any node: its
    positive preferred-term weights; None when a weight is not a number."""
    total = 0
    try:
        for term in no._preferred(task) or []:
            weight = term.get("weight") or 0
            if weight:
                total += max(0, int(weight))
    except (AttributeError, TypeError, ValueError):
        return None
    return total
