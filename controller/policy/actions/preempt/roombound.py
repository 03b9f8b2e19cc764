"""An upper bound on the room preemption can make on a node, to skip the nodes that cannot
help before they are scored and walked (normal preemption, issue 28).

On a full cluster most pending tasks cannot preempt anywhere: a BE pod finds no pod of a
lower priority, an LS pod needs a node holding enough BE room. Normal preemption still
scored every feasible node for each of them in every session and, on every node, walked
its tasks through the phase's filter, the session's ``preemptable`` and
``ValidateVictims`` before moving on (on the full-cluster benchmark's 1,500 nodes, 548
nodes walked for each attempt, nearly all in vain). :class:`RoomBound` answers for a
node with one comparison instead, and for all of them at once where it can.

It holds when the session's ``preemptable`` answer is always a subset of the priority
plugin's (:meth:`RoomBound.of`): every tier of the ``preemptable`` chain that registers a
function holds priority's, which never abstains, so a tier that ends with victims has
intersected them with priority's answer (a tier where priority answers none ends with
none). Priority's victims of another job belong to a job of a lower priority than the
preemptor's job; of the preemptor's own job, they have a lower task priority. Every
victim is also one of the node's Bound or Running tasks marked preemptable (both phases'
filters), so on a node

    ``future idle + the requests of such tasks of jobs of a lower priority`` (phase 1)
    ``future idle + the requests of such tasks of the preemptor's job`` (phase 2)

bounds the room ``ValidateVictims`` can find there, for the phase's candidates and for
the plugins' victims alike. A node where the preemptor's request does not fit the bound
fails both of :func:`~.normal.normal_preempt`'s ``validate_victims`` checks and is
skipped there, before anything is staged; leaving it out of the list before the nodes
are scored (each node's score is its own) changes neither the order of the other nodes
nor any decision. The bound is made a little larger than the sums (:data:`SLACK`, far
below the 0.1 tolerance of :meth:`Resource.less_equal`), so that adding the same
requests in another order can never make it refuse a node the real check would take.

A node's phase-1 bounds are kept for the session per node version (a statement's
eviction or pipeline makes a new one); for a node the session has not changed they are
kept with the fold's reading of it (:mod:`projections.preemptindex`) from one session to
the next, while its candidates' jobs have the same priorities. Every dimension's largest
bound over the session's nodes (:meth:`RoomBound._upper`, per job priority, raised from
the view's log of node changes) answers for every node at once: a BE pod on a full
cluster, whose bound is the future idle alone, reads no node. Topology-aware preemption
does not use the bound (its candidate counts are taken over the nodes it is given).
Checked by tests/controller/policy/actions/preempt/test_roombound.py (decisions
byte-identical with the plain path on the full-cluster benchmark's scenario, scaled
down, and a bound kept across a priority change).
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import attrgetter

from controller.policy.framework.session import Session
from controller.policy.plugins import priority
from projections.model import PREEMPTABLE_STATUSES, JobInfo, NodeInfo, Resource, TaskInfo

#: added to every dimension of a bound: far below the 0.1 tolerance of ``less_equal``
SLACK = 1e-3

#: more than less_equal's tolerance (0.1): a request's CPU this far over a bound's fails it
CPU_MARGIN = 0.2
#: more than SLACK and the rounding of a column's sums: a request this far over fails
MARGIN = 0.01
#: below every job priority: the bound is the node's future idle alone
NONE = -(2**63)
#: a node's candidates, their jobs, the jobs' priorities (None: no such job), the bounds
#: by job priority
Entry = tuple[list[TaskInfo], tuple[str, ...], list[int | None], dict[int, Resource]]
_PRIORITY = attrgetter("priority")
#: where an entry is kept with the fold's reading of the node
_SLOT = "room-bound"


def _priority_preemptable(name: str, fn: object) -> bool:
    """Whether ``fn`` is the priority plugin's ``preemptable`` function."""
    return (
        name == priority.NAME
        and getattr(fn, "__module__", None) == priority.__name__
        and getattr(fn, "__name__", None) == "preemptable"
    )


