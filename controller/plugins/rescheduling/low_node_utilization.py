"""The ``lowNodeUtilization`` strategy: move work from hot nodes towards cold ones.

Why a module of its own: the arithmetic is the plugin's whole decision, and it is pure — it
reads measured node loads and the candidate pods, never the session — so the scenario
tables and the benchmark drive it directly. Upstream: volcano-sh/volcano
pkg/scheduler/plugins/rescheduling/low_node_utilization.go (``victimsFnForLnu``,
``groupNodesByUtilization``) and node_utilization_util.go (``evictPodsFromSourceNodes``,
``sortNodes``, ``sortPods``, ``evict``, ``isContinueEvictPods``).

The rule, as tide applies it:

* **Utilisation** of a node is its averaged usage (see :class:`NodeLoad`) as a percentage
  of its allocatable, per resource (``cpu``, ``memory``).
* **Low** nodes have *every* resource strictly below ``thresholds``; **high** nodes are the
  other nodes with *some* resource strictly above ``targetThresholds``. Only the nodes
  handed in take part (the plugin leaves out unschedulable, NotReady and stale ones).
* **No eviction** when there is no low node, when every node is low, or when there is no
  high node (:data:`NO_LOW`, :data:`ALL_LOW`, :data:`NO_HIGH`).
* **Headroom** of the low nodes, per resource: ``Σ targetThreshold% × allocatable − usage``.
* High nodes are visited by ``cpu% + memory%`` descending, then by name. On a node, the
  candidate pods go by priority ascending, then Kubernetes QoS (BestEffort before the
  others), then namespace, name, uid. Before each pod the round goes on only while the
  node is still at or above a target threshold in some resource and no headroom resource
  is used up (``<= 0``); each victim's usage is taken off the node and off the headroom.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.plugins.rescheduling.args import RESOURCES, LnuParams
from projections.model import TaskInfo

STRATEGY = "lowNodeUtilization"
NO_LOW = "no node is below thresholds"
ALL_LOW = "every node is below thresholds"
NO_HIGH = "no node is above targetThresholds"
#: the most low-node names written into one victim's evidence (the count is always there)
LOW_NODES_SHOWN = 16


@dataclass(slots=True)
class NodeLoad:
    """One node's measured load: averaged usage against allocatable.

    ``cpu`` is in milli-cores, ``memory`` in bytes; ``samples`` counts the node samples the
    average is made of.
    """

    name: str
    alloc_cpu: float
    alloc_memory: float
    cpu: float
    memory: float
    samples: int = 1

    def percent(self) -> dict[str, float]:
        """Usage per resource in percent of allocatable (0 when nothing is allocatable)."""
        return {
            "cpu": 100.0 * self.cpu / self.alloc_cpu if self.alloc_cpu > 0 else 0.0,
            "memory": 100.0 * self.memory / self.alloc_memory if self.alloc_memory > 0 else 0.0,
        }


@dataclass(frozen=True, slots=True)
class PodLoad:
    """A candidate's usage (milli-cores, bytes) and its ``source`` (metrics / request)."""

    cpu: float
    memory: float
    source: str


@dataclass(slots=True)
class Choice:
    """One victim and the evidence of its choice."""

    task: TaskInfo
    evidence: dict[str, Any]


@dataclass(slots=True)
class Round:
    """A strategy round's outcome: the victims, or why there are none (``skipped``)."""

    victims: list[Choice] = field(default_factory=list)
    skipped: str = ""
    low: list[str] = field(default_factory=list)
    high: list[str] = field(default_factory=list)


def victim_order(task: TaskInfo) -> tuple[int, int, str, str, str]:
    """Lowest priority first, then BestEffort before Burstable/Guaranteed, then key."""
    return (task.pod_priority, 0 if task.best_effort else 1, task.namespace, task.name, task.uid)


def classify(
    loads: Iterable[NodeLoad], params: LnuParams
) -> tuple[list[NodeLoad], list[NodeLoad], int]:
    """``(low, high, taking part)``: low has every resource below ``thresholds``; high has
    some resource above ``targetThresholds`` (strict comparisons, as upstream)."""
    low: list[NodeLoad] = []
    high: list[NodeLoad] = []
    count = 0
    lo, hi = params.thresholds, params.target_thresholds
    for load in loads:
        count += 1
        pct = load.percent()
        if all(pct[r] < lo[r] for r in RESOURCES):
            low.append(load)
        elif any(pct[r] > hi[r] for r in RESOURCES):
            high.append(load)
    return low, high, count


