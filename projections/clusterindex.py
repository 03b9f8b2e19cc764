"""The cluster fold's objects and the indexes kept over them, apart from the watch rules.

Why a module of its own: :class:`ClusterIndex` is what both the fold
(:class:`projections.cluster.ClusterState`, which adds the watch, configuration and
decision handlers) and its checkpoint encoding (:mod:`projections.snapshot`) need — the
containers (``nodes``, ``tasks``, ``jobs``, ``queues``, ``pending``, ``overlays``), the
counters, the rules in force and the maintained indexes. With it here the snapshot reads
and fills a cluster without importing the fold that imports it (no
``cluster`` ↔ ``snapshot`` cycle), and ``cluster.py`` keeps to the rules of the fold.

The index methods file a task everywhere it belongs and take it out again: the Pending
set and its node (accounting as Volcano's ``NodeInfo.AddTask``, see
:mod:`projections.accounting`), its job (a PodGroup's, a placeholder's or an implicit one,
:mod:`projections.objects`), the queue totals, the zone and preemption indexes and the
affinity set; and they derive each task's ``owned``, ``evictable`` and ``preemptable`` under
the rules in force (:mod:`projections.ownership`).
"""

from __future__ import annotations

from typing import Any

from projections.accounting import Overlay, node_add, node_remove
from projections.affinitypods import AffinityPods
from projections.model import (
    COMPLETED_STATUSES,
    MIN_RESOURCE,
    JobInfo,
    NodeInfo,
    QueueInfo,
    TaskInfo,
    TaskStatus,
)
from projections.objects import (
    BUILTIN_PRIORITY_CLASSES,
    apply_implicit,
    implicit_job,
    new_node,
    reset_placeholder,
)
from projections.overcommit import OvercommitWatch, negative
from projections.ownership import LEGACY, Rules, derive, derives, forms_job
from projections.pods import GROUP_NAME
from projections.preemptindex import PreemptIndex
from projections.queuetotals import QueueTotals
from projections.zonetasks import ZoneTasks

_PENDING = TaskStatus.PENDING
_LEAST = -MIN_RESOURCE  # below this, a dimension of a node's idle is over-committed


class Touched:
    """What the fold changed since a writer's last checkpoint: task keys and job ids."""

    __slots__ = ("jobs", "tasks")

    def __init__(self) -> None:
        self.tasks: set[str] = set()
        self.jobs: set[str] = set()

    def task(self, key: str, task: TaskInfo) -> None:
        """The task at ``key`` changed (added, removed, moved), and so maybe its job."""
        self.tasks.add(key)
        self.jobs.add(task.job)


