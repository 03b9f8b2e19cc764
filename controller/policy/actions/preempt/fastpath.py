"""Shortcuts of the preempt action's dry runs that change no answer.

At 5,000 nodes a topology-aware preempt cycle runs thousands of dry runs, and each one
orders a node's victims through the session's pairwise task comparison (every plugin's
``task_order``, then :func:`~controller.policy.framework.ordering.task_fallback`). That
comparison is the same for every dry run of the session, so :class:`TaskRank` replaces
it by a sort key, computed once per task and session, when the key provably gives the
same order:

* the ``task_order`` chain holds only plugin comparisons this module knows a key for
  (:data:`KNOWN_ORDERS`: priority's, higher ``task.priority`` first);
* the tasks sorted together all have a pod index or all have none
  (:func:`~controller.policy.framework.ordering.task_fallback_key`; on a mix the fallback is not
  transitive, so the pairwise sort stays).

Any other chain (a plugin tide does not know a key for) leaves every sort pairwise. The
victims' jobs are sorted the same way by the ``job_order`` chain's keys (priority's,
gang's readiness), recomputed whenever the job changed (memoised per job version), when
every victim's job is in one queue. The equivalence is checked by
tests/controller/policy/actions/preempt/test_fastpath.py (hypothesis), and the action's
decisions with and without these shortcuts by a seeded comparison there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from controller.policy.framework.ordering import job_fallback_key, pod_index, task_fallback_key
from controller.policy.framework.session import Session
from controller.policy.plugins import gang, priority
from projections.model import JobInfo, TaskInfo

#: Plugin task comparisons with an equivalent key (ascending = first in task order).
KNOWN_ORDERS: dict[Any, Callable[[TaskInfo], Any]] = {
    priority.task_order: lambda task: -task.priority,
}
#: Plugin job comparisons with an equivalent key (gang's carries its own, ``SORT_KEY``).
KNOWN_JOB_ORDERS: dict[Any, Callable[[JobInfo], Any]] = {
    priority.job_order: lambda job: -job.priority,
}


def job_key_parts(ssn: Session) -> list[Callable[[JobInfo], Any]] | None:
    """The key functions of ``ssn``'s ``job_order`` chain, or None when a comparison has no
    known key. Gang's readiness changes in a session: :meth:`TaskRank.job_key` keeps a
    key only while its job's version holds."""
    parts: list[Callable[[JobInfo], Any]] = []
    for row in ssn.chain("job_order"):
        for _, fn in row:
            part = KNOWN_JOB_ORDERS.get(fn) or getattr(fn, gang.SORT_KEY, None)
            if part is None:
                return None
            parts.append(part)
    return parts


