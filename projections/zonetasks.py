"""Running preemptable tasks per revocable zone and job, maintained as the fold changes nodes.

When a TDM zone's window closes, the plugin needs every Running preemptable task on the
zone's Ready revocable nodes, grouped by job. Walking every task of every node of the
zone at each close was a fifth of the close at 5,000 nodes; this index makes it a look-up.

:class:`ZoneTasks` is a projection of the log kept beside
:class:`projections.cluster.ClusterState`: the fold calls :meth:`ZoneTasks.touch` with a
node's name whenever the node itself changes (labels, readiness), and
:meth:`ZoneTasks.touch_task` with a node and a task key whenever that task is placed on
or taken off the node or its ``preemptable`` flag is re-derived; the next query re-reads
only those nodes and those tasks. (A close's evictions change ~3,000 tasks on ~500 nodes
of ~45 tasks each: re-reading whole nodes was 7x the work and half of choosing the
victims.) Before the first query and after a checkpoint load the index is unbuilt and the
first query reads every node, so the answer is always that of the nodes as they are now.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeGuard

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
        #: node -> (its zone, its candidates by job); None: not built yet
        self._parts: dict[str, tuple[str, Groups]] | None = None
        self._zones: dict[str, Groups] = {}
        #: (node, task key) -> job of every task the index holds
        self._jobs: dict[tuple[str, str], str] = {}
        self._dirty: set[str] = set()
        self._dirty_tasks: set[tuple[str, str]] = set()

    def touch(self, node: str) -> None:
        """Note that node ``node`` itself changed (every task of it is re-read)."""
        if self._parts is not None:
            self._dirty.add(node)

    def touch_task(self, node: str, key: str) -> None:
        """Note that task ``key`` was placed on or taken off node ``node``, or changed there."""
        if self._parts is not None and node:
            self._dirty_tasks.add((node, key))

    def _move(self, node: str, zone: str, groups: Groups, sign: int) -> None:
        target = self._zones.setdefault(zone, {})
        jobs = self._jobs
        for job, tasks in groups.items():
            held = target.get(job)
            if sign > 0:
                if held is None:
                    target[job] = dict(tasks)
                else:
                    held.update(tasks)
                for key in tasks:
                    jobs[node, key] = job
                continue
            for key in tasks:
                jobs.pop((node, key), None)
            if held is not None:
                for key in tasks:
                    held.pop(key, None)
                if not held:
                    del target[job]
        if not target:
            del self._zones[zone]

    def _current(
        self,
        node: str,
        key: str,
        nodes: Mapping[str, NodeInfo],
        parts: dict[str, tuple[str, Groups]],
    ) -> bool:
        """Whether the index holds task ``key`` of node ``node`` as the node holds it now
        (the same object, still a candidate; the node itself unchanged)."""
        job = self._jobs.get((node, key))
        if job is None:
            return False
        found = nodes.get(node)
        task = found.tasks.get(key) if found is not None else None
        return (
            task is not None
            and task.preemptable
            and task.status == _RUNNING
            and parts[node][1][job].get(key) is task
        )

    def _drop(self, node: str, key: str, parts: dict[str, tuple[str, Groups]]) -> None:
        """Take task ``key`` of node ``node`` out of the index, if the index holds it."""
        job = self._jobs.pop((node, key), None)
        part = parts.get(node)
        if job is None or part is None:
            return
        zone, groups = part
        tasks = groups.get(job, {})
        tasks.pop(key, None)
        if not tasks:
            groups.pop(job, None)
            if not groups:
                del parts[node]
        target = self._zones.get(zone, {})
        held = target.get(job)
        if held is not None:
            held.pop(key, None)
            if not held:
                del target[job]
                if not target:
                    del self._zones[zone]

    def _add(self, node: NodeInfo, key: str, parts: dict[str, tuple[str, Groups]]) -> None:
        """Put task ``key`` of ``node`` into the index when it is a candidate."""
        task = node.tasks.get(key)
        if task is None or not task.preemptable or task.status != _RUNNING:
            return
        zone = node.revocable_zone
        part = parts.get(node.name)
        if part is None:
            part = parts[node.name] = (zone, {})
        part[1].setdefault(task.job, {})[key] = task
        self._move(node.name, zone, {task.job: {key: task}}, 1)

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
            self._jobs = {}
            self._dirty = set(nodes)
            self._dirty_tasks = set()
        dirty, self._dirty = self._dirty, set()
        # a re-read node covers its own tasks; a task the index holds as it is now
        # (taken off and put back, e.g. an eviction that failed) needs nothing
        pairs = [
            pair
            for pair in self._dirty_tasks
            if pair[0] not in dirty and not self._current(pair[0], pair[1], nodes, parts)
        ]
        self._dirty_tasks = set()
        # all removals first: a task that moved between two dirty nodes is then removed
        # from the old one before it is added from the new one, whatever the sets' order
        for name in dirty:
            old = parts.pop(name, None)
            if old is not None:
                self._move(name, old[0], old[1], -1)
        for name, key in pairs:
            self._drop(name, key, parts)
        for name in dirty:
            node = nodes.get(name)
            if not _eligible(node):
                continue
            groups = node_candidates(node)
            if groups:
                parts[name] = (node.revocable_zone, groups)
                self._move(name, node.revocable_zone, groups, 1)
        for name, key in pairs:
            node = nodes.get(name)
            if _eligible(node):
                self._add(node, key, parts)
        return self._zones.get(zone, {})


def _eligible(node: NodeInfo | None) -> TypeGuard[NodeInfo]:
    """A Ready revocable node (its candidates count)."""
    return node is not None and node.ready and not node.placeholder and bool(node.revocable_zone)
