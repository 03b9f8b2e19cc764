"""Fallback orders used when no plugin decides a comparison.

Upstream: volcano-sh/volcano pkg/scheduler/framework/session_plugins.go
(``Session.JobOrderFn``, ``Session.QueueOrderFn``: creation time, then UID) and, for
tasks, ``CompareTask`` in pkg/controllers/job/helpers/helpers.go.

Volcano falls back to creation time and then UID; tide adds namespace and name at the
end so that every order is total even for objects with equal (or missing) UIDs, which
makes a session's outcome independent of dict and heap order (every ordering ends in a
deterministic tie-break).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from projections.model import JobInfo, QueueInfo, TaskInfo

_EPOCH = datetime(1, 1, 1, tzinfo=UTC)


def _cmp(a: tuple[Any, ...], b: tuple[Any, ...]) -> int:
    return (a > b) - (a < b)


def _created(at: datetime | None) -> datetime:
    return at if at is not None else _EPOCH


def job_fallback(left: JobInfo, right: JobInfo) -> int:
    """Earlier PodGroup creation first, then smaller UID, then namespace/name."""
    return _cmp(
        (_created(left.creation), left.uid, left.namespace, left.name),
        (_created(right.creation), right.uid, right.namespace, right.name),
    )


def job_fallback_key(job: JobInfo) -> tuple[Any, ...]:
    """A sort key equal to :func:`job_fallback` (the lexicographic order of its tuple)."""
    return (_created(job.creation), job.uid, job.namespace, job.name)


def queue_fallback(left: QueueInfo, right: QueueInfo) -> int:
    """Earlier creation first, then smaller UID, then name."""
    return _cmp(
        (_created(left.creation), left.uid, left.name),
        (_created(right.creation), right.uid, right.name),
    )


def pod_index(name: str) -> int | None:
    """The trailing integer of a ``a-b-<n>`` pod name (≥ 3 dash-separated parts)."""
    parts = name.split("-")
    if len(parts) < 3:
        return None
    tail = parts[-1]
    if not tail.isdigit() or not tail.isascii():
        return None
    return int(tail)


def task_fallback(left: TaskInfo, right: TaskInfo) -> int:
    """Smaller pod index, then earlier creation, then UID, namespace, name.

    The pod index is the last dash-separated part of a name of at least three parts, when
    it is an integer (Volcano's ``CompareTask``); namespace and name are tide's tie-break.
    """
    li, ri = pod_index(left.name), pod_index(right.name)
    if li is not None and ri is not None and li != ri:
        return -1 if li < ri else 1
    return _cmp(
        (_created(left.creation), left.uid, left.namespace, left.name),
        (_created(right.creation), right.uid, right.namespace, right.name),
    )


T = TypeVar("T")


class Ordered(Generic[T]):
    """A heap entry ordered by a session comparison (ties are total by construction), so
    allocate's and preempt's queues pop in the session's job / task order."""

    __slots__ = ("cmp", "item")

    def __init__(self, item: T, cmp: Callable[[T, T], int]) -> None:
        self.item = item
        self.cmp = cmp

    def __lt__(self, other: Ordered[T]) -> bool:
        return self.cmp(self.item, other.item) < 0


def task_fallback_key(task: TaskInfo, *, indexed: bool) -> tuple[Any, ...]:
    """A sort key equal to :func:`task_fallback` on a set of tasks that all have a pod
    index (``indexed``) or that all have none.

    :func:`task_fallback` is not transitive on a mix of both (an indexed pair compares by
    index, a mixed pair by creation), so no key can match it there; on either uniform set
    it is the lexicographic order of this tuple (equal indices fall through to the same
    creation / UID / namespace / name tuple).
    """
    rest = (_created(task.creation), task.uid, task.namespace, task.name)
    if indexed:
        index = pod_index(task.name)
        if index is None:
            raise ValueError(f"task {task.namespace}/{task.name} has no pod index")
        return (index, *rest)
    return rest
