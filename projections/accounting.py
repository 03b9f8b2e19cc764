"""Node accounting and the in-flight decision overlay record.

Accounting is Volcano's ``NodeInfo.AddTask`` / ``NodeInfo.RemoveTask`` (volcano-sh/volcano
pkg/scheduler/api/node_info.go): a Releasing task takes its request from ``idle`` and adds
it to ``releasing`` and ``used``; a Pipelined task adds it to ``pipelined`` only; any other
status takes it from ``idle`` and adds it to ``used``. Removing reverses the stored copy.

Kept apart from :mod:`projections.cluster` so that sessions (which copy nodes and move
tasks on them) can use the very same arithmetic as the fold.
"""

from __future__ import annotations

from dataclasses import dataclass

from projections.model import NodeInfo, TaskInfo, TaskStatus

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

    ``key`` saves recomputing ``task.key``.
    """
    request = task.resreq
    if task.status == _PIPELINED:
        node.pipelined.add(request)
    else:
        node.idle.sub(request)
        node.used.add(request)
        if task.status == _RELEASING:
            node.releasing.add(request)
    node.tasks[key or task.key] = task


def node_remove(node: NodeInfo, task: TaskInfo, key: str | None = None) -> None:
    """Reverse :func:`node_add` for the copy the node holds."""
    request = task.resreq
    if task.status == _PIPELINED:
        node.pipelined.sub(request)
    else:
        node.idle.add(request)
        node.used.sub(request)
        if task.status == _RELEASING:
            node.releasing.sub(request)
    del node.tasks[key or task.key]
