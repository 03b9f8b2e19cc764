"""The ``nodeorder`` plugin's session side: the node-order function it registers.

On session open the plugin registers one node-order function summing the weighted scores
of :mod:`controller.policy.plugins.nodeorder.scores`, with its batch form
(:class:`ScoreColumns`, memoised per task shape and node version) for allocate's node
choice and its upper bound (:mod:`controller.policy.plugins.nodeorder.bound`) for the
pruned search. The taint score is reverse-normalised: ``100 − count × 100 / max count``,
the maximum taken over the session's nodes (upstream: over the nodes being scored;
volcano-sh/volcano pkg/scheduler/plugins/nodeorder/nodeorder.go, ``nodeOrderFn``,
``batchNodeOrderFn``).
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.session import Session
from controller.policy.plugins.nodeorder.args import NAME, NodeOrderArgs
from controller.policy.plugins.nodeorder.bound import ScoreBound
from controller.policy.plugins.nodeorder.scores import (
    DEFAULT_MEMORY,
    DEFAULT_MILLI_CPU,
    MAX_NODE_SCORE,
    _resource_scores,
    intolerable,
    node_affinity,
    resource_column,
    shape,
)
from projections.model import NodeInfo, TaskInfo


class NodeOrderPlugin:
    """Registers one node-order function summing the weighted scores, with its batch form
    (:class:`ScoreColumns`) for allocate's node choice."""

    name = NAME

    def __init__(self, args: NodeOrderArgs) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        args = self.args
        # the most intolerable taints on any session node, per tolerations list (taints do
        # not change within a session; the lists live as long as their tasks)
        most_taints: dict[int, int] = {}
        tainted: list[list[NodeInfo]] = []

        def taint_score(task: TaskInfo, node: NodeInfo) -> int:
            key = id(task.tolerations)
            top = most_taints.get(key)
            if top is None:
                # nodes without taints count 0: only the tainted ones can raise the maximum
                if not tainted:
                    tainted.append([node for node in ssn.view.node_list if node.taints])
                top = max((intolerable(task, node) for node in tainted[0]), default=0)
                most_taints[key] = top
            if top == 0 or not node.taints:
                return MAX_NODE_SCORE
            return MAX_NODE_SCORE - intolerable(task, node) * MAX_NODE_SCORE // top

        least_w, most_w, balanced_w = (
            args.least_requested,
            args.most_requested,
            args.balanced_resource,
        )

        def score(task: TaskInfo, node: NodeInfo) -> float:
            total = 0
            if least_w or most_w or balanced_w:
                total += _resource_scores(task, node, least_w, most_w, balanced_w)
            if args.node_affinity and task.affinity:
                total += node_affinity(task, node) * args.node_affinity
            if args.taint_toleration:
                total += taint_score(task, node) * args.taint_toleration
            return float(total)

        # the score depends on the node and only on these of the task: the session may
        # reuse it for tasks of the same shape while the node is unchanged
        ssn.add_node_order_fn(
            NAME,
            score,
            key=shape,
            batch=ScoreColumns(ssn, args).scores,
            bound=ScoreBound(ssn, args).bound,
        )

    def on_session_close(self, ssn: Session) -> None:
        del ssn


class ScoreColumns:
    """The plugin's scores over the view's columns, memoised per task shape and node
    version: what ``score`` returns, for many nodes per call.

    Per shape, two columns over the session nodes: the node version each total was
    computed at, and the total (an int). The resource part reads the view's used and
    allocatable columns; the taint part counts only nodes with taints (a node without
    any scores the maximum, and adds nothing to the maximum count).
    """

    def __init__(self, ssn: Session, args: NodeOrderArgs) -> None:
        self.view = ssn.view
        self.args = args
        #: session nodes with taints (taints do not change within a session), on first use
        self._tainted: list[int] | None = None
        self._taints: dict[str, dict[int, int]] = {}
        self._columns: dict[tuple[float, float, str, str], tuple[list[int], list[int]]] = {}

    def _taint_scores(self, task: TaskInfo, key: str) -> dict[int, int]:
        """Node index → taint score, for the tainted nodes (the others score 100)."""
        found = self._taints.get(key)
        if found is None:
            pool = self.view.node_list
            if self._tainted is None:
                self._tainted = [i for i, node in enumerate(pool) if node.taints]
            counts = {i: intolerable(task, pool[i]) for i in self._tainted}
            top = max(counts.values(), default=0)
            found = {
                i: MAX_NODE_SCORE if top == 0 else MAX_NODE_SCORE - count * MAX_NODE_SCORE // top
                for i, count in counts.items()
            }
            self._taints[key] = found
        return found

    def scores(self, task: TaskInfo, indices: Sequence[int]) -> list[float]:
        """``score(task, node_list[i])`` for each ``i`` of ``indices``."""
        key = shape(task)
        column = self._columns.get(key)
        if column is None:
            count = len(self.view.node_list)
            column = self._columns[key] = ([-1] * count, [0] * count)
        stamps, totals = column
        versions = self.view.versions
        stale = [i for i in indices if stamps[i] != versions[i]]
        if stale:
            self._fill(task, key, stale, totals)
            for i in stale:
                stamps[i] = versions[i]
        return [float(totals[i]) for i in indices]

    def _fill(
        self,
        task: TaskInfo,
        key: tuple[float, float, str, str],
        stale: list[int],
        totals: list[int],
    ) -> None:
        args = self.args
        least_w, most_w, bal_w = args.least_requested, args.most_requested, args.balanced_resource
        pool = self.view.node_list
        cols = self.view.columns()
        used_cpu, used_mem = cols.used_cpu, cols.used_mem
        alloc_cpu, alloc_mem = cols.alloc_cpu, cols.alloc_mem
        cpu = task.resreq.milli_cpu or DEFAULT_MILLI_CPU
        memory = task.resreq.memory or DEFAULT_MEMORY
        if least_w or most_w or bal_w:
            parts = resource_column(
                cpu,
                memory,
                ([used_cpu[i] for i in stale], [used_mem[i] for i in stale]),
                ([alloc_cpu[i] for i in stale], [alloc_mem[i] for i in stale]),
                weights=(least_w, most_w, bal_w),
            )
        else:
            parts = [0] * len(stale)
        affinity_w = args.node_affinity if task.affinity else 0
        if affinity_w:
            parts = [
                total + node_affinity(task, pool[i]) * affinity_w
                for total, i in zip(parts, stale, strict=True)
            ]
        taint_w = args.taint_toleration
        if taint_w:
            taints = self._taint_scores(task, key[3])
            top = MAX_NODE_SCORE * taint_w
            parts = [
                total + (taints[i] * taint_w if i in taints else top)
                for total, i in zip(parts, stale, strict=True)
            ]
        for total, i in zip(parts, stale, strict=True):
            totals[i] = total


def build(args: NodeOrderArgs, ctx: PluginContext) -> NodeOrderPlugin:
    """The plugin for validated ``args``."""
    del ctx
    return NodeOrderPlugin(args)