def _priorities(jobs: Mapping[str, JobInfo], ids: tuple[str, ...]) -> list[int | None]:
    """The priorities of the jobs ``ids`` (None for a job ``jobs`` lacks)."""
    try:
        return list(map(_PRIORITY, map(jobs.__getitem__, ids)))
    except KeyError:
        return [None if (job := jobs.get(i)) is None else job.priority for i in ids]


def _slack(room: Resource) -> Resource:
    room.milli_cpu += SLACK
    room.memory += SLACK
    for name in room.scalars:
        room.scalars[name] += SLACK
    return room


class RoomBound:
    """The bounds of one session (see the module docstring)."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.jobs = ssn.view.fold_jobs
        #: node name -> (node object, version, candidates, their jobs' priorities, job
        #: priority -> the bound over the candidates of jobs below it)
        self._nodes: dict[str, tuple[NodeInfo, int, Entry]] = {}
        #: node name -> (node object, version, its future idle with SLACK)
        self._idles: dict[str, tuple[NodeInfo, int, Resource]] = {}
        #: the lowest priority of the fold's jobs (:meth:`_floor`)
        self._lowest: int | None = None
        #: job priority -> (entries of the view's change log read, :meth:`_upper`)
        self._uppers: dict[int, tuple[int, Resource]] = {}

    @classmethod
    def of(cls, ssn: Session) -> RoomBound | None:
        """The bounds for ``ssn``, or None when its ``preemptable`` answer need not be a
        subset of the priority plugin's."""
        rows = [row for row in ssn.chain("preemptable") if row]
        if not rows:
            return None
        if not all(any(_priority_preemptable(name, fn) for name, fn in row) for row in rows):
            return None
        return cls(ssn)

    def _entry(self, node: NodeInfo) -> Entry:
        """``node``'s candidates, their jobs' priorities and the bounds found so far.

        The priorities are read from the fold's jobs: a session never changes a job's
        priority, and a task whose job is not a session job (not admitted) only makes
        the bound larger. A node the session has not changed keeps its entry with the
        fold's reading of it (:class:`projections.preemptindex.NodeVictims`), used again
        while its jobs' priorities are the same.
        """
        ssn = self.ssn
        version = ssn.view.versions[ssn.nodes.position(node.name)]
        hit = self._nodes.get(node.name)
        if hit is not None and hit[0] is node and hit[1] == version:
            return hit[2]
        reading = ssn.view.preempt_reading(node)
        if reading is not None:
            kept: Entry | None = reading.memo.get(_SLOT)
            if kept is None:
                ids = tuple(task.job for task in reading.tasks)
                kept = (reading.tasks, ids, _priorities(self.jobs, ids), {})
            else:
                priorities = _priorities(self.jobs, kept[1])
                if priorities != kept[2]:
                    kept = (kept[0], kept[1], priorities, {})
            entry = reading.memo[_SLOT] = kept
        else:
            tasks = [
                task
                for task in node.tasks.values()
                if task.status in PREEMPTABLE_STATUSES and task.preemptable
            ]
            ids = tuple(task.job for task in tasks)
            entry = (tasks, ids, _priorities(self.jobs, ids), {})
        self._nodes[node.name] = (node, version, entry)
        return entry

    def _bound(self, node: NodeInfo, below: int) -> Resource:
        """``node``'s phase-1 bound for a preemptor whose job has priority ``below``
        (:data:`NONE`: the future idle alone, no candidate read)."""
        if below == NONE:
            return self._idle(node)
        tasks, _, priorities, bounds = self._entry(node)
        found = bounds.get(below)
        if found is None:
            room = node.future_idle()
            for task, value in zip(tasks, priorities, strict=True):
                # a task whose job the fold lacks is no session job's: priority skips it
                if value is not None and value < below:
                    room.add(task.resreq)
            found = bounds[below] = _slack(room)
        return found

    def _idle(self, node: NodeInfo) -> Resource:
        """``node``'s future idle (with :data:`SLACK`), kept per node version."""
        ssn = self.ssn
        version = ssn.view.versions[ssn.nodes.position(node.name)]
        hit = self._idles.get(node.name)
        if hit is not None and hit[0] is node and hit[1] == version:
            return hit[2]
        room = _slack(node.future_idle())
        self._idles[node.name] = (node, version, room)
        return room

    def _floor(self) -> int:
        """The lowest priority of the fold's jobs (once a session): a preemptor whose job
        is no higher has no candidate below it anywhere, its bound is the future idle."""
        if self._lowest is None:
            self._lowest = min(map(_PRIORITY, self.jobs.values()), default=0)
        return self._lowest

    def _idle_fits(self, request: Resource) -> bool:
        """False when no session node's future idle can hold ``request``: a dimension
        that exceeds the largest of allocate's free columns (future idle plus the 0.1
        tolerance, kept current by the view) by more than :data:`SLACK`."""
        columns = self.ssn.view.columns()
        if not columns.future_cpu:
            return False
        if request.milli_cpu >= max(columns.future_cpu) + MARGIN:
            return False
        if request.memory >= max(columns.future_mem) + MARGIN:
            return False
        for name, value in request.scalars.items():
            if value > 0 and value >= max(columns.scalar(name)[1]) + MARGIN:
                return False
        return True

    def _upper(self, below: int) -> Resource:
        """Every dimension's largest :meth:`_bound` over the session's nodes now (an upper
        bound: kept up to date from the view's log of node changes, it never shrinks)."""
        view = self.ssn.view
        nodes, changed = view.node_list, view.changed
        hit = self._uppers.get(below)
        if hit is None:
            top = Resource()
            for node in nodes:
                _raise(top, self._bound(node, below))
            hit = self._uppers[below] = (len(changed), top)
        elif hit[0] != len(changed):
            top = hit[1]
            for pos in sorted(set(changed[hit[0] :])):
                _raise(top, self._bound(nodes[pos], below))
            hit = self._uppers[below] = (len(changed), top)
        return hit[1]

    def nodes(self, preemptor: TaskInfo, nodes: list[NodeInfo], *, phase: str) -> list[NodeInfo]:
        """``nodes`` less those where preemption cannot make room for ``preemptor`` in
        ``phase`` (``inter-job`` or ``intra-job``), in their order.

        Phase 1 bounds a node over the tasks of jobs of a lower priority than the
        preemptor's job (none when it has no job: priority then answers no victims),
        phase 2 over the tasks of the preemptor's own job. Where no node's bound can
        hold the request (:meth:`_upper`), no node is read at all.
        """
        request = preemptor.init_resreq
        job = self.ssn.jobs.peek(preemptor.job)
        below = NONE
        if phase == "intra-job":
            held = _held(job)
            if held:

                def check(node: NodeInfo) -> bool:
                    room = node.future_idle()
                    extra = held.get(node.name)
                    if extra is not None:
                        room.add(extra)
                    return request.less_equal(_slack(room))

                return [node for node in nodes if check(node)]
        elif job is not None and job.priority > self._floor():
            below = job.priority
        if below == NONE:
            if not self._idle_fits(request):
                return []
        elif not request.less_equal(self._upper(below)):
            return []
        bound = self._bound
        # a CPU shortfall beyond less_equal's tolerance refuses a node without the call
        cpu = request.milli_cpu - CPU_MARGIN
        return [
            node
            for node in nodes
            if cpu < (room := bound(node, below)).milli_cpu and request.less_equal(room)
        ]


def _held(job: JobInfo | None) -> dict[str, Resource]:
    """Node name -> the requests of ``job``'s tasks there that may be victims.

    The job as the fold left it (``peek``): a session only moves a task out of Bound or
    Running (evict, pipeline, allocate), so these tasks hold every candidate of the job.
    """
    held: dict[str, Resource] = {}
    if job is not None:
        for task in job.tasks.values():
            if task.status in PREEMPTABLE_STATUSES and task.preemptable and task.node_name:
                held.setdefault(task.node_name, Resource()).add(task.resreq)
    return held


def _raise(top: Resource, room: Resource) -> None:
    """Raise every dimension of ``top`` to ``room``'s where that is larger."""
    if room.milli_cpu > top.milli_cpu:
        top.milli_cpu = room.milli_cpu
    if room.memory > top.memory:
        top.memory = room.memory
    scalars = top.scalars
    for name, value in room.scalars.items():
        if value > scalars.get(name, 0.0):
            scalars[name] = value
