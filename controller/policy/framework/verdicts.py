"""Every node's verdict for one task: the first check that refuses it, or each
node-order plugin's score and their total.

Why it exists: the node search (:mod:`controller.policy.framework.nodes`, its hot path
:mod:`controller.policy.framework.search`) stops once it has found enough feasible nodes
and scores only the nodes whose bound can still win, so a decision never computes the
other nodes' answers. An offline view of a bind (``replay/bindview.py``, what
kube-scheduler-simulator users expect: per node, the filter that failed or each score
plugin's score) needs all of them. :func:`evaluate_nodes` asks the session the same
questions as allocate's check (:func:`~controller.policy.framework.nodes.allocate_check`)
and :meth:`~controller.policy.framework.session.Session.node_order`, for every node, one
plugin at a time.

Pure, and it changes nothing: the session's predicate cursor does not move and no memo
is read or written (the plugins' callables are called directly), so a session asked this
between two placements decides as it would have.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.policy.framework.points import SCORE_ERRORS, FitError
from controller.policy.framework.resources import fits
from controller.policy.framework.session import Session
from projections.model import NodeInfo, TaskInfo

__all__ = ["RESOURCES", "NodeVerdict", "evaluate_node", "evaluate_nodes"]

#: the name a resource shortfall is reported under (allocate's check, before the predicates)
RESOURCES = "resources"


@dataclass(frozen=True)
class NodeVerdict:
    """One node's answer for one task.

    ``check`` and ``reason`` name the first refusal (``check`` is :data:`RESOURCES` for a
    request that does not fit the node's future idle, else the refusing predicate's
    plugin); both are empty for a feasible node. ``fits_idle``: the request fits idle now
    (allocate binds only there; a node that fits only future idle is pipelined onto).
    ``scores`` are the node-order plugins' scores in tier order, as each plugin returns it
    (its weights applied); ``total`` is their sum as the session adds them (0 when a
    plugin's score raised, named by ``score_error``).
    """

    node: str
    check: str = ""
    reason: str = ""
    fits_idle: bool = False
    scores: tuple[tuple[str, float], ...] = ()
    total: float = 0.0
    score_error: str = ""

    @property
    def feasible(self) -> bool:
        """Whether every check passed."""
        return not self.check


def evaluate_node(ssn: Session, task: TaskInfo, node: NodeInfo) -> NodeVerdict:
    """``node``'s verdict for ``task`` in ``ssn`` (see :class:`NodeVerdict`).

    Args:
        ssn: The open session (read only).
        task: The task to place (its ``init_resreq`` is the request, as allocate's).
        node: A node of the session's view.

    Returns:
        The first refusal, or the per-plugin scores and their total.
    """
    if not fits(task.init_resreq, node, future=True):
        return NodeVerdict(node.name, RESOURCES, "Insufficient resources")
    for row in ssn.chain("predicate"):
        for name, fn in row:
            try:
                fn(task, node)
            except FitError as exc:
                return NodeVerdict(node.name, exc.plugin or name, exc.reason)
    idle = fits(task.init_resreq, node, future=False)
    scores: list[tuple[str, float]] = []
    total = 0.0
    for row in ssn.chain("node_order"):
        for name, fn in row:
            try:
                score = fn(task, node)
            except SCORE_ERRORS as exc:
                # Session.node_order: the first error zeroes the node
                return NodeVerdict(
                    node.name, fits_idle=idle, scores=tuple(scores), score_error=f"{name}: {exc}"
                )
            scores.append((name, score))
            total += score
    return NodeVerdict(node.name, fits_idle=idle, scores=tuple(scores), total=total)


def evaluate_nodes(ssn: Session, task: TaskInfo) -> list[NodeVerdict]:
    """Every session node's verdict for ``task``, in node name order.

    The node search without its early stop and pruning: the same check as allocate's
    (``init_resreq ≤ future_idle``, then each session predicate in tier order) and the
    same scores as :meth:`Session.node_order`, for every node.

    Args:
        ssn: The open session (read only: no cursor moved, no memo touched).
        task: The task to place.

    Returns:
        One :class:`NodeVerdict` per session node.
    """
    return [evaluate_node(ssn, task, node) for node in ssn.view.node_list]
