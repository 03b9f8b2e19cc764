"""What pressure eviction reads from the World, and a node's numbers at one check.

The World (``projections.world``) bundles the cluster projection and named extras; the
pressure policies need three extras: ``usage`` (:class:`~projections.usage.UsageState`),
``oom`` (:class:`~projections.oom.OOMState`) and ``pressure``
(:class:`~projections.pressure.PressureState`). A World without them is a wiring error
and fails loudly rather than deciding on missing state.

Pressure of a node for a resource = 100 × usage ÷ capacity, where capacity is the node's
``status.capacity`` (its allocatable when no capacity is reported). OOM risk = 100 × memory
usage ÷ allocatable memory (capacity when no allocatable is reported).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from projections.cluster import ClusterState
from projections.model import NodeInfo, TaskInfo
from projections.oom import OOMState
from projections.pressure import PressureState
from projections.usage import Series, UsageState

RESOURCES = ("memory", "cpu")


class WorldLike(Protocol):
    """The part of ``projections.world.World`` pressure eviction uses."""

    @property
    def cluster(self) -> ClusterState: ...

    @property
    def extra(self) -> Mapping[str, object]: ...


class MissingProjection(RuntimeError):
    """The World lacks a projection pressure eviction needs (a wiring error)."""


def _extra(world: WorldLike, name: str, kind: type[object]) -> object:
    found = world.extra.get(name)
    if not isinstance(found, kind):
        raise MissingProjection(
            f"the World has no {name!r} projection ({kind.__module__}.{kind.__name__}); "
            "add it to the World's extras"
        )
    return found


def usage_of(world: WorldLike) -> UsageState:
    found = _extra(world, "usage", UsageState)
    assert isinstance(found, UsageState)
    return found


def oom_of(world: WorldLike) -> OOMState:
    found = _extra(world, "oom", OOMState)
    assert isinstance(found, OOMState)
    return found


def pressure_of(world: WorldLike) -> PressureState:
    found = _extra(world, "pressure", PressureState)
    assert isinstance(found, PressureState)
    return found


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
        cap = self.capacity(resource)
        return 100.0 * self.used(resource) / cap if cap > 0 else 0.0

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
