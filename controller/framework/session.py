"""The session: one decision cycle's view of the world and its plugins' answers.

Plugins register named callables on open (``add_*_fn``); actions ask questions through
the dispatch methods, which walk the tiers exactly as Volcano's ``session_plugins.go``
does (spec ``volcano.md`` §2.2, §2.3). A session is pure: its only clock is ``now``
(the trigger's time), its state is the world folded up to the trigger plus the
session's own copy-on-write changes (:mod:`controller.framework.view`), and what it
produces is the list of committed decision events in ``decisions``.

Differences from Volcano, on purpose (DESIGN "Deterministic"):

* :meth:`victim_tasks` returns a de-duplicated (by task key) list sorted by
  ``(namespace, name)``, each :class:`Victim` carrying the nominating plugin as
  ``source``, instead of a Go set iterated in random order; when two plugins of one
  tier nominate the same task, the first plugin in tier order names the reason.
* Every comparison ends in a total tie-break (creation, UID, namespace, name).
* :meth:`preemptable` intersects by UID membership: a victim matching several
  candidates is kept once (Volcano's nested loop appends it once per match).
* The rotating start index of ``predicate_nodes`` lives on the session
  (:attr:`predicate_cursor`), not in a process-global variable.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from controller.framework import points as p
from controller.framework.ordering import job_fallback, queue_fallback, task_fallback
from controller.framework.points import (
    SCORE_ERRORS,
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
    Victim,
    VictimTasksFn,
    Vote,
)
from controller.framework.tiers import TierConf
from controller.framework.view import ClusterView, WorldLike
from projections.model import JobInfo, NodeInfo, QueueInfo, Resource, TaskInfo
from streams.events import Event

if TYPE_CHECKING:
    from controller.framework.plugin import Plugin, PluginContext
    from controller.framework.statement import Statement

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


class Session:
    """One cycle: the world at ``now``, the tiers, and the registered plugin callables."""

    def __init__(
        self,
        world: WorldLike,
        trigger: Event,
        *,
        tiers: Sequence[TierConf],
        ctx: PluginContext,
    ) -> None:
        self.world = world
        self.trigger = trigger
        self.now: datetime = trigger.at
        self.ctx = ctx
        self.tiers: tuple[TierConf, ...] = tuple(tiers)
        self.history: Any = world.history
        self.view = ClusterView(world.cluster)
        self.nodes = self.view.nodes
        self.revocable_nodes = self.view.revocable_nodes
        self.jobs = self.view.jobs
        self.queues = self.view.queues
        self.tasks = self.view.tasks
        self.plugins: dict[str, Plugin] = {}
        self.decisions: list[Event] = []
        #: Session-local rotating start index of ``predicate_nodes`` (spec §4.2).
        self.predicate_cursor = 0
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

    def _compare(self, point: str, left: Any, right: Any) -> int:
        for row in self.chain(point):
            for _, fn in row:
                result = int(fn(left, right))
                if result != 0:
                    return result
        return 0

    def job_order_compare(self, left: JobInfo, right: JobInfo) -> int:
        """Negative when ``left`` goes first; the first non-zero plugin answer wins."""
        return self._compare("job_order", left, right) or job_fallback(left, right)

    def task_order_compare(self, left: TaskInfo, right: TaskInfo) -> int:
        return self._compare("task_order", left, right) or task_fallback(left, right)

    def queue_order_compare(self, left: QueueInfo, right: QueueInfo) -> int:
        return self._compare("queue_order", left, right) or queue_fallback(left, right)

    def predicate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Raise the first plugin's :class:`FitError`; return when every plugin passes."""
        for fn in self.flat("predicate"):
            fn(task, node)

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """Sum of scores; a plugin raising FitError/ValueError zeroes the node (spec §2.2)."""
        score = 0.0
        try:
            for fn in self.flat("node_order"):
                score += fn(task, node)
        except SCORE_ERRORS:
            return 0.0
        return score

    def _evictable(
        self, point: str, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> list[TaskInfo]:
        victims: list[TaskInfo] = []  # empty means "not decided yet" (spec §2.3)
        for row in self.chain(point):
            for _, fn in row:
                candidates, vote = fn(preemptor, preemptees)
                if vote == Vote.ABSTAIN:
                    continue
                if not candidates:
                    victims = []
                    break
                if not victims:
                    victims = list(candidates)
                else:
                    keep = {c.uid for c in candidates}
                    victims = [v for v in victims if v.uid in keep]
            if victims:
                return victims
        return victims

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> list[TaskInfo]:
        """Tier-wise intersection; an empty answer cancels only its tier (spec §2.3)."""
        return self._evictable("preemptable", preemptor, preemptees)

    def reclaimable(self, reclaimer: TaskInfo, reclaimees: Sequence[TaskInfo]) -> list[TaskInfo]:
        return self._evictable("reclaimable", reclaimer, reclaimees)

    def victim_tasks(self, tasks: Sequence[TaskInfo]) -> list[Victim]:
        """Union per tier, de-duplicated by task key; the first non-empty tier wins.

        Sorted by ``(namespace, name)``; each victim's ``source`` is its plugin.
        """
        for row in self.chain("victim_tasks"):
            chosen: dict[str, Victim] = {}
            for name, fn in row:
                for victim in fn(tasks):
                    key = victim.task.key
                    if key not in chosen:
                        chosen[key] = (
                            victim
                            if victim.source
                            else Victim(victim.task, victim.reason, victim.evidence, name)
                        )
            if chosen:
                return [chosen[key] for key in sorted(chosen, key=_ns_name)]
        return []

    def job_valid(self, job: JobInfo) -> str | None:
        """The first plugin's reason the job is invalid, or None (no flag is checked)."""
        for row in self.chain("job_valid"):
            for _, fn in row:
                reason = fn(job)
                if reason is not None:
                    return str(reason)
        return None

    def job_ready(self, job: JobInfo) -> bool:
        return all(fn(job) for fn in self.flat("job_ready"))

    def _voted(self, point: str, job: JobInfo) -> bool:
        for row in self.chain(point):
            permitted = False
            for _, fn in row:
                vote = fn(job)
                if vote < 0:
                    return False
                if vote > 0:
                    permitted = True
            if permitted:
                return True
        return True

    def job_pipelined(self, job: JobInfo) -> bool:
        """Any Reject → false; a tier with a Permit → true; all abstain → true."""
        return self._voted("job_pipelined", job)

    def job_enqueueable(self, job: JobInfo) -> bool:
        return self._voted("job_enqueueable", job)

    def job_starving(self, job: JobInfo) -> bool:
        """The first tier with a starving function decides (AND); none anywhere → false."""
        for row in self.chain("job_starving"):
            if row:
                return all(fn(job) for _, fn in row)
        return False

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self.flat("allocatable"))

    def overused(self, queue: QueueInfo) -> bool:
        return any(fn(queue) for fn in self.flat("overused"))

    def preemptive(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return all(fn(queue, task) for fn in self.flat("preemptive"))

    # -- statements and handlers -------------------------------------------------------

    def statement(self) -> Statement:
        """A new, empty statement on this session."""
        from controller.framework.statement import Statement

        return Statement(self)

    def fire_allocate(self, task: TaskInfo) -> None:
        for handler in self._handlers:
            if handler.allocate is not None:
                handler.allocate(task)

    def fire_deallocate(self, task: TaskInfo) -> None:
        for handler in self._handlers:
            if handler.deallocate is not None:
                handler.deallocate(task)

    def total_resource(self) -> Resource:
        """Σ allocatable over the session's nodes (do not mutate)."""
        return self.view.total_resource()

    def job_of(self, task: TaskInfo) -> JobInfo | None:
        """The session job of ``task`` (None when its job is not in the session)."""
        return self.jobs.lookup(task.job)

    # -- open / close ------------------------------------------------------------------

    def open(self, plugins: Sequence[Plugin]) -> None:
        """Let each plugin register its callables (in tier order)."""
        for plugin in plugins:
            self.plugins.setdefault(plugin.name, plugin)
            plugin.on_session_open(self)

    def close(self) -> None:
        for plugin in self.plugins.values():
            plugin.on_session_close(self)


def _ns_name(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return namespace, name


def open_session(
    world: WorldLike,
    trigger: Event,
    *,
    tiers: Sequence[TierConf],
    plugins: Sequence[Plugin],
    ctx: PluginContext,
) -> Session:
    """Build a session over ``world`` at ``trigger.at`` and open ``plugins`` on it."""
    ssn = Session(world, trigger, tiers=tiers, ctx=ctx)
    ssn.open(plugins)
    return ssn
