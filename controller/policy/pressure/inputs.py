"""What pressure eviction reads from the World, and a node's numbers at one check.

Pressure eviction reads the policy inputs (:class:`projections.world.PolicyInputs`): the
cluster, ``usage`` (:class:`~projections.usage.UsageState`), ``oom``
(:class:`~projections.oom.OOMState`) and ``pressure``
(:class:`~projections.pressure.PressureState`), all typed fields of the World.

Pressure of a node for a resource = 100 × usage ÷ capacity, where capacity is the node's
``status.capacity`` (its allocatable when no capacity is reported). OOM risk = 100 × memory
usage ÷ allocatable memory (capacity when no allocatable is reported).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from projections.model import NodeInfo, TaskInfo
from projections.usage import Series, UsageState

RESOURCES = ("memory", "cpu")


@dataclass(slots=True)
class NodeNumbers:
    """Capacity and the latest usage of one node (cpu in milli, memory in bytes)."""

    name: str
    cap_cpu: float
    cap_memory: float
    alloc_memory: float
    cpu: float
    memory: float

    def capacity(self, resource: str) -> float:
        return self.cap_cpu if resource == "cpu" else self.cap_memory

    def used(self, resource: str) -> float:
        return self.cpu if resource == "cpu" else self.memory

    def pressure(self, resource: str) -> float:
        if resource == "cpu":
            return 100.0 * self.cpu / self.cap_cpu if self.cap_cpu > 0 else 0.0
        return 100.0 * self.memory / self.cap_memory if self.cap_memory > 0 else 0.0

    @property
    def oom_risk(self) -> float:
        return 100.0 * self.memory / self.alloc_memory if self.alloc_memory > 0 else 0.0


def node_numbers(node: NodeInfo, series: Series) -> NodeNumbers | None:
    """The node's numbers from its latest sample; None without a sample or capacity."""
    if not series.times:
        return None
    cap_cpu = node.capacity.milli_cpu or node.allocatable.milli_cpu
    cap_mem = node.capacity.memory or node.allocatable.memory
    alloc_mem = node.allocatable.memory or cap_mem
    if cap_cpu <= 0 or cap_mem <= 0:
        return None
    return NodeNumbers(node.name, cap_cpu, cap_mem, alloc_mem, series.cpu[-1], series.memory[-1])


def usage_value(usage: UsageState, key: str, resource: str) -> float:
    """A pod's latest usage of ``resource`` (0 without a sample)."""
    return usage.pod_cpu(key) if resource == "cpu" else usage.pod_memory(key)


def started(task: TaskInfo) -> datetime | None:
    """When the pod started running (``status.startTime``, else its creation)."""
    return task.start_time or task.creation
