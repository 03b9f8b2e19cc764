"""The cluster's pods with an inter-pod affinity, maintained as the cluster fold changes pods.

The ``predicates`` plugin derives, once per session, the required anti-affinity terms of
the session's pods and whether any of them has a term with a topology wider than a node
(:func:`controller.plugins.predicates._owners`). Only pods whose affinity carries a
``podAffinity`` or ``podAntiAffinity`` section can contribute to either; walking every pod
of every session node for them was a few percent of a day's replay (30,000 pods per
session at 1,000 nodes, ~6 % of them with such a section).

:class:`AffinityPods` is a projection of the log kept beside
:class:`projections.cluster.ClusterState`: the fold calls :meth:`AffinityPods.add` for
every task it files and :meth:`AffinityPods.remove` for every task it drops (a pod's
change is a removal and an addition of its new task), so the index holds exactly the
cluster's tasks with such a section, by key. Before the first query, and after a
checkpoint load, the index is unbuilt and the first query builds it from every task.

Order: the index is in the order the fold filed the tasks (a pure function of the log
since the index was built). The plugin's uses of it are order-free: the distinct
(namespace, term) pairs, sorted by name, and whether any term is wide.
"""

from __future__ import annotations

from collections.abc import Mapping

from projections.model import TaskInfo


def has_pod_affinity(task: TaskInfo) -> bool:
    """Whether the task's affinity has a podAffinity or podAntiAffinity section."""
    affinity = task.affinity
    if not affinity:
        return False
    return bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


class AffinityPods:
    """The cluster's tasks whose affinity has a pod (anti-)affinity section (see module)."""

    def __init__(self) -> None:
        self._tasks: dict[str, TaskInfo] | None = None  # None: not built yet

    def add(self, key: str, task: TaskInfo) -> None:
        """The fold filed ``task`` under ``key`` (no task is filed under it before)."""
        if self._tasks is not None and has_pod_affinity(task):
            self._tasks[key] = task

    def remove(self, key: str) -> None:
        """The fold dropped the task filed under ``key``."""
        if self._tasks is not None:
            self._tasks.pop(key, None)

    def reset(self) -> None:
        """Forget everything: the next query rebuilds from all tasks."""
        self._tasks = None

    def tasks(self, tasks: Mapping[str, TaskInfo]) -> Mapping[str, TaskInfo]:
        """The indexed tasks by key, built from ``tasks`` (the cluster projection's) on
        first use. Read-only: the index's own map, valid until the next fold change."""
        if self._tasks is None:
            self._tasks = {key: task for key, task in tasks.items() if has_pod_affinity(task)}
        return self._tasks
