"""The session's copy-on-write view of the cluster projection.

The world holds up to 5,000 nodes and 150,000 tasks, and a session opens on every
trigger, so a session must not deep-copy the cluster as Volcano's snapshot does. The
view references the projection's objects and clones a node or a job only when a
statement changes it (the clone goes into an overlay that shadows the projection);
tasks are never mutated, a changed task is a new object. The projection is therefore
never touched by a session, and discarding a statement only has to restore overlays.

This module holds the overlay and what writes it (copy on write, node accounting, the
record of node changes); beside it, :mod:`controller.policy.framework.view_mappings`
holds the mappings it is read through, :mod:`controller.policy.framework.view_queries`
the whole-cluster questions it answers from the projection's indexes, and
:mod:`controller.policy.framework.view_clones` the fast copies (all re-exported here).

Iteration over the mapping views is in sorted key order (computed lazily, on first
iteration) so that policy code never depends on dict insertion order; look-ups are O(1).
Callers must not keep a :class:`NodeInfo` or :class:`JobInfo` across a statement
operation: look it up again through the view, which returns the current clone.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.policy.framework.columns import FreeColumns
from controller.policy.framework.errors import StatementError
from controller.policy.framework.view_clones import (
    clone_job,
    clone_task,
    clone_task_as_is,
    copy_node,
)
from controller.policy.framework.view_mappings import (
    ClusterLike,
    JobsView,
    NodesView,
    OverlayView,
)
from controller.policy.framework.view_queries import ViewQueries
from projections.accounting import node_add, node_remove
from projections.model import JobInfo, NodeInfo, QueueInfo, Resource, TaskInfo, TaskStatus

__all__ = [
    "DEFAULT_QUEUE",
    "ClusterLike",
    "ClusterView",
    "JobsView",
    "NodesView",
    "OverlayView",
    "clone_task",
    "clone_task_as_is",
    "copy_node",
]

DEFAULT_QUEUE = "default"


class ClusterView(ViewQueries):
    """Copy-on-write overlays over a cluster projection, plus node accounting."""

    def __init__(self, cluster: ClusterLike) -> None:
        self._cluster = cluster
        base_nodes = cluster.nodes
        names = sorted(n for n, node in base_nodes.items() if node.ready and not node.placeholder)
        self._node_list: list[NodeInfo] = [base_nodes[n] for n in names]
        pos = {name: i for i, name in enumerate(names)}
        self._node_pos = pos
        self._cloned_nodes: set[str] = set()
        revocable = [n for n in names if self._node_list[pos[n]].revocable_zone]
        self.nodes = NodesView(names, pos, self._node_list)
        self.revocable_nodes = NodesView(revocable, {n: pos[n] for n in revocable}, self._node_list)
        queues = dict(sorted(cluster.queues.items()))
        if DEFAULT_QUEUE not in queues:
            # Volcano's controllers always create the default queue; a recording that
            # lacks it still means "the default queue, weight 1, open".
            queues = dict(sorted({**queues, DEFAULT_QUEUE: QueueInfo(DEFAULT_QUEUE)}.items()))
        self.queues: Mapping[str, QueueInfo] = queues
        self._job_over: dict[str, JobInfo] = {}
        #: job id -> task changes not yet applied to a clone of the job (see JobsView)
        self._job_patches: dict[str, dict[str, TaskInfo]] = {}
        self._task_over: dict[str, TaskInfo] = {}
        self._base_jobs = cluster.jobs
        self.jobs = JobsView(
            cluster.jobs, self._job_over, queues, self._job_patches, self.writable_job
        )
        self.tasks: OverlayView[TaskInfo] = OverlayView(cluster.tasks, self._task_over)
        self._total: Resource | None = None
        #: Per node (view order): bumped whenever a statement changes the node, so that
        #: answers memoised for a node can tell they are stale.
        self.versions: list[int] = [0] * len(names)
        #: Bumped with every node version: a search that found nothing stays valid while
        #: this is unchanged (allocate's failed-search memo).
        self.changes = 0
        #: The position of every node change, in order (``changes`` entries): a column
        #: derived from the nodes brings itself up to date by reading the entries past
        #: its own offset (the bounds of :mod:`controller.policy.framework.pruning`).
        self.changed: list[int] = []
        self._job_versions: dict[str, int] = {}
        self._columns: FreeColumns | None = None

    def columns(self) -> FreeColumns:
        """Free-resource columns of the session nodes (built on first use)."""
        if self._columns is None:
            self._columns = FreeColumns(self._node_list)
        return self._columns

    def _changed(self, pos: int, count: int = 1) -> None:
        """Node ``pos`` changed ``count`` times: every record of a node change goes here
        (its version, ``changes``, the ``changed`` log the pruning columns read, the free
        columns), so that no batch path can forget one of them."""
        self.versions[pos] += count
        self.changes += count
        self.changed.extend([pos] * count)
        if self._columns is not None:
            self._columns.refresh(pos)

    def changed_since(self, seen: int) -> list[int]:
        """The positions of the nodes changed since ``changed`` held ``seen`` entries,
        sorted, each once: what a column derived from the nodes must recompute."""
        return sorted(set(self.changed[seen:]))

    @property
    def node_list(self) -> list[NodeInfo]:
        """Session nodes in name order (the live backing list; do not mutate)."""
        return self._node_list

    # -- copy on write -----------------------------------------------------------------

    def writable_node(self, name: str) -> NodeInfo:
        """The session's own clone of node ``name`` (cloned on first write)."""
        pos = self._node_pos[name]
        node = self._node_list[pos]
        if name not in self._cloned_nodes:
            node = copy_node(node)
            self._node_list[pos] = node
            self._cloned_nodes.add(name)
        return node

    def writable_job(self, job_id: str) -> JobInfo | None:
        """The session's own clone of job ``job_id``, or None if the cluster lacks it."""
        job = self._job_over.get(job_id)
        if job is None:
            base = self._base_jobs.get(job_id)
            if base is None:
                return None
            job = clone_job(base)
            job.tasks = dict(base.tasks)
            patch = self._job_patches.pop(job_id, None)
            if patch is not None:
                job.tasks.update(patch)
            self._job_over[job_id] = job
        return job

    def put_task(self, task: TaskInfo, key: str | None = None) -> None:
        """Make ``task`` the current version of its key, in the task index and its job.

        A job not cloned yet gets the task in its patch, applied when the job is next
        read through :attr:`jobs` (or made writable).
        """
        key = key or task.key
        self._task_over[key] = task
        job_id = task.job
        job = self._job_over.get(job_id)
        if job is not None:
            job.tasks[key] = task
        else:
            patch = self._job_patches.get(job_id)
            if patch is not None:
                patch[key] = task
            elif job_id in self._base_jobs:
                self._job_patches[job_id] = {key: task}
            else:
                return
        self._job_versions[job_id] = self._job_versions.get(job_id, 0) + 1

    def put_tasks(self, tasks: Mapping[str, TaskInfo]) -> None:
        """:meth:`put_task` for each ``key -> task`` in order (one call for a batch)."""
        over, jobs, patches = self._task_over, self._job_over, self._job_patches
        base, versions = self._base_jobs, self._job_versions
        for key, task in tasks.items():
            over[key] = task
            job_id = task.job
            job = jobs.get(job_id)
            if job is not None:
                job.tasks[key] = task
            else:
                patch = patches.get(job_id)
                if patch is not None:
                    patch[key] = task
                elif job_id in base:
                    patches[job_id] = {key: task}
                else:
                    continue
            versions[job_id] = versions.get(job_id, 0) + 1

    def job_version(self, job: JobInfo) -> tuple[int, int]:
        """Changes whenever the session changes ``job``: a memo key for answers about it.

        ``(id(job), n)``: the projection's object and the session's clone differ in identity,
        and each statement operation on the clone bumps ``n``.
        """
        return id(job), self._job_versions.get(job.id, 0)

    # -- node accounting (Volcano's NodeInfo.AddTask / RemoveTask) ---------------------

    def node_add_task(self, name: str, task: TaskInfo) -> None:
        """Volcano's ``NodeInfo.AddTask`` on the session's clone of node ``name``."""
        if name not in self._node_pos:
            raise StatementError(f"node {name} is not in the session")
        node = self.writable_node(name)
        if task.node_name and task.node_name != name:
            raise StatementError(f"task {task.key} names node {task.node_name}, not {name}")
        if task.key in node.tasks:
            raise StatementError(f"task {task.key} is already on node {name}")
        if task.status == TaskStatus.BINDING and not task.resreq.less_equal(node.idle):
            raise StatementError(f"task {task.key} does not fit node {name}")
        node_add(node, task)
        self._changed(self._node_pos[name])

    def node_remove_task(self, name: str, key: str) -> None:
        """Volcano's ``NodeInfo.RemoveTask``: reverse by the stored copy's status."""
        if name not in self._node_pos:
            return
        node = self.writable_node(name)
        stored = node.tasks.get(key)
        if stored is not None:
            node_remove(node, stored, key)
            self._changed(self._node_pos[name])

    def node_swap_task(self, name: str, key: str, task: TaskInfo) -> None:
        """Replace the node's copy of ``key`` by ``task`` (no-op if the node lacks it)."""
        pos = self._node_pos.get(name)
        if pos is None or key not in self._node_list[pos].tasks:
            return
        node = self.writable_node(name)
        old = node.tasks[key]
        if (
            old.resreq is task.resreq
            and old.status != TaskStatus.PIPELINED
            and task.status != TaskStatus.PIPELINED
        ):
            # Same request, both counted in idle and used: only ``releasing`` can move
            # (Running → Releasing on evict, back on discard). Quantities are integers,
            # so skipping the cancelling idle/used steps changes nothing.
            if old.status == TaskStatus.RELEASING:
                node.releasing.sub(old.resreq)
            if task.status == TaskStatus.RELEASING:
                node.releasing.add(task.resreq)
            node.tasks[key] = task
        else:
            node_remove(node, old, key)
            node_add(node, task, key)
        self._changed(pos)

    def swap_releasing(self, swaps: Mapping[str, list[tuple[str, TaskInfo]]]) -> None:
        """:meth:`node_swap_task` for each ``(key, task)`` of each node, node by node:
        ``swaps`` maps a node name to the Releasing versions of the tasks it holds, in
        the order they were staged (see ``Statement.evict_all``).

        The node is cloned and its position looked up once, not per task; its version
        is bumped once per swap, as one call each would; its free columns are refreshed
        once, after the last swap (they are a function of the node's final state).
        """
        for name, pairs in swaps.items():
            pos = self._node_pos.get(name)
            if pos is None:
                continue
            held = self._node_list[pos].tasks
            node: NodeInfo | None = None
            count = 0
            for key, task in pairs:
                if key not in held:
                    continue
                if node is None:
                    node = self.writable_node(name)
                old = node.tasks[key]
                if old.resreq is task.resreq and old.status != TaskStatus.PIPELINED:
                    # as node_swap_task: only ``releasing`` moves, by integers
                    if old.status == TaskStatus.RELEASING:
                        node.releasing.sub(old.resreq)
                    node.releasing.add(task.resreq)
                    node.tasks[key] = task
                else:
                    node_remove(node, old, key)
                    node_add(node, task, key)
                count += 1
            if count:
                self._changed(pos, count)

    def node_has_task(self, name: str, key: str) -> bool:
        pos = self._node_pos.get(name)
        return pos is not None and key in self._node_list[pos].tasks
