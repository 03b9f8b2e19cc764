"""Each node's preemption candidates, kept across sessions while the fold leaves the node alone.

A topology-aware preempt cycle dry-runs thousands of nodes, and the first look at a node
in a session read all of its tasks: which are Bound or Running and marked preemptable (in
key order), and the node's future idle plus every one of their requests (Volcano's
``ValidateVictims`` over all of them). At 5,000 nodes most nodes are the same from one
session to the next, so :class:`PreemptIndex` keeps that reading per node.

The same holds for a job: :meth:`PreemptIndex.job_memo` keeps what a caller derives from
a job's fields (its place in the job order), dropped by :meth:`PreemptIndex.touch_job`
wherever the fold tells :class:`projections.queuetotals.QueueTotals` of a change to the
job (its tasks, their statuses, its PodGroup) and where a PriorityClass learned late
changes its priority.

The fold calls :meth:`PreemptIndex.touch` with a node's name wherever it tells
:class:`projections.zonetasks.ZoneTasks` of a change (the node itself, or a task placed
on or taken off it, or re-derived there): the node's reading is dropped and made again on
the next query. A reading also names the node object it was made from, and is used only
for that very object: a session node the session changed is a clone, never read from
here. A checkpoint load replaces the whole projection, this index included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from projections.accounting import future_idle_with
from projections.model import PREEMPTABLE_STATUSES, JobInfo, NodeInfo, Resource, TaskInfo


@dataclass(slots=True)
class NodeVictims:
    """One node's reading (see the module docstring); never change it."""

    #: the node object this was read from
    node: NodeInfo
    #: its Bound or Running tasks marked preemptable, in task key order
    tasks: list[TaskInfo]
    #: their jobs, distinct, sorted
    jobs: tuple[str, ...]
    #: the node's future idle plus every one of ``tasks``' requests, added in that order
    room: Resource
    #: readings of the same tasks a caller derives and keeps with this one (dropped with it)
    memo: dict[str, Any] = field(default_factory=dict)


def read_node(node: NodeInfo) -> NodeVictims:
    """The reading of ``node`` as it is now."""
    tasks = node.tasks
    found = [
        tasks[key]
        for key in sorted(tasks)
        if tasks[key].status in PREEMPTABLE_STATUSES and tasks[key].preemptable
    ]
    # the room controller.policy.actions.preempt.victims.validate_victims checks, added alike
    room = future_idle_with(node, found)
    return NodeVictims(node, found, tuple(sorted({task.job for task in found})), room)


class PreemptIndex:
    """Node name -> its reading, dropped when the fold changes the node (see the module)."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeVictims] = {}
        #: job id -> (the job object, what callers derived from its fields)
        self._jobs: dict[str, tuple[JobInfo, dict[Any, Any]]] = {}

    def touch(self, node: str) -> None:
        """Note that node ``node``, or a task on it, changed."""
        self._nodes.pop(node, None)

    def node(self, node: NodeInfo) -> NodeVictims:
        """The reading of ``node`` (the projection's own object, unchanged by a session)."""
        hit = self._nodes.get(node.name)
        if hit is not None and hit.node is node:
            return hit
        made = self._nodes[node.name] = read_node(node)
        return made

    def touch_job(self, job_id: str) -> None:
        """Note that job ``job_id`` changed (its fields, its tasks or their statuses)."""
        self._jobs.pop(job_id, None)

    def job_memo(self, job: JobInfo) -> dict[Any, Any]:
        """A memo for values derived from ``job``'s fields and its tasks' (the projection's
        own object, unchanged by a session), kept until the fold changes the job."""
        hit = self._jobs.get(job.id)
        if hit is not None and hit[0] is job:
            return hit[1]
        memo: dict[Any, Any] = {}
        self._jobs[job.id] = (job, memo)
        return memo
