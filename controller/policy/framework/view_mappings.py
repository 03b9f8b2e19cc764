"""The mappings a session reads the cluster through: ready nodes, and jobs and tasks
shadowed by the session's overlay.

:class:`~controller.policy.framework.view.ClusterView` exposes one of each (``nodes``,
``revocable_nodes``, ``jobs``, ``tasks``). Iteration is in sorted key order (computed
lazily, on first iteration) so that policy code never depends on dict insertion order;
look-ups are O(1) and read the overlay first, then the projection.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, Protocol, TypeVar

from projections.model import JobInfo, NodeInfo, QueueInfo, TaskInfo

V = TypeVar("V", JobInfo, TaskInfo)


class ClusterLike(Protocol):
    """The part of ``projections.cluster.ClusterState`` a session reads."""

    @property
    def nodes(self) -> Mapping[str, NodeInfo]: ...

    @property
    def tasks(self) -> Mapping[str, TaskInfo]: ...

    @property
    def jobs(self) -> Mapping[str, JobInfo]: ...

    @property
    def queues(self) -> Mapping[str, QueueInfo]: ...


class NodesView(Mapping[str, NodeInfo]):
    """Ready nodes (or a subset of them) by name, in name order."""

    __slots__ = ("_list", "_names", "_pos")

    def __init__(self, names: list[str], pos: dict[str, int], backing: list[NodeInfo]) -> None:
        self._names = names
        self._pos = pos
        self._list = backing

    def __getitem__(self, name: str) -> NodeInfo:
        return self._list[self._pos[name]]

    def position(self, name: str) -> int:
        """The node's index in the session's node order (``ClusterView.node_list``)."""
        return self._pos[name]

    def __contains__(self, name: object) -> bool:
        return name in self._pos

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class OverlayView(Mapping[str, V], Generic[V]):
    """A base mapping shadowed by an overlay, with a membership filter."""

    __slots__ = ("_base", "_keys", "_over")

    def __init__(self, base: Mapping[str, V], over: dict[str, V]) -> None:
        self._base: Mapping[str, V] = base
        self._over: dict[str, V] = over
        self._keys: list[str] | None = None

    def _admit(self, value: V) -> bool:
        return True

    def lookup(self, key: str) -> V | None:
        """The current value for ``key``, or None (the fast path of ``get``)."""
        value = self._over.get(key)
        if value is None:
            value = self._base.get(key)
        if value is None or not self._admit(value):
            return None
        return value

    def __getitem__(self, key: str) -> V:
        value = self.lookup(key)
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        """``Mapping.get`` without the ``__getitem__``/``KeyError`` round trip."""
        value = self.lookup(key)
        return default if value is None else value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.lookup(key) is not None

    def keys_sorted(self) -> list[str]:
        if self._keys is None:
            admit = self._admit
            self._keys = sorted(k for k, v in self._base.items() if admit(v))
        return self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_sorted())

    def __len__(self) -> int:
        return len(self.keys_sorted())


class JobsView(OverlayView[JobInfo]):
    """Session jobs: PodGroups seen (not placeholders) whose queue exists.

    A job changed by a statement is cloned when it is next *read*, not when it changes
    (:meth:`ClusterView.put_task` records the task in a patch): a TDM window close
    evicts one task from each of ~2,000 jobs that nothing reads afterwards, and copying
    each job's task map was a sixth of that cycle.
    """

    __slots__ = ("_materialise", "_patches", "_queues")

    def __init__(
        self,
        base: Mapping[str, JobInfo],
        over: dict[str, JobInfo],
        queues: Mapping[str, QueueInfo],
        patches: dict[str, dict[str, TaskInfo]],
        materialise: Callable[[str], JobInfo | None],
    ) -> None:
        super().__init__(base, over)
        self._queues = queues
        self._patches = patches
        self._materialise = materialise

    def _admit(self, value: JobInfo) -> bool:
        return not value.placeholder and value.queue in self._queues

    def lookup(self, key: str) -> JobInfo | None:
        value = self._over.get(key)
        if value is None:
            value = self._materialise(key) if key in self._patches else self._base.get(key)
        if value is None or not self._admit(value):
            return None
        return value

    def peek(self, key: str) -> JobInfo | None:
        """The job for its own fields only (queue, priority, ...): its ``tasks`` may lack
        the session's staged changes. For event handlers, which must not force a clone."""
        value = self._over.get(key)
        if value is None:
            value = self._base.get(key)
        if value is None or not self._admit(value):
            return None
        return value
