"""The ``nodeorder`` plugin's scores: Kubernetes' node scores and its non-zero request
defaults (kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources and friends).

Each score is 0..100 (:data:`MAX_NODE_SCORE`); the plugin sums them times their weights:

* **leastrequested**: per resource ``(allocatable − requested) × 100 / allocatable``
  (0 when the request exceeds allocatable), CPU and memory weighted equally;
* **mostrequested**: ``requested × 100 / allocatable`` (capped at allocatable), equally;
* **balancedresource**: ``(1 − std(cpu fraction, memory fraction)) × 100``, fractions
  capped at 1;
* **nodeaffinity**: the sum of the weights of the task's preferred node-affinity terms
  the node matches (not normalised, as upstream's per-node function);
* **tainttoleration**: the node's PreferNoSchedule taints the task does not tolerate
  (:func:`intolerable`); the plugin reverse-normalises the count over the session's
  nodes (:mod:`controller.policy.plugins.nodeorder.plugin`).

``requested`` is the node's requested resources plus the task's request, a zero CPU or
memory request counting as 100m / 200Mi (Kubernetes' non-zero defaults); integer
arithmetic as Kubernetes' ``int64``. :func:`resource_column` is the resource part for
many nodes at once, expression for expression. The plugin
(:mod:`controller.policy.plugins.nodeorder.plugin`) and its upper bound
(:mod:`controller.policy.plugins.nodeorder.bound`) both read this module, so neither
imports the other.
"""

from __future__ import annotations

import math
from typing import Any

from controller.policy.framework.matching import match_term, tolerates
from projections.model import NodeInfo, TaskInfo

MAX_NODE_SCORE = 100
DEFAULT_MILLI_CPU = 100.0
DEFAULT_MEMORY = 200.0 * 1024 * 1024


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


def resource_column(
    cpu: float,
    memory: float,
    used: tuple[list[float], list[float]],
    alloc: tuple[list[float], list[float]],
    *,
    weights: tuple[int, int, int],
) -> list[int]:
    """:func:`_resource_total` for many nodes at once, in one list pass.

    ``used`` and ``alloc`` are (cpu, memory) columns of the nodes, ``cpu`` and ``memory``
    the task's request (non-zero defaults applied), ``weights`` those of leastrequested,
    mostrequested and balancedresource. The arithmetic is :func:`_least`, :func:`_most`
    and the balanced part of :func:`_resource_total`, expression for expression (``min(x,
    1.0)`` written as a conditional, which returns the same float).
    """
    lw, mw, bw = weights
    top = MAX_NODE_SCORE
    return [
        (
            (
                (0 if ac <= 0 or rc > ac else int((ac - rc) * top // ac))
                + (0 if am <= 0 or rm > am else int((am - rm) * top // am))
            )
            // 2
            * lw
            if lw
            else 0
        )
        + (
            (
                (0 if ac <= 0 else int((rc if rc < ac else ac) * top // ac))
                + (0 if am <= 0 else int((rm if rm < am else am) * top // am))
            )
            // 2
            * mw
            if mw
            else 0
        )
        + (
            int(
                (
                    1
                    - abs(
                        ((fc if (fc := rc / ac) <= 1.0 else 1.0) if ac > 0 else 1.0)
                        - ((fm if (fm := rm / am) <= 1.0 else 1.0) if am > 0 else 1.0)
                    )
                    / 2
                )
                * top
            )
            * bw
            if bw
            else 0
        )
        for rc, rm, ac, am in zip(
            [u + cpu for u in used[0]], [u + memory for u in used[1]], *alloc, strict=True
        )
    ]
