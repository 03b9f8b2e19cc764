"""The parts of a node-order plugin's score, with their weights, for the bind view.

Why it exists: a plugin registers one node-order function, so the session knows only its
weighted sum. kube-scheduler-simulator users read a score as its parts (nodeorder's
least-requested, balanced-resource, node-affinity and taint-toleration scores, each
times its weight), so :class:`PartsFor` computes them again for the plugins whose
arithmetic is known (nodeorder, usage), from their validated arguments and the same
score functions. The parts are offered only when they add up to the plugin's own score
exactly; otherwise (a plugin tide does not know, an argument it cannot read) the score
stands alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.policy.framework.session import Session
from controller.policy.plugins.nodeorder.args import NodeOrderArgs
from controller.policy.plugins.nodeorder.scores import (
    MAX_NODE_SCORE,
    _resource_scores,
    intolerable,
    node_affinity,
)
from controller.policy.plugins.usage import UsageArgs
from projections.model import NodeInfo, TaskInfo


@dataclass(frozen=True)
class Part:
    """One part of a plugin's score: ``raw × weight``."""

    name: str
    raw: float
    weight: float

    @property
    def score(self) -> float:
        """The part's share of the plugin's score."""
        return self.raw * self.weight


class PartsFor:
    """The weighted parts of the plugins' scores for one task in one session (what is
    the same for every node, the taint maximum, worked out once)."""

    def __init__(self, ssn: Session, task: TaskInfo) -> None:
        self.ssn = ssn
        self.task = task
        self._top: int | None = None

    def _most_taints(self) -> int:
        if self._top is None:
            nodes = self.ssn.view.node_list
            self._top = max((intolerable(self.task, n) for n in nodes if n.taints), default=0)
        return self._top

    def _nodeorder(self, node: NodeInfo, args: NodeOrderArgs) -> list[Part]:
        task = self.task
        parts = [
            Part("leastrequested", _resource_scores(task, node, 1, 0, 0), args.least_requested),
            Part("mostrequested", _resource_scores(task, node, 0, 1, 0), args.most_requested),
            Part("balancedresource", _resource_scores(task, node, 0, 0, 1), args.balanced_resource),
        ]
        if task.affinity:
            parts.append(Part("nodeaffinity", node_affinity(task, node), args.node_affinity))
        if args.taint_toleration:
            top = self._most_taints()
            raw = (
                MAX_NODE_SCORE
                if top == 0 or not node.taints
                else MAX_NODE_SCORE - intolerable(task, node) * MAX_NODE_SCORE // top
            )
            parts.append(Part("tainttoleration", raw, args.taint_toleration))
        return [part for part in parts if part.weight]

    def of(self, node: NodeInfo, *, plugin: str, score: float) -> tuple[Part, ...]:
        """``plugin``'s score of ``node`` as its weighted parts; empty when tide cannot
        split it, or the parts do not add up to ``score`` exactly.

        Args:
            node: The node scored (a node of the session's view).
            plugin: The plugin's name.
            score: The plugin's own score of the node (what the session added).

        Returns:
            The parts, in the plugin's order.
        """
        built: Any = self.ssn.plugins.get(plugin)
        args = getattr(built, "args", None)
        parts: list[Part] = []
        if isinstance(args, NodeOrderArgs):
            parts = self._nodeorder(node, args)
        elif isinstance(args, UsageArgs) and args.usage_weight:
            parts = [Part("usage", score / args.usage_weight, args.usage_weight)]
        if not parts or sum(part.score for part in parts) != score:
            return ()
        return tuple(parts)
