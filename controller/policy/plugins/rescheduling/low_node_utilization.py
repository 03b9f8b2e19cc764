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
  candidate pods go by priority ascending, then Kubernetes QoS (BestEffort, then
  Burstable, then Guaranteed: upstream's ``sortPods`` and the descheduler's
  ``SortPodsBasedOnPriorityLowToHigh``), then namespace, name, uid. Before each pod the
  round goes on only while the
  node is still at or above a target threshold in some resource and no headroom resource
  is used up (``<= 0``); each victim's usage is taken off the node and off the headroom.

Each victim's evidence: ``node``, ``node_usage`` (percent, before this victim),
``node_samples``, ``thresholds``, ``target_thresholds``, ``low_nodes`` (the first
:data:`LOW_NODES_SHOWN` names) and ``low_node_count``, ``headroom`` (milli-cores, bytes,
before this victim), ``rank`` (position in the node's victim order), ``victim_usage`` and
``usage_source``, and ``why``: the same in one sentence, which ``tide audit why`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple

from controller.policy.plugins.rescheduling.args import LnuParams
from projections.model import TaskInfo
from streams.payloads import EvidenceDict

STRATEGY = "lowNodeUtilization"
NO_LOW = "no node is below thresholds"
ALL_LOW = "every node is below thresholds"
NO_HIGH = "no node is above targetThresholds"
GIB = 1024**3
#: the most low-node names written into one victim's evidence (the count is always there)
LOW_NODES_SHOWN = 16
#: a victim's ``why`` sentence: node, cpu %, memory %, the round's target text, headroom
#: (cores, GiB), rank, the victim's usage (cores, GiB) and its source. One ``%`` format is
#: one C call where the f-string it replaced made one ``format`` call per field; ``%.Nf``
#: and ``{:.Nf}`` both print through ``PyOS_double_to_string`` (``'f'``, N digits), so the
#: text is the same to the byte (tests/controller/policy/plugins/test_rescheduling_evidence.py).
WHY = (
    "%s averages cpu %.0f%%/mem %.0f%%%s%.1f cores/%.1fGi headroom; rank %d, "
    "uses %.1f cores/%.1fGi (%s)"
)


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


class PodLoad(NamedTuple):
    """A candidate's usage (milli-cores, bytes) and its ``source`` (metrics / request).

    A named tuple: a ``pod_load`` callback may return the plain ``(cpu, memory, source)``
    (built once per victim, a tuple costs a fraction of a class instance).
    """

    cpu: float
    memory: float
    source: str


@dataclass(slots=True)
class Choice:
    """One victim and the evidence of its choice."""

    task: TaskInfo
    evidence: EvidenceDict


@dataclass(slots=True)
class Round:
    """A strategy round's outcome: the victims, or why there are none (``skipped``)."""

    victims: list[Choice] = field(default_factory=list)
    skipped: str = ""
    low: list[str] = field(default_factory=list)
    high: list[str] = field(default_factory=list)


#: eviction rank of each Kubernetes QoS class: the least protected first
QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def qos_rank(task: TaskInfo) -> int:
    """0 BestEffort, 1 Burstable, 2 Guaranteed (the pod's Kubernetes QoS class); a task
    without a known class ranks as BestEffort when its request is empty, else Burstable."""
    rank = QOS_RANK.get(task.k8s_qos)
    if rank is None:
        return 0 if task.best_effort else 1
    return rank


def victim_order(task: TaskInfo) -> tuple[int, int, str, str, str]:
    """Lowest priority first, then BestEffort < Burstable < Guaranteed, then key."""
    return (task.pod_priority, qos_rank(task), task.namespace, task.name, task.uid)


_QOS_OF = itemgetter(1)
_TASK_OF = itemgetter(6)


def in_victim_order(tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
    """``tasks`` sorted by :func:`victim_order` (every task of every hot node is sorted
    here): one pass builds ``(priority, QoS rank, namespace, name, uid, position, task)``
    per task and :func:`sort_keyed` orders them."""
    rank = QOS_RANK.get
    return sort_keyed(
        [
            (
                task.pod_priority,
                rank(task.k8s_qos, -1),
                task.namespace,
                task.name,
                task.uid,
                i,
                task,
            )
            for i, task in enumerate(tasks)
        ]
    )


#: a task with its victim-order key: priority, QoS rank (-1: no known class), namespace,
#: name, uid, position
Keyed = tuple[int, int, str, str, str, int, TaskInfo]


def sort_keyed(keyed: list[Keyed]) -> list[TaskInfo]:
    """The tasks of ``keyed`` in :func:`victim_order`: one ``list.sort``, tuple against
    tuple in C. ``position`` (unique) makes ties keep the given order, as the stable sort
    by key does, and is never passed, so the tasks themselves are never compared. A task
    without a known QoS class (rank -1) is ranked by :func:`qos_rank` (its request), the
    rare case. Sorts ``keyed`` in place."""
    if -1 in map(_QOS_OF, keyed):
        keyed[:] = [(row[0], qos_rank(row[6]), *row[2:]) for row in keyed]
    keyed.sort()
    return list(map(_TASK_OF, keyed))


def classify(
    loads: Iterable[NodeLoad], params: LnuParams
) -> tuple[list[NodeLoad], list[NodeLoad], int]:
    """``(low, high, taking part)``: low has every resource below ``thresholds``; high has
    some resource above ``targetThresholds`` (strict comparisons, as upstream)."""
    low: list[NodeLoad] = []
    high: list[NodeLoad] = []
    count = 0
    lo_cpu, lo_mem = params.thresholds["cpu"], params.thresholds["memory"]
    hi_cpu, hi_mem = params.target_thresholds["cpu"], params.target_thresholds["memory"]
    for load in loads:  # NodeLoad.percent, inlined: one pass over every node
        count += 1
        a_cpu, a_mem = load.alloc_cpu, load.alloc_memory
        p_cpu = 100.0 * load.cpu / a_cpu if a_cpu > 0 else 0.0
        p_mem = 100.0 * load.memory / a_mem if a_mem > 0 else 0.0
        if p_cpu < lo_cpu and p_mem < lo_mem:
            low.append(load)
        elif p_cpu > hi_cpu or p_mem > hi_mem:
            high.append(load)
    return low, high, count


def select(
    loads: Sequence[NodeLoad],
    params: LnuParams,
    *,
    candidates: Callable[[str], Iterable[TaskInfo]],
    pod_load: Callable[[TaskInfo], tuple[float, float, str]],
    may_evict: Callable[[TaskInfo], bool],
    shared: Mapping[str, Any] | None = None,
    ordered: bool = False,
    taking_part: int | None = None,
) -> Round:
    """One ``lowNodeUtilization`` round over ``loads`` (see the module docstring).

    Args:
        loads: the nodes taking part, with their averaged usage.
        params: the strategy's thresholds.
        candidates: a node's Running pods that shuffle may evict (any order, or in
            :func:`in_victim_order`'s order when ``ordered``).
        pod_load: a candidate's usage: a :class:`PodLoad` or the plain tuple.
        may_evict: asked once per candidate in victim order just before it would be chosen
            (e.g. a gang minimum that earlier victims have used up); False skips it.
        shared: further evidence, the same for every victim of the round.
        ordered: ``candidates`` gives the tasks in :func:`in_victim_order`'s order.
        taking_part: how many nodes take part, when ``loads`` holds only the low and the
            high ones (the others change nothing but the "every node is low" test).

    Every victim's evidence is a dict of its own; the values that are the same for the
    whole round (thresholds, low nodes, ``shared``) are shared, read-only objects.
    """
    low, high, count = classify(loads, params)
    if taking_part is not None:
        count = taking_part
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
    t_cpu, t_mem = target["cpu"], target["memory"]
    room_cpu = sum(t_cpu * n.alloc_cpu / 100.0 - n.cpu for n in low)
    room_mem = sum(t_mem * n.alloc_memory / 100.0 - n.memory for n in low)
    common: EvidenceDict = {
        "strategy": STRATEGY,
        "thresholds": dict(params.thresholds),
        "target_thresholds": dict(target),
        "low_nodes": result.low[:LOW_NODES_SHOWN],
        "low_node_count": len(low),
        **(shared or {}),
    }
    # the part of every victim's sentence that is the same for the whole round
    target_text = f" > target {t_cpu:g}%/{t_mem:g}%; {len(low)} low node(s) have "
    high.sort(key=_hottest_first)
    victims = result.victims
    for load in high:
        a_cpu, a_mem = load.alloc_cpu, load.alloc_memory
        name, samples = load.name, load.samples
        tasks: list[TaskInfo] | None = None  # the node's candidates in victim order
        rank = 0
        while True:
            p_cpu = 100.0 * load.cpu / a_cpu if a_cpu > 0 else 0.0
            p_mem = 100.0 * load.memory / a_mem if a_mem > 0 else 0.0
            # go on while the node is at or above a target and every headroom is left;
            # upstream (isContinueEvictPods) stops only on a headroom of exactly zero
            if not (p_cpu >= t_cpu or p_mem >= t_mem) or room_cpu <= 0 or room_mem <= 0:
                break
            if tasks is None:
                found = candidates(load.name)
                tasks = list(found) if ordered else in_victim_order(found)
            if rank >= len(tasks):
                break
            task = tasks[rank]
            rank += 1
            if not may_evict(task):
                continue
            u_cpu, u_mem, source = pod_load(task)
            # a copy of the round's part, then the victim's keys in their fixed order (the
            # order of the dict display this replaced: node ... why); see WHY for the text
            evidence = common.copy()
            evidence["node"] = name
            evidence["node_usage"] = {"cpu": round(p_cpu, 2), "memory": round(p_mem, 2)}
            evidence["node_samples"] = samples
            evidence["headroom"] = {"cpu": int(room_cpu), "memory": int(room_mem)}
            evidence["rank"] = rank
            evidence["victim_usage"] = {"cpu": int(u_cpu), "memory": int(u_mem)}
            evidence["usage_source"] = source
            evidence["why"] = WHY % (
                name,
                p_cpu,
                p_mem,
                target_text,
                room_cpu / 1000,
                room_mem / GIB,
                rank,
                u_cpu / 1000,
                u_mem / GIB,
                source,
            )
            victims.append(Choice(task, evidence))
            load.cpu -= u_cpu
            load.memory -= u_mem
            room_cpu -= u_cpu
            room_mem -= u_mem
    return result


def _hottest_first(load: NodeLoad) -> tuple[float, str]:
    """Sort key: ``cpu% + memory%`` descending, then name."""
    a_cpu, a_mem = load.alloc_cpu, load.alloc_memory
    p_cpu = 100.0 * load.cpu / a_cpu if a_cpu > 0 else 0.0
    p_mem = 100.0 * load.memory / a_mem if a_mem > 0 else 0.0
    return -(p_cpu + p_mem), load.name
