"""Per-queue request totals, maintained as the cluster fold changes jobs.

The ``proportion`` plugin needs, at every session, each queue's *allocated* sum (the
requests of its tasks in an allocated status) and *request* sum (allocated plus Pending)
over every non-placeholder job. Re-summing 150,000 tasks per session made it the largest
single cost of a replay; this index makes the cost proportional to what changed.

:class:`QueueTotals` is a projection of the log kept beside
:class:`projections.cluster.ClusterState`: the fold calls :meth:`QueueTotals.touch` with
the id of every job whose tasks, statuses or PodGroup changed, and the next query
re-counts only those jobs (subtracting each one's old contribution from its old queue and
adding the new one). A task filed in or dropped from a job whose queue and PodGroup did
not change comes through :meth:`QueueTotals.task_moved` instead, which moves the job's and
its queue's sums by that task alone (a big job that gains or loses one pod between
sessions is not re-counted whole). Before the first query, and after a checkpoint load, the index is
unbuilt and the first query builds it from every job, so the totals are always those of
the jobs as they are now, whatever path led there.

Exactness: the model's quantities are Kubernetes ``MilliValue``/``Value`` integers, and
float sums and differences of integers below 2^53 are exact, so maintained totals equal
a fresh re-sum in any order (the same argument ``controller/policy/plugins/proportion.py``
relies on). A scalar name is present in a total while at least one counted task's
request names it, exactly as a fresh sum would create it; counts decide that, not values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from projections.model import ALLOCATED_STATUSES, JobInfo, Resource, TaskInfo, TaskStatus

_PENDING = TaskStatus.PENDING
_RUNNING = TaskStatus.RUNNING
#: the statuses a TDM budget counts as finished (``Budget.final``)
_FINAL = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})


@dataclass
class _Sums:
    """Running sums of one status class (allocated or Pending), with scalar name counts."""

    cpu: float = 0.0
    memory: float = 0.0
    scalars: dict[str, float] = field(default_factory=dict)
    names: dict[str, int] = field(default_factory=dict)  # scalar name -> tasks naming it

    def take(self, req: Resource, sign: int) -> None:
        """Add (``sign`` 1) or subtract (-1) one task's request ``req``."""
        self.cpu += sign * req.milli_cpu
        self.memory += sign * req.memory
        if req.scalars:
            scalars, names = self.scalars, self.names
            for name, value in req.scalars.items():
                scalars[name] = scalars.get(name, 0.0) + sign * value
                left = names.get(name, 0) + sign
                if left:
                    names[name] = left
                else:
                    del names[name]
                    del scalars[name]

    def move(self, other: _Sums, sign: int) -> None:
        """Add (``sign`` 1) or subtract (-1) ``other`` into these sums."""
        self.cpu += sign * other.cpu
        self.memory += sign * other.memory
        scalars, names = self.scalars, self.names
        for name, value in other.scalars.items():
            scalars[name] = scalars.get(name, 0.0) + sign * value
        for name, count in other.names.items():
            left = names.get(name, 0) + sign * count
            if left:
                names[name] = left
            else:
                del names[name]
                del scalars[name]


@dataclass
class _Part:
    """One job's contribution: its queue and the sums of its tasks."""

    queue: str
    allocated: _Sums
    pending: _Sums
    running: int = 0  # tasks Running (the rescheduling round's gang counts)
    final: int = 0  # tasks Succeeded or Failed (TDM's budgets)


@dataclass
class QueueSums:
    """One queue's totals: what ``proportion`` would sum over the queue's jobs.

    ``allocated`` sums the tasks in an allocated status, ``request`` those plus the
    Pending ones; ``jobs`` counts the queue's non-placeholder jobs (a queue with jobs but
    no tasks still takes part in the share).
    """

    allocated: Resource
    request: Resource
    jobs: int


@dataclass
class _Queue:
    allocated: _Sums = field(default_factory=_Sums)
    pending: _Sums = field(default_factory=_Sums)
    jobs: int = 0


def _part(job: JobInfo) -> _Part:
    """Sum one job's tasks (the same classification as a full re-sum)."""
    allocated, pending = _Sums(), _Sums()
    running = final = 0
    for task in job.tasks.values():
        status = task.status
        if status in ALLOCATED_STATUSES:
            sums = allocated
            if status == _RUNNING:
                running += 1
        elif status == _PENDING:
            sums = pending
        else:
            if status in _FINAL:
                final += 1
            continue
        req = task.resreq
        sums.cpu += req.milli_cpu
        sums.memory += req.memory
        if req.scalars:
            scalars, names = sums.scalars, sums.names
            for name, value in req.scalars.items():
                scalars[name] = scalars.get(name, 0.0) + value
                names[name] = names.get(name, 0) + 1
    return _Part(job.queue, allocated, pending, running, final)


