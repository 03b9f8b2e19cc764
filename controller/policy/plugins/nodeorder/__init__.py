"""The ``nodeorder`` plugin: Kubernetes' node scores with Volcano's weights.

Why: after a rescheduling round the evicted pods' replacements must land on the cold
nodes; with no scorer allocate only breaks ties by node name. Upstream:
volcano-sh/volcano pkg/scheduler/plugins/nodeorder/nodeorder.go (``calculateWeight``,
``nodeOrderFn``, ``batchNodeOrderFn``), which wraps the Kubernetes score plugins
(kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources and friends).

Module layout: :mod:`.args` (the weights and their validation), :mod:`.scores` (the
per-node scores and their one-pass column form), :mod:`.plugin` (the session callbacks:
the node-order function and its batch form), :mod:`.bound` (an upper bound on the score,
for allocate's pruned node choice). This package exposes the plugin-module contract of
``controller.policy.framework.plugin``: ``NAME``, ``parse_args(raw) -> NodeOrderArgs`` and
``build(args, ctx) -> NodeOrderPlugin``.
"""

from __future__ import annotations

from controller.policy.plugins.nodeorder.args import (
    NAME,
    UNSCORED,
    WEIGHTS,
    NodeOrderArgs,
    parse_args,
)
from controller.policy.plugins.nodeorder.bound import ScoreBound
from controller.policy.plugins.nodeorder.plugin import NodeOrderPlugin, ScoreColumns, build
from controller.policy.plugins.nodeorder.scores import (
    MAX_NODE_SCORE,
    balanced_resource,
    intolerable,
    least_requested,
    most_requested,
    node_affinity,
    resource_column,
    shape,
)

__all__ = [
    "MAX_NODE_SCORE",
    "NAME",
    "UNSCORED",
    "WEIGHTS",
    "NodeOrderArgs",
    "NodeOrderPlugin",
    "ScoreBound",
    "ScoreColumns",
    "balanced_resource",
    "build",
    "intolerable",
    "least_requested",
    "most_requested",
    "node_affinity",
    "parse_args",
    "resource_column",
    "shape",
]