class TaskRank:
    """The session's task order as a sort key (see the module docstring).

    Args:
        parts: The key functions of the session's ``task_order`` chain, in chain order.
    """

    def __init__(
        self,
        parts: list[Callable[[TaskInfo], Any]],
        job_parts: list[Callable[[JobInfo], Any]] | None = None,
    ) -> None:
        self._parts = parts
        #: the job order's key functions, or None (sort jobs pairwise)
        self.job_parts = job_parts
        #: task key → (has a pod index, sort key): the fields read never change in a session
        self._memo: dict[str, tuple[bool, tuple[Any, ...]]] = {}
        #: the same by task object (the object is kept, so its id is never reused)
        self._ids: dict[int, tuple[TaskInfo, tuple[bool, tuple[Any, ...]]]] = {}
        #: node → the memo of its reading that takes the entries computed (:meth:`adopt`)
        self._stores: dict[str, dict[int, tuple[TaskInfo, tuple[bool, tuple[Any, ...]]]]] = {}
        #: job id → the job order's fallback key
        self._job_rest: dict[str, tuple[Any, ...]] = {}
        #: the session's job versions
        #: (:meth:`~controller.policy.framework.view.ClusterView.job_version`),
        #: or None: then every job key is computed afresh
        self.job_version: Callable[[JobInfo], tuple[int, int]] | None = None
        #: job id → (the job object, its version, its whole key), see :meth:`job_key`
        self._job_keys: dict[str, tuple[JobInfo, tuple[int, int], tuple[Any, ...]]] = {}
        #: the projection's memo of a job the session has not changed, or None
        #: (:meth:`~controller.policy.framework.view.ClusterView.preempt_job_memo`)
        self.job_memo: Callable[[JobInfo], dict[Any, Any] | None] | None = None
        #: where a job's key goes in that memo: the job order's parts, by their code (a
        #: session's gang part is a new closure of the same code)
        self._job_slot = ("job-key", tuple(getattr(p, "__code__", p) for p in job_parts or []))

    @classmethod
    def of(cls, ssn: Session) -> TaskRank | None:
        """The rank of ``ssn``'s task order, or None when a plugin's comparison has no
        known key."""
        parts: list[Callable[[TaskInfo], Any]] = []
        for row in ssn.chain("task_order"):
            for _, fn in row:
                part = KNOWN_ORDERS.get(fn)
                if part is None:
                    return None
                parts.append(part)
        rank = cls(parts, job_key_parts(ssn))
        rank.job_version = ssn.view.job_version
        rank.job_memo = getattr(ssn.view, "preempt_job_memo", None)
        return rank

    def job_key(self, job: JobInfo) -> tuple[Any, ...]:
        """``job``'s key in the session's job order now (only when ``job_parts`` is set).

        The fallback part (creation, UID, namespace, name) never changes in a session and
        is memoised per job. The whole key is memoised while the job is the same object at
        the same :attr:`job_version`: every part the fast path knows is a function of the
        job's fields (:data:`KNOWN_JOB_ORDERS`' priority, gang's readiness, which gang
        itself memoises by that version), and the session changes a job's fields only
        through a new object or a new version. A job the session has not changed keeps its
        key in the projection's memo (:attr:`job_memo`) from one session to the next,
        until the fold changes the job.
        """
        if self.job_memo is not None:
            kept = self.job_memo(job)
            if kept is not None:
                found: tuple[Any, ...] | None = kept.get(self._job_slot)
                if found is None:
                    found = kept[self._job_slot] = self._fresh_job_key(job)
                return found
        version = None
        if self.job_version is not None:
            version = self.job_version(job)
            hit = self._job_keys.get(job.id)
            if hit is not None and hit[0] is job and hit[1] == version:
                return hit[2]
        key = self._fresh_job_key(job)
        if version is not None:
            self._job_keys[job.id] = (job, version, key)
        return key

    def _fresh_job_key(self, job: JobInfo) -> tuple[Any, ...]:
        parts = self.job_parts or []
        rest = self._job_rest.get(job.id)
        if rest is None:
            rest = self._job_rest[job.id] = job_fallback_key(job)
        return (*(part(job) for part in parts), *rest)

    def entry(self, task: TaskInfo) -> tuple[bool, tuple[Any, ...]]:
        """Whether ``task`` has a pod index, and its key among tasks alike in that."""
        ident = id(task)
        hit = self._ids.get(ident)
        if hit is not None and hit[0] is task:
            return hit[1]
        name = task.key
        found = self._memo.get(name)
        if found is None:
            indexed = pod_index(task.name) is not None
            key = (
                *[part(task) for part in self._parts],
                *task_fallback_key(task, indexed=indexed),
            )
            found = self._memo[name] = (indexed, key)
        self._ids[ident] = (task, found)
        store = self._stores.get(task.node_name)
        if store is not None:
            store[ident] = (task, found)
        return found

    def adopt(self, node: str, memo: dict[Any, Any]) -> None:
        """Take the entries kept in ``memo`` (the memo of node ``node``'s reading, kept
        across sessions: :class:`projections.preemptindex.NodeVictims`) and keep there the
        entries computed from now on for tasks of that node. An entry is a function of
        the order's key functions (part of the memo's slot) and of fields of the task
        object that the fold never changes in place (priority, creation, UID, namespace,
        name); the memo holds each object it has an entry for, so an id is never reused.
        """
        slot = ("rank", tuple(self._parts))
        held: dict[int, tuple[TaskInfo, tuple[bool, tuple[Any, ...]]]] | None = memo.get(slot)
        if held is None:
            held = memo[slot] = {}
        elif held:
            self._ids.update(held)
        self._stores[node] = held

    def sort(self, tasks: list[TaskInfo], *, reverse: bool = False) -> list[TaskInfo] | None:
        """``tasks`` in task order (``reverse``: last first), or None when they mix tasks
        with and without a pod index (sort them pairwise then).

        Keys end in namespace and name, so two tasks never tie and the sort never
        compares the tasks themselves.
        """
        entries = [self.entry(task) for task in tasks]
        first = entries[0][0] if entries else False
        if any(indexed is not first for indexed, _ in entries):
            return None
        pairs = sorted(zip((key for _, key in entries), tasks, strict=True), reverse=reverse)
        return [task for _, task in pairs]
