"""Victims of pressure eviction: who may go, in which order, and how many.

Upstream the koordlet sorts BE victims by priority, then usage (koordinator-sh/koordinator
pkg/koordlet/qosmanager/plugins/cpuevict/cpu_evict.go, ``getBEPodEvictInfoAndSort``, and
memoryevict/memory_evict.go), with no age or OOM-count key; the order below is tide's design (beyond
upstream koordlet).

Candidates are the pods on the node that are running (or bound and starting), not
already terminating, not evicted before, and neither DaemonSet nor mirror pods (the
descheduler's DefaultEvictor rule, ``TaskInfo.evictable``; such pods are named in the
round's evidence as ``protected``). Their QoS class is ``TaskInfo.qos``: the
``koordinator.sh/qosClass`` label, else ``BE`` for a Kubernetes BestEffort pod, else
``LS``. CPU, memory and predictive eviction take only ``BE`` pods; faulty-pod eviction
takes ``BE`` and ``LS``; ``LSR``, ``LSE`` and ``SYSTEM`` are never evicted by pressure.

Order (tide's rule list): pod priority (``spec.priority``, 0 when unset) ascending,
then usage of the pressured resource descending (latest ``metrics.pod``; none = 0), then
running time ascending (newest ``status.startTime`` first, creation time when the pod has
not started; a pod with neither counts as the newest), then OOM kill count descending,
then namespace and name. Usage comes before the OOM count, so of two pods of equal
priority the one using more goes first even when the other was OOM-killed more often.

Victims are taken in that order until the freed amount reaches the target. Pods already
terminating on the node count as freed before any victim is taken, so a round does not
over-evict while earlier victims drain.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from controller.policy.pressure.inputs import started, usage_value
from projections.model import NodeInfo, TaskInfo, TaskStatus
from projections.pressure import PressureState
from projections.world import PolicyInputs

PRESSURE_QOS = frozenset({"BE"})
FAULTY_QOS = frozenset({"BE", "LS"})
_LIVE = frozenset({TaskStatus.RUNNING, TaskStatus.BOUND})
_NEWEST = float("inf")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One evictable pod with the numbers its rank depends on."""

    task: TaskInfo
    usage: float  # of the pressured resource: milli-cores or bytes
    started: datetime | None
    oom_kills: int

    @property
    def key(self) -> str:
        return self.task.key

    def rank(self) -> tuple[int, float, float, int, str, str]:
        since = self.started.timestamp() if self.started is not None else _NEWEST
        return (
            self.task.pod_priority,
            -self.usage,
            -since,
            -self.oom_kills,
            self.task.namespace,
            self.task.name,
        )


def evictable(task: TaskInfo, node: str, state: PressureState) -> bool:
    """Running or starting on ``node``, not terminating, not evicted before, not a system pod."""
    return (
        task.evictable
        and task.node_name == node
        and task.status in _LIVE
        and not task.deleting
        and not (task.uid and state.is_evicted(task.uid))
    )


def terminating(task: TaskInfo) -> bool:
    return task.status == TaskStatus.RELEASING or task.deleting


def terminating_usage(
    world: PolicyInputs, node: NodeInfo, resource: str, also: Iterable[TaskInfo] = ()
) -> float:
    """Usage of ``resource`` by pods already leaving ``node`` (plus ``also``, just chosen)."""
    usage = world.usage
    keys = {key for key, task in node.tasks.items() if terminating(task)}
    keys.update(task.key for task in also)
    return sum(usage_value(usage, key, resource) for key in sorted(keys))


def ranked(
    world: PolicyInputs,
    node: NodeInfo,
    resource: str,
    state: PressureState,
    *,
    qos: frozenset[str] = PRESSURE_QOS,
    exclude: set[str] | frozenset[str] = frozenset(),
) -> list[Candidate]:
    """The candidates on ``node`` in eviction order (see the module docstring)."""
    usage, oom = world.usage, world.oom
    found = [
        Candidate(task, usage_value(usage, key, resource), started(task), oom.kills(key))
        for key, task in node.tasks.items()
        if task.qos in qos and key not in exclude and evictable(task, node.name, state)
    ]
    found.sort(key=Candidate.rank)
    return found


def protected(node: NodeInfo, qos: frozenset[str] = PRESSURE_QOS) -> list[str]:
    """Keys of the pods of ``qos`` on ``node`` that no policy may evict (sorted)."""
    return sorted(key for key, task in node.tasks.items() if task.qos in qos and not task.evictable)


def take(
    candidates: Iterable[Candidate], *, need: float, freed: float, limit: int
) -> tuple[list[Candidate], float]:
    """Victims in order until ``freed`` reaches ``need`` or ``limit`` victims are taken."""
    victims: list[Candidate] = []
    for candidate in candidates:
        if freed >= need or len(victims) >= limit:
            break
        victims.append(candidate)
        freed += candidate.usage
    return victims, freed
