"""Extension-point registration and the tier chains the session walks.

Kept apart from :mod:`controller.policy.framework.session` (which holds the view and the
aggregation rules) so each stays readable: this half answers "which callables take part
in a question, in which order" (tiers, per-entry enable flags that count only when set
and true, as volcano-sh/volcano pkg/scheduler/framework/session_plugins.go ``isEnabled``),
and keeps the
memos that keyed callables allow (``add_predicate_fn(key=...)``). The simulate hooks'
walks live here too (:meth:`Extensions.simulate_predicate` and the others): they are
plain tier walks, run by :class:`controller.policy.framework.simulate.Scratch`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from controller.policy.framework import points as p
from controller.policy.framework.points import (
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
    SimulateAllocatableFn,
    SimulatePredicateFn,
    SimulateTaskFn,
    TaskOrderFn,
    VictimTasksFn,
)
from controller.policy.framework.tiers import TierConf
from projections.model import JobInfo, NodeInfo, QueueInfo, TaskInfo

if TYPE_CHECKING:
    from controller.policy.framework.simulate import Scratch

#: extension point -> the enable flag that gates it (None: no flag is checked; a tuple:
#: any one of the flags enables it).
POINT_FLAGS: dict[str, str | tuple[str, ...] | None] = {
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
    # Volcano's session_plugins.go gates the simulate task hooks by "preemptable or
    # allocatable", the simulate predicate by the predicate flag, and the simulate
    # allocatable by the allocatable flag.
    "simulate_add_task": (p.PREEMPTABLE, p.ALLOCATABLE),
    "simulate_remove_task": (p.PREEMPTABLE, p.ALLOCATABLE),
    "simulate_predicate": p.PREDICATE,
    "simulate_allocatable": p.ALLOCATABLE,
}


def _gated(flag: str | tuple[str, ...] | None, enabled: Callable[[str], bool]) -> bool:
    if flag is None:
        return True
    if isinstance(flag, str):
        return enabled(flag)
    return any(enabled(f) for f in flag)


Chain = list[list[tuple[str, Any]]]  # per tier: (plugin name, callable) in order
#: scores of one task on many view nodes (positions in the view's node list), in order
BatchScoreFn = Callable[[TaskInfo, Sequence[int]], list[float]]
#: an upper bound on a node score: for ``task``, a column over the view's nodes (the same
#: list object on every call, kept current by the plugin) and a slack, with
#: ``fn(task, node_list[i]) <= column[i] + slack`` for every node ``i`` where ``fn``
#: returns; None when the plugin cannot bound ``task``'s scores
BoundFn = Callable[[TaskInfo], tuple[Sequence[float], float] | None]
#: one node-order entry for the pruned node choice: plugin name, ``key(task)`` (None when
#: the plugin registered no key or has a bound), the function, its batch and its bound
BoundEntry = tuple[str, Hashable | None, Any, BatchScoreFn | None, BoundFn | None]


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
        #: plugin -> the sort key equal to its job order (``add_job_order_fn(key=)``)
        self._job_keys: dict[str, Callable[[JobInfo], Any] | None] = {}
        #: memo ids of a predicate plan -> per node, the node version at which every
        #: predicate of the plan passed (see :meth:`passes`)
        self._passes: dict[tuple[int, ...], list[int]] = {}
        #: the same, for the version at which the plan refused the node, and its error
        self._refusals: dict[tuple[int, ...], tuple[list[int], list[Any]]] = {}
        #: plugin -> its node scores over many nodes at once (``add_node_order_fn(batch=)``)
        self._batches: dict[str, BatchScoreFn | None] = {}
        #: plugin -> its upper bound on its node scores (``add_node_order_fn(bound=)``)
        self._bounds: dict[str, BoundFn | None] = {}
        #: columns the pruned node choice keeps for this session
        #: (:mod:`controller.policy.framework.pruning`)
        self.score_columns: dict[Hashable, Any] = {}

    # -- registration ------------------------------------------------------------------

    def _add(self, point: str, plugin: str, fn: Any, *, many: bool = False) -> None:
        fns = self._fns[point]
        if many:
            fns.setdefault(plugin, []).append(fn)
        else:
            fns[plugin] = [fn]  # Volcano's maps keep the last registration
        self._chains.pop(point, None)
        self._flats.pop(point, None)

    def add_job_order_fn(
        self, plugin: str, fn: JobOrderFn, *, key: Callable[[JobInfo], Any] | None = None
    ) -> None:
        """Register a job comparison (negative: ``left`` first; 0: no opinion).

        ``key``, when given, is a promise: ``fn(left, right)`` has the sign of comparing
        ``key(left)`` with ``key(right)`` (ascending = first), and ``key(job)`` changes only
        when the job does. Callers that order many jobs may then compare keys instead
        (:meth:`job_order_keys`).
        """
        self._add("job_order", plugin, fn)
        self._job_keys[plugin] = key

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
        ``key(task)`` returning None withdraws the promise for that task: no memo.
        """
        self._add("predicate", plugin, fn)
        self._keys["predicate"][plugin] = key

    def add_node_order_fn(
        self,
        plugin: str,
        fn: NodeOrderFn,
        *,
        key: Callable[[TaskInfo], Hashable] | None = None,
        batch: BatchScoreFn | None = None,
        bound: BoundFn | None = None,
    ) -> None:
        """Register a node score; ``key`` as for :meth:`add_predicate_fn`.

        ``batch``, when given, is a promise too: ``batch(task, indices)`` returns, for the
        view's nodes at ``indices`` (positions in ``ClusterView.node_list``), exactly the
        floats ``fn`` would return for them now, never NaN; it raises what ``fn`` would
        raise for one of them. Allocate's node choice then scores many nodes per call.

        ``bound`` (:data:`BoundFn`), when given, promises an upper bound on ``fn``'s
        scores; allocate's node choice then scores exactly only the nodes whose bound
        can still reach the best (:mod:`controller.policy.framework.pruning`).
        """
        self._add("node_order", plugin, fn)
        self._keys["node_order"][plugin] = key
        self._batches[plugin] = batch
        self._bounds[plugin] = bound

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

    def add_simulate_add_task_fn(self, plugin: str, fn: SimulateTaskFn) -> None:
        """Volcano's ``AddSimulateAddTaskFn``: account a task placed on a scratch node."""
        self._add("simulate_add_task", plugin, fn)

    def add_simulate_remove_task_fn(self, plugin: str, fn: SimulateTaskFn) -> None:
        """Volcano's ``AddSimulateRemoveTaskFn``: account a task taken off a scratch node."""
        self._add("simulate_remove_task", plugin, fn)

    def add_simulate_predicate_fn(self, plugin: str, fn: SimulatePredicateFn) -> None:
        """Volcano's ``AddSimulatePredicateFn``: a predicate over a scratch node."""
        self._add("simulate_predicate", plugin, fn)

    def add_simulate_allocatable_fn(self, plugin: str, fn: SimulateAllocatableFn) -> None:
        """Volcano's ``AddSimulateAllocatableFn``: queue admission on scratch shares."""
        self._add("simulate_allocatable", plugin, fn)

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
                if conf.name in fns and _gated(flag, conf.enabled):
                    row.extend((conf.name, fn) for fn in fns[conf.name])
            result.append(row)
        self._chains[point] = result
        return result

    def job_order_keys(self) -> list[Callable[[JobInfo], Any]] | None:
        """The sort keys of the ``job_order`` chain, in chain order; None when a plugin of
        the chain registered its comparison without one."""
        keys = self._job_keys
        out: list[Callable[[JobInfo], Any]] = []
        for row in self.chain("job_order"):
            for name, _ in row:
                key = keys.get(name)
                if key is None:
                    return None
                out.append(key)
        return out

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
                value = key(task) if key is not None else None
                if value is not None:
                    memo = self._memos.setdefault((point, name, value), {})
                out.append((fn, memo))
        return out

    def passes(self, plan: list[tuple[Any, dict[int, Any] | None]], nodes: int) -> list[int] | None:
        """For a predicate ``plan`` whose callables are all keyed, one list over the
        session's ``nodes``: the node version at which all of them passed (-1 when not
        known), shared by every task with the same keys. None when one is not keyed.
        """
        ids: list[int] = []
        for _, memo in plan:
            if memo is None:
                return None
            ids.append(id(memo))  # the memos live as long as the session
        found = self._passes.get(tuple(ids))
        if found is None:
            found = self._passes[tuple(ids)] = [-1] * nodes
        return found

    def refusals(
        self, plan: list[tuple[Any, dict[int, Any] | None]], nodes: int
    ) -> tuple[list[int], list[Any]]:
        """For a predicate ``plan`` whose callables are all keyed (:meth:`passes` is not
        None), per node the version at which the plan refused it (-1 when not known) and
        the refusal (the first refusing callable's error), shared as :meth:`passes` is.
        """
        ids = tuple(id(memo) for _, memo in plan)
        found = self._refusals.get(ids)
        if found is None:
            found = self._refusals[ids] = ([-1] * nodes, [None] * nodes)
        return found

    def score_plan(
        self, task: TaskInfo
    ) -> list[tuple[Any, dict[int, Any] | None, BatchScoreFn | None]]:
        """The node-order callables for ``task`` in tier order, each with its memo (as
        :meth:`plan`; None when the plugin has a batch) and its batch (or None)."""
        keys = self._keys["node_order"]
        out: list[tuple[Any, dict[int, Any] | None, BatchScoreFn | None]] = []
        for row in self.chain("node_order"):
            for name, fn in row:
                batch = self._batches.get(name)
                key = keys.get(name)
                memo = None
                if batch is None and key is not None:
                    memo = self._memos.setdefault(("node_order", name, key(task)), {})
                out.append((fn, memo, batch))
        return out

    def bound_plan(self, task: TaskInfo) -> list[BoundEntry]:
        """The node-order callables for ``task`` in tier order, as the pruned node
        choice needs them (:data:`BoundEntry`)."""
        keys = self._keys["node_order"]
        out: list[BoundEntry] = []
        for row in self.chain("node_order"):
            for name, fn in row:
                key, bound = keys.get(name), self._bounds.get(name)
                value = key(task) if key is not None and bound is None else None
                out.append((name, value, fn, self._batches.get(name), bound))
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

    # -- simulate hooks (run by controller.policy.framework.simulate.Scratch) -----------------

    def simulate_add_task(
        self, scratch: Scratch, to_schedule: TaskInfo, added: TaskInfo, node: NodeInfo
    ) -> None:
        """Volcano's ``Session.SimulateAddTaskFn``: every hook in tier order; the first
        :class:`FitError` raised stops the walk and propagates."""
        for fn in self.flat("simulate_add_task"):
            fn(scratch, to_schedule, added, node)

    def simulate_remove_task(
        self, scratch: Scratch, to_schedule: TaskInfo, removed: TaskInfo, node: NodeInfo
    ) -> None:
        """Volcano's ``Session.SimulateRemoveTaskFn`` (as :meth:`simulate_add_task`)."""
        for fn in self.flat("simulate_remove_task"):
            fn(scratch, to_schedule, removed, node)

    def simulate_predicate(self, scratch: Scratch, task: TaskInfo, node: NodeInfo) -> None:
        """Volcano's ``Session.SimulatePredicateFn``: the first hook's :class:`FitError`."""
        for fn in self.flat("simulate_predicate"):
            fn(scratch, task, node)

    def simulate_allocatable(self, scratch: Scratch, queue: QueueInfo, task: TaskInfo) -> bool:
        """Volcano's ``Session.SimulateAllocatableFn``: every hook must say yes."""
        return all(fn(scratch, queue, task) for fn in self.flat("simulate_allocatable"))
