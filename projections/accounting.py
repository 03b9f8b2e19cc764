"""Node accounting and the in-flight decision overlay record.

Accounting is Volcano's ``NodeInfo.AddTask`` / ``NodeInfo.RemoveTask`` (volcano-sh/volcano
pkg/scheduler/api/node_info.go): a Releasing task takes its request from ``idle`` and adds
it to ``releasing`` and ``used``; a Pipelined task adds it to ``pipelined`` only; any other
status takes it from ``idle`` and adds it to ``used``. Removing reverses the stored copy.

Kept apart from :mod:`projections.cluster` so that sessions (which copy nodes and move
tasks on them) can use the very same arithmetic as the fold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from projections.model import NodeInfo, Resource, TaskInfo, TaskStatus

_PIPELINED = TaskStatus.PIPELINED
_RELEASING = TaskStatus.RELEASING


@dataclass(slots=True)
class Overlay:
    """An in-flight decision on a task, with the watch-derived state it covers."""

    decision: str
    kind: str  # "evict" | "bind"
    node: str
    base_status: TaskStatus
    base_node: str


def node_add(node: NodeInfo, task: TaskInfo, key: str | None = None) -> None:
    """Account ``task`` on ``node`` (Volcano's ``NodeInfo.AddTask``).

    ``key`` saves recomputing ``task.key``. ``idle.sub(request)`` and
    ``used.add(request)`` written out in one pass (the same operations on each field, in
    the same order): every pod placed in the fold comes here.
    """
    request = task.resreq
    status = task.status
    if status == _PIPELINED:
        node.pipelined.add(request)
    else:
        _move(node.idle, node.used, request)
        if status == _RELEASING:
            node.releasing.add(request)
    node.tasks[key or task.key] = task


def node_remove(node: NodeInfo, task: TaskInfo, key: str | None = None) -> None:
    """Reverse :func:`node_add` for the copy the node holds."""
    request = task.resreq
    status = task.status
    if status == _PIPELINED:
        node.pipelined.sub(request)
    else:
        _move(node.used, node.idle, request)
        if status == _RELEASING:
            node.releasing.sub(request)
    del node.tasks[key or task.key]


def _move(source: Resource, target: Resource, request: Resource) -> None:
    """``source.sub(request)`` then ``target.add(request)`` (distinct objects)."""
    cpu, memory = request.milli_cpu, request.memory
    source.milli_cpu -= cpu
    source.memory -= memory
    target.milli_cpu += cpu
    target.memory += memory
    taken, given = source.scalars, target.scalars
    for name, value in request.scalars.items():
        taken[name] = taken.get(name, 0.0) - value
        given[name] = given.get(name, 0.0) + value


def future_idle_with(node: NodeInfo, tasks: Iterable[TaskInfo]) -> Resource:
    """``node``'s future idle plus every request of ``tasks``, added in their order (the
    room Volcano's ``ValidateVictims`` checks; the additions of ``Resource.add`` written
    out, since this runs on every node of every preemption dry run)."""
    room = node.future_idle()
    cpu, memory, scalars = room.milli_cpu, room.memory, room.scalars
    for task in tasks:
        request = task.resreq
        cpu += request.milli_cpu
        memory += request.memory
        for name, value in request.scalars.items():
            scalars[name] = scalars.get(name, 0.0) + value
    room.milli_cpu, room.memory = cpu, memory
    return room