class ClusterIndex:
    """Nodes, tasks, jobs and queues with their indexes (see the module docstring).

    Attributes (read-only to everyone but the fold): ``nodes`` (name → NodeInfo, Ready or
    not, placeholders included), ``tasks`` ("ns/name" → TaskInfo), ``jobs`` (id → JobInfo),
    ``queues`` (name → QueueInfo), ``pending`` (the Pending tasks), ``overlays`` (task key
    → in-flight decision), ``priority_classes``, ``version``, ``sched_version``,
    ``skipped``, ``rules``.
    No raw API objects are kept: the simulated cluster keeps its own, as an API server would.
    """

    #: the offset of the record being folded (the fold's, :class:`projections.base.BaseProjection`)
    position: int

    def __init__(self) -> None:
        super().__init__()
        self.version = 0
        #: bumped by the changes a session can see (see :mod:`projections.cluster`)
        self.sched_version = 0
        self.skipped = 0
        self.nodes: dict[str, NodeInfo] = {}
        self.tasks: dict[str, TaskInfo] = {}
        self.jobs: dict[str, JobInfo] = {}
        self.queues: dict[str, QueueInfo] = {}
        self.pending: dict[str, TaskInfo] = {}
        self.priority_classes: dict[str, int] = {}
        self.overlays: dict[str, Overlay] = {}
        self._decisions: dict[str, str] = {}  # decision id -> task key
        #: node name -> the :func:`~projections.objects.node_inputs` of its last Node object,
        #: so that a heartbeat rebuilds nothing (not in checkpoints: after a load the next
        #: update of each node takes the full path)
        self._node_inputs: dict[str, tuple[Any, ...]] = {}
        self.rules: Rules = LEGACY
        #: per-queue request totals, told of every job change (projections/queuetotals.py)
        self.queue_totals = QueueTotals()
        #: zone -> job -> Running preemptable tasks, told of node changes (zonetasks.py)
        self.zone_tasks = ZoneTasks()
        #: node -> its preemption candidates, dropped when the node changes (preemptindex.py)
        self.preempt_index = PreemptIndex()
        #: the tasks with a pod (anti-)affinity section, told of every task (affinitypods.py)
        self.affinity_pods = AffinityPods()
        #: nodes whose requests exceed their allocatable, told where accounting changes
        #: (overcommit.py; the offset is :attr:`position`, the record being folded)
        self.overcommit = OvercommitWatch()
        #: the tasks and jobs added, removed or changed in place since a writer's last
        #: checkpoint, while one tracks this cluster (:class:`projections.rowcache.RowCache`);
        #: else None
        self.touched: Touched | None = None

    # ---- queries -----------------------------------------------------------------------

    def ready_nodes(self) -> list[NodeInfo]:
        """The Ready nodes (those a session sees), sorted by name."""
        return [self.nodes[n] for n in sorted(self.nodes) if self.nodes[n].ready]

    def class_priority(self, name: str) -> int:
        """The value of PriorityClass ``name`` as far as the log tells (else 0)."""
        if not name:
            return 0
        return self.priority_classes.get(name, BUILTIN_PRIORITY_CLASSES.get(name, 0))

    # ---- indexes -----------------------------------------------------------------------

    def _place(self, task: TaskInfo, key: str) -> None:
        """Put a task into the status-dependent indexes (pending, its node)."""
        status = task.status
        if status == _PENDING:
            self.pending[key] = task
        if task.node_name and status not in COMPLETED_STATUSES:
            node = self.nodes.get(task.node_name)
            if node is None:
                node = self.nodes[task.node_name] = new_node(task.node_name)
            node_add(node, task, key)
            self.zone_tasks.touch_task(node.name, key)
            self.preempt_index.touch(node.name)
            # over only if this task took it there: its cpu, memory or scalars (cheap first)
            idle = node.idle
            if (
                idle.milli_cpu < _LEAST
                or idle.memory < _LEAST
                or (task.resreq.scalars and negative(idle))
            ):
                self.overcommit.check(node, self.position)

    def _unplace(self, task: TaskInfo, key: str) -> None:
        self.pending.pop(key, None)
        node = self.nodes.get(task.node_name) if task.node_name else None
        if node is not None and node.tasks.get(key) is task:
            node_remove(node, task, key)
            self.zone_tasks.touch_task(node.name, key)
            self.preempt_index.touch(node.name)
            if self.overcommit.open and node.name in self.overcommit.open:
                self.overcommit.check(node, self.position)
            if node.placeholder and not node.tasks:
                del self.nodes[node.name]

    def _add_task(self, task: TaskInfo, key: str) -> None:
        rules = self.rules
        self.tasks[key] = task
        if self.touched is not None:
            self.touched.task(key, task)
        self.affinity_pods.add(key, task)
        job = self.jobs.get(task.job)
        # the job's queue and PodGroup unchanged: its totals change by this task alone
        same_job = job is not None and not job.implicit
        if job is None:
            if task.annotations.get(GROUP_NAME):
                namespace, _, name = task.job.partition("/")
                job = JobInfo("", namespace, name)
                reset_placeholder(job)
                self.jobs[task.job] = job
            elif forms_job(task, rules):
                job = self.jobs[task.job] = implicit_job(task, rules)
        elif job.implicit:
            apply_implicit(job, task, rules)
        if derives(rules):
            derive(task, rules, job)
        self._place(task, key)
        if job is not None:
            job.tasks[key] = task
        if same_job:
            self.queue_totals.task_moved(task, 1)
        else:
            self.queue_totals.touch(task.job)
        self.preempt_index.touch_job(task.job)

    def _rederive(self, keys: list[str]) -> None:
        """Re-add the tasks ``keys`` so the rules in force apply to them."""
        for key in keys:
            task = self.tasks[key]
            self._remove_task(task, key)
            self._add_task(task, key)
            if not derives(self.rules):  # _add_task left the flags: set level 1's again
                derive(task, self.rules, None)

    def _remove_task(self, task: TaskInfo, key: str, *, keep_job: bool = False) -> None:
        del self.tasks[key]
        if self.touched is not None:
            self.touched.task(key, task)
        self.affinity_pods.remove(key)
        self._unplace(task, key)
        job = self.jobs.get(task.job)
        self.preempt_index.touch_job(task.job)
        if job is not None and job.tasks.get(key) is task:
            job.tasks.pop(key)
            if not job.tasks and not keep_job and (job.placeholder or job.implicit):
                del self.jobs[job.id]
                self.queue_totals.touch(task.job)
            else:
                self.queue_totals.task_moved(task, -1)
        else:
            if job is not None:
                job.tasks.pop(key, None)
            self.queue_totals.touch(task.job)

    def _restatus(self, task: TaskInfo, status: TaskStatus, node_name: str) -> None:
        key = task.key
        self._unplace(task, key)
        job = self.jobs.get(task.job)
        filed = job is not None and job.tasks.get(key) is task
        if filed:
            self.queue_totals.task_moved(task, -1)
        task.status = status
        task.node_name = node_name
        if self.touched is not None:  # an implicit job's phase follows below
            self.touched.task(key, task)
        self._place(task, key)
        if filed:
            self.queue_totals.task_moved(task, 1)
        else:
            self.queue_totals.touch(task.job)
        self.preempt_index.touch_job(task.job)
        job = self.jobs.get(task.job)
        if job is not None and job.implicit:
            job.phase = "Inqueue" if status == _PENDING else "Running"