def _round2(value: float) -> float:
    return round(value, 2)


def select(
    loads: Sequence[NodeLoad],
    params: LnuParams,
    *,
    candidates: Callable[[str], Iterable[TaskInfo]],
    pod_load: Callable[[TaskInfo], PodLoad],
    may_evict: Callable[[TaskInfo], bool],
) -> Round:
    """One ``lowNodeUtilization`` round over ``loads`` (see the module docstring).

    Args:
        loads: the nodes taking part, with their averaged usage.
        params: the strategy's thresholds.
        candidates: a node's Running pods that shuffle may evict (any order).
        pod_load: a candidate's usage.
        may_evict: asked once per candidate in victim order just before it would be chosen
            (e.g. a gang minimum that earlier victims have used up); False skips it.
    """
    low, high, count = classify(loads, params)
    result = Round(low=sorted(n.name for n in low), high=sorted(n.name for n in high))
    if not low:
        result.skipped = NO_LOW
        return result
    if len(low) == count:
        result.skipped = ALL_LOW
        return result
    if not high:
        result.skipped = NO_HIGH
        return result
    target = params.target_thresholds
    headroom = {
        "cpu": sum(target["cpu"] * n.alloc_cpu / 100.0 - n.cpu for n in low),
        "memory": sum(target["memory"] * n.alloc_memory / 100.0 - n.memory for n in low),
    }
    shown = result.low[:LOW_NODES_SHOWN]
    high.sort(key=lambda n: (-sum(n.percent().values()), n.name))
    for load in high:
        if not _go_on(load.percent(), target, headroom):
            continue
        ordered = sorted(candidates(load.name), key=victim_order)
        for rank, task in enumerate(ordered, start=1):
            pct = load.percent()
            if not _go_on(pct, target, headroom):
                break
            if not may_evict(task):
                continue
            usage = pod_load(task)
            evidence: dict[str, Any] = {
                "strategy": STRATEGY,
                "node": load.name,
                "node_usage": {r: _round2(pct[r]) for r in RESOURCES},
                "node_samples": load.samples,
                "thresholds": dict(params.thresholds),
                "target_thresholds": dict(target),
                "low_nodes": shown,
                "low_node_count": len(low),
                "headroom": {r: _round2(headroom[r]) for r in RESOURCES},
                "rank": rank,
                "victim_usage": {"cpu": _round2(usage.cpu), "memory": _round2(usage.memory)},
                "usage_source": usage.source,
            }
            evidence["why"] = sentence(load.name, pct, params, len(low), headroom, rank, usage)
            result.victims.append(Choice(task, evidence))
            load.cpu -= usage.cpu
            load.memory -= usage.memory
            headroom["cpu"] -= usage.cpu
            headroom["memory"] -= usage.memory
    return result


def _go_on(pct: dict[str, float], target: Any, headroom: dict[str, float]) -> bool:
    """Still at or above a target in some resource, and headroom left in every resource.

    Upstream (``isContinueEvictPods``) stops only on a headroom of exactly zero, so a
    negative headroom keeps evicting; tide stops at ``<= 0``.
    """
    if not any(pct[r] >= target[r] for r in RESOURCES):
        return False
    return all(headroom[r] > 0 for r in RESOURCES)


def _cores(milli: float) -> str:
    return f"{milli / 1000:.1f} cores"


def _gib(memory: float) -> str:
    return f"{memory / 1024**3:.1f}Gi"


def sentence(
    node: str,
    pct: dict[str, float],
    params: LnuParams,
    low: int,
    headroom: dict[str, float],
    rank: int,
    usage: PodLoad,
) -> str:
    """The choice in one line (``tide audit why`` prints it as ``evidence.why``)."""
    target = params.target_thresholds
    return (
        f"{node} averages cpu {pct['cpu']:.0f}%/mem {pct['memory']:.0f}% > target "
        f"{target['cpu']:g}%/{target['memory']:g}%; {low} low node(s) have "
        f"{_cores(headroom['cpu'])}/{_gib(headroom['memory'])} headroom; rank {rank}, uses "
        f"{_cores(usage.cpu)}/{_gib(usage.memory)} ({usage.source})"
    )
