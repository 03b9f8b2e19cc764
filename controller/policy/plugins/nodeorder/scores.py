"""The ``nodeorder`` plugin's scores: Kubernetes' node scores, its non-zero request
defaults and Volcano's weights (the plugin and its batch columns are in
:mod:`controller.policy.plugins.nodeorder`, its upper bound in
:mod:`controller.policy.plugins.nodeorder.bound`; both read these, so neither imports the other
for them). The arithmetic is described in :mod:`controller.policy.plugins.nodeorder`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.policy.framework.errors import ConfigError
from controller.policy.framework.matching import match_term, tolerates
from projections.model import NodeInfo, TaskInfo

NAME = "nodeorder"
MAX_NODE_SCORE = 100
DEFAULT_MILLI_CPU = 100.0
DEFAULT_MEMORY = 200.0 * 1024 * 1024
WEIGHTS = {
    "leastrequested.weight": 1,
    "mostrequested.weight": 0,
    "balancedresource.weight": 1,
    "nodeaffinity.weight": 2,
    "tainttoleration.weight": 3,
}
UNSCORED = frozenset({"podaffinity.weight", "imagelocality.weight", "podtopologyspread.weight"})


@dataclass(frozen=True, slots=True)
class NodeOrderArgs:
    """Validated weights."""

    least_requested: int = 1
    most_requested: int = 0
    balanced_resource: int = 1
    node_affinity: int = 2
    taint_toleration: int = 3


def parse_args(raw: Mapping[str, Any]) -> NodeOrderArgs:
    """The weights; a non-integer or negative weight stops startup.

    Raises:
        ConfigError: names the key and the value.
    """
    values = dict(WEIGHTS)
    for key in (*WEIGHTS, *sorted(UNSCORED)):
        if key not in raw:
            continue
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{NAME}.{key}", value, "must be a non-negative integer")
        if key in values:
            values[key] = value
    return NodeOrderArgs(*(values[key] for key in WEIGHTS))


def _requested(task: TaskInfo, node: NodeInfo) -> tuple[float, float]:
    cpu = task.resreq.milli_cpu or DEFAULT_MILLI_CPU
    memory = task.resreq.memory or DEFAULT_MEMORY
    return node.used.milli_cpu + cpu, node.used.memory + memory


def least_requested(task: TaskInfo, node: NodeInfo) -> int:
    """Kubernetes' LeastAllocated score (CPU and memory weighted equally)."""
    cpu, memory = _requested(task, node)
    alloc = node.allocatable
    scores = [_least(cpu, alloc.milli_cpu), _least(memory, alloc.memory)]
    return sum(scores) // len(scores)


def _least(requested: float, capacity: float) -> int:
    if capacity <= 0 or requested > capacity:
        return 0
    return int((capacity - requested) * MAX_NODE_SCORE // capacity)


def most_requested(task: TaskInfo, node: NodeInfo) -> int:
    """Kubernetes' MostAllocated score (CPU and memory weighted equally)."""
    cpu, memory = _requested(task, node)
    alloc = node.allocatable
    scores = [_most(cpu, alloc.milli_cpu), _most(memory, alloc.memory)]
    return sum(scores) // len(scores)


def _most(requested: float, capacity: float) -> int:
    if capacity <= 0:
        return 0
    return int(min(requested, capacity) * MAX_NODE_SCORE // capacity)


def balanced_resource(task: TaskInfo, node: NodeInfo) -> int:
    """Kubernetes' BalancedAllocation score over CPU and memory."""
    cpu, memory = _requested(task, node)
    alloc = node.allocatable
    fractions = [
        min(cpu / alloc.milli_cpu, 1.0) if alloc.milli_cpu > 0 else 1.0,
        min(memory / alloc.memory, 1.0) if alloc.memory > 0 else 1.0,
    ]
    mean = sum(fractions) / len(fractions)
    std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    return int((1 - std) * MAX_NODE_SCORE)


def node_affinity(task: TaskInfo, node: NodeInfo) -> int:
    """The summed weights of the preferred node-affinity terms ``node`` matches."""
    affinity = task.affinity or {}
    preferred = (affinity.get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    ) or []
    total = 0
    for term in preferred:
        weight = term.get("weight") or 0
        if weight and match_term(term.get("preference") or {}, node):
            total += int(weight)
    return total


def intolerable(task: TaskInfo, node: NodeInfo) -> int:
    """The node's PreferNoSchedule taints none of the task's tolerations tolerates."""
    return sum(
        1
        for taint in node.taints
        if taint.get("effect") == "PreferNoSchedule"
        and not any(tolerates(t, taint) for t in task.tolerations)
    )


def _preferred(task: TaskInfo) -> Any:
    affinity = task.affinity or {}
    return (affinity.get("nodeAffinity") or {}).get(
        "preferredDuringSchedulingIgnoredDuringExecution"
    )


def shape(task: TaskInfo) -> tuple[float, float, str, str]:
    """What the score reads of a task: its request, preferred node-affinity terms and
    tolerations (pod affinity is not scored, so it is not part of the shape)."""
    preferred = _preferred(task)
    return (
        task.resreq.milli_cpu,
        task.resreq.memory,
        repr(preferred) if preferred else "",
        repr(task.tolerations) if task.tolerations else "",
    )


def _resource_scores(task: TaskInfo, node: NodeInfo, least_w: int, most_w: int, bal_w: int) -> int:
    """``least × least_w + most × most_w + balanced × bal_w`` in one pass (same arithmetic
    as :func:`least_requested`, :func:`most_requested`, :func:`balanced_resource`)."""
    cpu, memory = _requested(task, node)
    alloc = node.allocatable
    return _resource_total(cpu, memory, alloc.milli_cpu, alloc.memory, least_w, most_w, bal_w)


def _resource_total(
    cpu: float, memory: float, a_cpu: float, a_mem: float, least_w: int, most_w: int, bal_w: int
) -> int:
    total = 0
    if least_w:
        total += (_least(cpu, a_cpu) + _least(memory, a_mem)) // 2 * least_w
    if most_w:
        total += (_most(cpu, a_cpu) + _most(memory, a_mem)) // 2 * most_w
    if bal_w:
        f_cpu = min(cpu / a_cpu, 1.0) if a_cpu > 0 else 1.0
        f_mem = min(memory / a_mem, 1.0) if a_mem > 0 else 1.0
        std = abs(f_cpu - f_mem) / 2  # the standard deviation of two values
        total += int((1 - std) * MAX_NODE_SCORE) * bal_w
    return total
