"""The cluster's pods with an inter-pod affinity, maintained as the cluster fold changes pods.

The ``predicates`` plugin derives, once per session, the required anti-affinity terms of
the session's pods and whether any of them has a term with a topology wider than a node
(:func:`controller.policy.plugins.predicates.keys._owners`). Only pods whose affinity carries a
``podAffinity`` or ``podAntiAffinity`` section can contribute to either; walking every pod
of every session node for them was a few percent of a day's replay (30,000 pods per
session at 1,000 nodes, ~6 % of them with such a section).

:class:`AffinityPods` is a projection of the log kept beside
:class:`projections.cluster.ClusterState`: the fold calls :meth:`AffinityPods.add` for
every task it files and :meth:`AffinityPods.remove` for every task it drops (a pod's
change is a removal and an addition of its new task), so the index holds exactly the
cluster's tasks with such a section, by key, grouped by (affinity object, namespace): the
pods of a workload share one affinity object, and the plugin reads each group through
one pod of the session (at 1,000 nodes, ~4,600 pods in a few hundred groups). Before the
first query, and after a checkpoint load, the index is unbuilt and the first query builds
it from every task.

Order: groups in the order the fold first filed a task of each, members in the order the
fold filed them (a pure function of the log since the index was built). The plugin's uses
of it are order-free: the distinct (namespace, term) pairs, sorted by name, and whether
any term is wide.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from projections.model import TaskInfo


def has_pod_affinity(task: TaskInfo) -> bool:
    """Whether the task's affinity has a podAffinity or podAntiAffinity section."""
    affinity = task.affinity
    if not affinity:
        return False
    return bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


#: a group of the index: the tasks of one affinity object (interned by
#: ``projections.pods``, so equal affinities share it) in one namespace
Group = tuple[int, str]


def group_of(task: TaskInfo) -> Group:
    """The task's group: its affinity object's id (the task holds it, so the id stays its
    own while the task is indexed) and its namespace."""
    return (id(task.affinity), task.namespace)


class AffinityPods:
    """The cluster's tasks whose affinity has a pod (anti-)affinity section, grouped by
    (affinity object, namespace) (see the module)."""

    def __init__(self) -> None:
        self._groups: dict[Group, dict[str, TaskInfo]] | None = None  # None: not built yet
        self._group: dict[str, Group] = {}  # key -> its group, for the indexed tasks

    def add(self, key: str, task: TaskInfo) -> None:
        """The fold filed ``task`` under ``key`` (no task is filed under it before)."""
        if self._groups is not None and has_pod_affinity(task):
            group = self._group[key] = group_of(task)
            members = self._groups.get(group)
            if members is None:
                members = self._groups[group] = {}
            members[key] = task

    def remove(self, key: str) -> None:
        """The fold dropped the task filed under ``key``."""
        if self._groups is None:
            return
        group = self._group.pop(key, None)
        if group is not None:
            members = self._groups[group]
            del members[key]
            if not members:
                del self._groups[group]

    def reset(self) -> None:
        """Forget everything: the next query rebuilds from all tasks."""
        self._groups = None
        self._group = {}

    def groups(self, tasks: Mapping[str, TaskInfo]) -> Iterable[Mapping[str, TaskInfo]]:
        """The indexed tasks by key, one map per group, built from ``tasks`` (the cluster
        projection's) on first use. Read-only: the index's own maps, valid until the next
        fold change."""
        if self._groups is None:
            self._groups, self._group = {}, {}
            for key, task in tasks.items():
                self.add(key, task)
        return self._groups.values()
