"""Extension-point registration and the tier chains the session walks.

Kept apart from :mod:`controller.framework.session` (which holds the view and the
aggregation rules) so each stays readable: this half answers "which callables take part
in a question, in which order" (tiers, per-entry enable flags, spec §2.1), and keeps the
memos that keyed callables allow (``add_predicate_fn(key=...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from controller.framework import points as p
from controller.framework.points import (
    AllocatableFn,
    EventFn,
    EventHandler,
    EvictableFn,
    JobEnqueueableFn,
    JobOrderFn,
    JobPipelinedFn,
    JobReadyFn,
    JobStarvingFn,
    JobValidFn,
    NodeOrderFn,
    OverusedFn,
    PredicateFn,
    QueueOrderFn,
    TaskOrderFn,
    VictimTasksFn,
)
from controller.framework.tiers import TierConf
from projections.model import TaskInfo

#: extension point -> the enable flag that gates it (None: no flag is checked).
POINT_FLAGS: dict[str, str | None] = {
    "job_order": p.JOB_ORDER,
    "task_order": p.TASK_ORDER,
    "queue_order": p.QUEUE_ORDER,
    "predicate": p.PREDICATE,
    "node_order": p.NODE_ORDER,
    "preemptable": p.PREEMPTABLE,
    "reclaimable": p.RECLAIMABLE,
    "victim_tasks": p.VICTIM,
    "job_valid": None,
    "job_ready": p.JOB_READY,
    "job_pipelined": p.JOB_PIPELINED,
    "job_starving": p.JOB_STARVING,
    "job_enqueueable": p.JOB_ENQUEUED,
    "allocatable": p.ALLOCATABLE,
    "overused": p.OVERUSED,
    "preemptive": p.PREEMPTIVE,
}

Chain = list[list[tuple[str, Any]]]  # per tier: (plugin name, callable) in order


class Extensions:
    """The registered callables of one session, and their order by tier."""

    def __init__(self, tiers: Sequence[TierConf]) -> None:
        self.tiers: tuple[TierConf, ...] = tuple(tiers)
        self._fns: dict[str, dict[str, list[Any]]] = {point: {} for point in POINT_FLAGS}
        self._handlers: list[EventHandler] = []
        self._chains: dict[str, Chain] = {}
        self._flats: dict[str, list[Any]] = {}
        self._keys: dict[str, dict[str, Callable[[TaskInfo], Hashable] | None]] = {
            "predicate": {},
            "node_order": {},
        }
        self._memos: dict[Hashable, dict[int, Any]] = {}

    # -- registration ------------------------------------------------------------------

    def _add(self, point: str, plugin: str, fn: Any, *, many: bool = False) -> None:
        fns = self._fns[point]
        if many:
            fns.setdefault(plugin, []).append(fn)
        else:
            fns[plugin] = [fn]  # Volcano's maps keep the last registration
        self._chains.pop(point, None)
        self._flats.pop(point, None)

    def add_job_order_fn(self, plugin: str, fn: JobOrderFn) -> None:
        self._add("job_order", plugin, fn)

    def add_task_order_fn(self, plugin: str, fn: TaskOrderFn) -> None:
        self._add("task_order", plugin, fn)

    def add_queue_order_fn(self, plugin: str, fn: QueueOrderFn) -> None:
        self._add("queue_order", plugin, fn)

    def add_predicate_fn(
        self, plugin: str, fn: PredicateFn, *, key: Callable[[TaskInfo], Hashable] | None = None
    ) -> None:
        """Register a predicate (raises :class:`FitError` to reject a node).

        ``key``, when given, is a promise: the predicate's answer for a node depends only
        on ``key(task)`` and on the node's state. The session may then reuse an answer
        for any task with the same key while the node is unchanged in this session
        (Volcano's predicate error cache makes the same assumption per job and role).
        """
        self._add("predicate", plugin, fn)
        self._keys["predicate"][plugin] = key

    def add_node_order_fn(
        self, plugin: str, fn: NodeOrderFn, *, key: Callable[[TaskInfo], Hashable] | None = None
    ) -> None:
        """Register a node score; ``key`` as for :meth:`add_predicate_fn`."""
        self._add("node_order", plugin, fn)
        self._keys["node_order"][plugin] = key

    def add_preemptable_fn(self, plugin: str, fn: EvictableFn) -> None:
        self._add("preemptable", plugin, fn)

    def add_reclaimable_fn(self, plugin: str, fn: EvictableFn) -> None:
        self._add("reclaimable", plugin, fn)

    def add_victim_tasks_fn(self, plugin: str, fn: VictimTasksFn) -> None:
        """Victim functions accumulate: a plugin may register several (as in Volcano)."""
        self._add("victim_tasks", plugin, fn, many=True)

    def add_job_valid_fn(self, plugin: str, fn: JobValidFn) -> None:
        self._add("job_valid", plugin, fn)

    def add_job_ready_fn(self, plugin: str, fn: JobReadyFn) -> None:
        self._add("job_ready", plugin, fn)

    def add_job_pipelined_fn(self, plugin: str, fn: JobPipelinedFn) -> None:
        self._add("job_pipelined", plugin, fn)

    def add_job_starving_fn(self, plugin: str, fn: JobStarvingFn) -> None:
        self._add("job_starving", plugin, fn)

    def add_job_enqueueable_fn(self, plugin: str, fn: JobEnqueueableFn) -> None:
        self._add("job_enqueueable", plugin, fn)

    def add_allocatable_fn(self, plugin: str, fn: AllocatableFn) -> None:
        self._add("allocatable", plugin, fn)

    def add_overused_fn(self, plugin: str, fn: OverusedFn) -> None:
        self._add("overused", plugin, fn)

    def add_preemptive_fn(self, plugin: str, fn: AllocatableFn) -> None:
        self._add("preemptive", plugin, fn)

    def add_event_handler(
        self, plugin: str, *, allocate: EventFn | None = None, deallocate: EventFn | None = None
    ) -> None:
        """Callbacks run by every statement operation (no flag gates them, as in Volcano)."""
        self._handlers.append(EventHandler(plugin, allocate, deallocate))

    # -- tier walk -------------------------------------------------------------------

    def chain(self, point: str) -> Chain:
        """The enabled, registered callables of ``point``, tier by tier, in order."""
        cached = self._chains.get(point)
        if cached is not None:
            return cached
        flag = POINT_FLAGS[point]
        fns = self._fns[point]
        result: Chain = []
        for tier in self.tiers:
            row: list[tuple[str, Any]] = []
            for conf in tier.plugins:
                if conf.name in fns and (flag is None or conf.enabled(flag)):
                    row.extend((conf.name, fn) for fn in fns[conf.name])
            result.append(row)
        self._chains[point] = result
        return result

    def flat(self, point: str) -> list[Any]:
        """The callables of ``point`` in tier order, flattened (for hot loops)."""
        flat = self._flats.get(point)
        if flat is None:
            flat = self._flats[point] = [fn for row in self.chain(point) for _, fn in row]
        return flat

    def plan(self, point: str, task: TaskInfo) -> list[tuple[Any, dict[int, Any] | None]]:
        """``point``'s callables for ``task``, each with its memo (node index → (version,
        answer)) when its plugin registered a key, else None. For the node-search hot loop.
        """
        keys = self._keys[point]
        out: list[tuple[Any, dict[int, Any] | None]] = []
        for row in self.chain(point):
            for name, fn in row:
                key = keys.get(name)
                memo = None
                if key is not None:
                    memo = self._memos.setdefault((point, name, key(task)), {})
                out.append((fn, memo))
        return out

    # -- event handlers ----------------------------------------------------------------

    def fire_allocate(self, task: TaskInfo) -> None:
        for handler in self._handlers:
            if handler.allocate is not None:
                handler.allocate(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for handler in self._handlers:
            if handler.deallocate is not None:
                handler.deallocate(task)
