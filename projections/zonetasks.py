"""Running preemptable tasks per revocable zone and job, maintained as the fold changes nodes.

When a TDM zone's window closes, the plugin needs every Running preemptable task on the
zone's Ready revocable nodes, grouped by job. Walking every task of every node of the
zone at each close was a fifth of the close at 5,000 nodes; this index makes it a look-up.

:class:`ZoneTasks` is a projection of the log kept beside
:class:`projections.cluster.ClusterState`: the fold calls :meth:`ZoneTasks.touch` with a
node's name whenever a task is placed on or taken off it, the node itself changes (labels,
readiness) or the ``preemptable`` flag of one of its tasks is re-derived; the next query
re-reads only those nodes. Before the first query and after a checkpoint load the index is
unbuilt and the first query reads every node, so the answer is always that of the nodes
as they are now.
"""

from __future__ import annotations

from collections.abc import Mapping

from projections.model import NodeInfo, TaskInfo, TaskStatus

_RUNNING = TaskStatus.RUNNING

#: job id -> task key -> task
Groups = dict[str, dict[str, TaskInfo]]


def node_candidates(node: NodeInfo) -> Groups:
    """The Running preemptable tasks of one node, by job."""
    groups: Groups = {}
    for key, task in node.tasks.items():
        if task.preemptable and task.status == _RUNNING:
            found = groups.get(task.job)
            if found is None:
                groups[task.job] = {key: task}
            else:
                found[key] = task
    return groups


class ZoneTasks:
    """Zone -> job -> Running preemptable tasks on the zone's Ready nodes (see the module)."""

    def __init__(self) -> None:
        self._parts: dict[str, tuple[str, Groups]] | None = None  # None: not built yet
        self._zones: dict[str, Groups] = {}
        self._dirty: set[str] = set()

    def touch(self, node: str) -> None:
        """Note that node ``node`` (or one of its tasks) changed."""
        if self._parts is not None:
            self._dirty.add(node)

    def _move(self, zone: str, groups: Groups, sign: int) -> None:
        target = self._zones.setdefault(zone, {})
        for job, tasks in groups.items():
            held = target.get(job)
            if sign > 0:
                if held is None:
                    target[job] = dict(tasks)
                else:
                    held.update(tasks)
                continue
            if held is not None:
                for key in tasks:
                    held.pop(key, None)
                if not held:
                    del target[job]
        if not target:
            del self._zones[zone]

    def zone(self, zone: str, nodes: Mapping[str, NodeInfo]) -> Groups:
        """The zone's groups, brought up to date. Read only: the index keeps them.

        Args:
            zone: the revocable zone's name.
            nodes: the cluster projection's nodes (the ones the touches named).
        """
        parts = self._parts
        if parts is None:
            parts = self._parts = {}
            self._zones = {}
            self._dirty = set(nodes)
        dirty, self._dirty = self._dirty, set()
        # all removals first: a task that moved between two dirty nodes is then removed
        # from the old one before it is added from the new one, whatever the set's order
        for name in dirty:
            old = parts.pop(name, None)
            if old is not None:
                self._move(old[0], old[1], -1)
        for name in dirty:
            node = nodes.get(name)
            if node is None or not node.ready or node.placeholder or not node.revocable_zone:
                continue
            groups = node_candidates(node)
            if groups:
                parts[name] = (node.revocable_zone, groups)
                self._move(node.revocable_zone, groups, 1)
        return self._zones.get(zone, {})