class QueueTotals:
    """Per-queue allocated / request totals over the non-placeholder jobs (see the module)."""

    def __init__(self) -> None:
        self._parts: dict[str, _Part] | None = None  # None: not built yet
        self._queues: dict[str, _Queue] = {}
        self._dirty: set[str] = set()
        #: job id -> its Running / finished tasks, for the jobs of ``_parts`` (kept
        #: beside them)
        self._running: dict[str, int] = {}
        self._final: dict[str, int] = {}

    def touch(self, job_id: str) -> None:
        """Note that job ``job_id`` changed (its tasks, their statuses, queue or PodGroup)."""
        if self._parts is not None:
            self._dirty.add(job_id)

    def task_moved(self, task: TaskInfo, sign: int) -> None:
        """Task ``task``, as it is now, enters (``sign`` 1) or leaves (-1) its job, whose
        queue and PodGroup did not change: the job's contribution and its queue's totals
        change by the task's alone. A job not counted yet, or to be re-counted anyway, is
        re-counted at the next query instead (as :meth:`touch`)."""
        parts = self._parts
        if parts is None:
            return
        job_id = task.job
        part = None if job_id in self._dirty else parts.get(job_id)
        if part is None:
            self._dirty.add(job_id)
            return
        status = task.status
        if status in ALLOCATED_STATUSES:
            part.allocated.take(task.resreq, sign)
            self._queues[part.queue].allocated.take(task.resreq, sign)
            if status == _RUNNING:
                part.running += sign
                self._running[job_id] += sign
        elif status == _PENDING:
            part.pending.take(task.resreq, sign)
            self._queues[part.queue].pending.take(task.resreq, sign)
        elif status in _FINAL:
            part.final += sign
            self._final[job_id] += sign

    def reset(self) -> None:
        """Forget everything: the next query rebuilds from all jobs."""
        self._parts = None
        self._queues = {}
        self._dirty = set()
        self._running = {}
        self._final = {}

    def _apply(self, part: _Part, sign: int) -> None:
        queue = self._queues.get(part.queue)
        if queue is None:
            queue = self._queues[part.queue] = _Queue()
        queue.allocated.move(part.allocated, sign)
        queue.pending.move(part.pending, sign)
        queue.jobs += sign
        if not queue.jobs:
            del self._queues[part.queue]

    def _refresh(self, jobs: Mapping[str, JobInfo]) -> dict[str, _Part]:
        parts = self._parts
        if parts is None:
            parts = self._parts = {}
            self._queues = {}
            self._running = {}
            self._final = {}
            self._dirty = set(jobs)
        dirty, self._dirty = self._dirty, set()
        running, final = self._running, self._final
        for job_id in dirty:  # each job independently: the order changes nothing
            old = parts.pop(job_id, None)
            if old is not None:
                self._apply(old, -1)
                del running[job_id], final[job_id]
            job = jobs.get(job_id)
            if job is not None and not job.placeholder:
                new = parts[job_id] = _part(job)
                self._apply(new, 1)
                running[job_id] = new.running
                final[job_id] = new.final
        return parts

    def running(self, jobs: Mapping[str, JobInfo]) -> Mapping[str, int]:
        """Each non-placeholder job's count of Running tasks, brought up to date (the
        rescheduling round's gang minimum reads it instead of counting every task of every
        job it reaches). Read-only: the index's own map, valid until the next fold change.

        Args:
            jobs: the cluster projection's jobs (the ones the touches named).
        """
        self._refresh(jobs)
        return self._running

    def finished(self, jobs: Mapping[str, JobInfo]) -> Mapping[str, int]:
        """Each non-placeholder job's count of Succeeded and Failed tasks, brought up to
        date (a TDM window close budgets every job of the zone from it and
        :meth:`running` instead of counting each job's tasks). Read-only, as
        :meth:`running`'s.

        Args:
            jobs: the cluster projection's jobs (the ones the touches named).
        """
        self._refresh(jobs)
        return self._final

    def totals(self, jobs: Mapping[str, JobInfo]) -> dict[str, QueueSums]:
        """Every queue with a non-placeholder job, by name (sorted), brought up to date.

        Args:
            jobs: the cluster projection's jobs (the ones the touches named).

        Returns:
            Fresh :class:`QueueSums` the caller may change.
        """
        self._refresh(jobs)
        out: dict[str, QueueSums] = {}
        for name in sorted(self._queues):
            queue = self._queues[name]
            alloc, pend = queue.allocated, queue.pending
            allocated = Resource(alloc.cpu, alloc.memory, dict(sorted(alloc.scalars.items())))
            request = Resource(alloc.cpu + pend.cpu, alloc.memory + pend.memory)
            for scalar in sorted(alloc.names.keys() | pend.names.keys()):
                request.scalars[scalar] = alloc.scalars.get(scalar, 0.0) + pend.scalars.get(
                    scalar, 0.0
                )
            out[name] = QueueSums(allocated, request, queue.jobs)
        return out
