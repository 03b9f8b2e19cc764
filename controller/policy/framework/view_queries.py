"""What a session asks of the cluster as a whole: the state at open and the
projection's maintained indexes, corrected for the session's own changes.

The session's view (:class:`~controller.policy.framework.view.ClusterView`) is an overlay
over the projection; most questions read one node, job or task through it. These are
the others: sums and groupings over every session job as it was at open, the total
allocatable of the session nodes, and answers the projection keeps an index for
(pending pods, preemption candidates, revocable-zone tasks, pods with a pod affinity)
so that a session does not walk 150,000 tasks for them. An index answer is None when
the cluster keeps no such index (a bare test cluster), except ``pending_tasks``, which
then walks the tasks itself. :class:`ViewQueries` is a base of ``ClusterView``: its
methods read the overlay state the view's ``__init__`` sets up.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from controller.policy.framework.view_mappings import ClusterLike, NodesView, OverlayView
from projections.affinitypods import AffinityPods
from projections.model import JobInfo, NodeInfo, QueueInfo, Resource, TaskInfo, TaskStatus
from projections.preemptindex import NodeVictims, PreemptIndex
from projections.queuetotals import QueueSums, QueueTotals
from projections.zonetasks import ZoneTasks, node_candidates


class ViewQueries:
    """The whole-cluster questions of :class:`~controller.policy.framework.view.ClusterView`.

    The attributes are the view's overlay state, set by its ``__init__``.
    """

    _cluster: ClusterLike
    _base_jobs: Mapping[str, JobInfo]
    _node_list: list[NodeInfo]
    _node_pos: dict[str, int]
    _cloned_nodes: set[str]
    _task_over: dict[str, TaskInfo]
    _job_versions: dict[str, int]
    _total: Resource | None
    nodes: NodesView
    queues: Mapping[str, QueueInfo]
    tasks: OverlayView[TaskInfo]

    def opening_jobs(self) -> Iterator[JobInfo]:
        """Session jobs as they were at open (the projection's objects).

        In the projection's order, which is *not* sorted: use it only for
        order-independent work (sums of integral quantities, counts).
        """
        queues = self.queues
        for job in self._base_jobs.values():
            if not job.placeholder and job.queue in queues:
                yield job

    def opening_tasks_by_queue(self) -> dict[str, list[TaskInfo]]:
        """Every task of the session's jobs as at open, grouped by the job's queue.

        Lists in the projection's order (not sorted): for order-independent work only.
        One pass with no per-job call, because most jobs are single pods.
        """
        queues = self.queues
        grouped: dict[str, list[TaskInfo]] = {}
        for job in self._base_jobs.values():
            if job.placeholder:
                continue
            found = grouped.get(job.queue)
            if found is None:
                if job.queue not in queues:
                    continue
                found = grouped[job.queue] = []
            found.extend(job.tasks.values())
        return grouped

    def opening_queue_totals(self) -> dict[str, QueueSums] | None:
        """The session queues' totals as at open, from the projection's maintained index.

        Queues of the session only (the others' jobs are not session jobs), by name.
        None when the cluster keeps no index (a bare test cluster): the caller sums
        :meth:`opening_tasks_by_queue` instead.
        """
        index: QueueTotals | None = getattr(self._cluster, "queue_totals", None)
        if index is None:
            return None
        queues = self.queues
        totals = index.totals(self._base_jobs)
        return {name: sums for name, sums in totals.items() if name in queues}

    @property
    def fold_jobs(self) -> Mapping[str, JobInfo]:
        """The projection's jobs as the session opened on them (never change them): a
        session clones a job to change its tasks, never its own fields (its priority)."""
        return self._base_jobs

    def preempt_reading(self, node: NodeInfo) -> NodeVictims | None:
        """``node``'s preemption candidates from the projection's index
        (:mod:`projections.preemptindex`); None when ``node`` is not the projection's own
        object (a statement of this session changed it) or the cluster keeps no index."""
        index: PreemptIndex | None = getattr(self._cluster, "preempt_index", None)
        if index is None or self._cluster.nodes.get(node.name) is not node:
            return None
        return index.node(node)

    def preempt_job_memo(self, job: JobInfo) -> dict[Any, Any] | None:
        """The projection's memo of ``job`` (:meth:`PreemptIndex.job_memo`); None when
        ``job`` is not the projection's own object or this session changed it."""
        index: PreemptIndex | None = getattr(self._cluster, "preempt_index", None)
        if (
            index is None
            or self._job_versions.get(job.id)
            or self._base_jobs.get(job.id) is not job
        ):
            return None
        return index.job_memo(job)

    def zone_candidates(self, zone: str) -> dict[str, list[TaskInfo]] | None:
        """The Running preemptable tasks on ``zone``'s session nodes *now*, by job.

        From the projection's maintained index (:mod:`projections.zonetasks`), corrected
        for the nodes a statement of this session has changed (read from their clones).
        Lists in no particular order. None when the cluster keeps no index.
        """
        index: ZoneTasks | None = getattr(self._cluster, "zone_tasks", None)
        if index is None:
            return None
        base = index.zone(zone, self._cluster.nodes)
        changed = [
            name
            for name in sorted(self._cloned_nodes)
            if self._node_list[self._node_pos[name]].revocable_zone == zone
        ]
        if not changed:
            return {job: list(tasks.values()) for job, tasks in base.items()}
        merged = {job: dict(tasks) for job, tasks in base.items()}
        for name in changed:  # every removal before any addition
            for job, tasks in node_candidates(self._cluster.nodes[name]).items():
                held = merged.get(job, {})
                for key in tasks:
                    held.pop(key, None)
        for name in changed:
            for job, tasks in node_candidates(self._node_list[self._node_pos[name]]).items():
                merged.setdefault(job, {}).update(tasks)
        return {job: list(tasks.values()) for job, tasks in merged.items() if tasks}

    def pod_affinity_tasks(self) -> list[TaskInfo] | None:
        """One session pod (on a session node or Pending, session changes included) of
        each group of the projection's maintained index of pods with a pod (anti-)affinity
        section (:class:`~projections.affinitypods.AffinityPods`: one affinity object in
        one namespace), the group's first in the index's order that is a session pod; None
        when the cluster keeps no index (a bare test cluster).

        A pod of the cluster is a session pod when its current task is Pending or filed
        on a session node: the same pods as a walk of ``node_list`` and
        :meth:`pending_tasks` finds. A group none of whose pods is a session pod gives
        none.
        """
        index: AffinityPods | None = getattr(self._cluster, "affinity_pods", None)
        if index is None:
            return None
        lookup, nodes, pending = self.tasks.lookup, self.nodes, TaskStatus.PENDING
        out = []
        for members in index.groups(self._cluster.tasks):
            for key in members:
                task = lookup(key)
                if task is None:
                    continue
                name = task.node_name
                if task.status == pending or (name and name in nodes and key in nodes[name].tasks):
                    out.append(task)
                    break
        return out

    def pending_tasks(self) -> list[TaskInfo]:
        """The tasks Pending *now* (session changes included), sorted by key.

        Uses the projection's ``pending`` index when it has one, so that finding the
        pending pods does not walk every task.
        """
        index: Mapping[str, TaskInfo] | None = getattr(self._cluster, "pending", None)
        keys: set[str] = (
            set(index)
            if index is not None
            else {
                key
                for key, task in self._cluster.tasks.items()
                if task.status == TaskStatus.PENDING
            }
        )
        keys.update(self._task_over)
        out = []
        for key in sorted(keys):
            task = self.tasks.lookup(key)
            if task is not None and task.status == TaskStatus.PENDING:
                out.append(task)
        return out

    def total_resource(self) -> Resource:
        """Σ allocatable over the session's nodes (Volcano's ``ssn.TotalResource``)."""
        if self._total is None:
            # Resource.add inlined (a call per node was most of this), same order of sums
            cpu = memory = 0.0
            scalars: dict[str, float] = {}
            for node in self._node_list:
                alloc = node.allocatable
                cpu += alloc.milli_cpu
                memory += alloc.memory
                for name, value in alloc.scalars.items():
                    scalars[name] = scalars.get(name, 0.0) + value
            self._total = Resource(cpu, memory, scalars)
        return self._total
