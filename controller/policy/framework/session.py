"""The session: one decision cycle's view of the world and its plugins' answers.

Plugins register named callables on open (``add_*_fn``); actions ask questions through the dispatch
methods, which walk the tiers exactly as Volcano's ``session_plugins.go`` does (volcano-sh/volcano
pkg/scheduler/framework/session_plugins.go: ``Session.Preemptable``, ``Session.NodeOrderFn``,
``Session.JobPipelined`` and the rest). A session is pure: its only clock is ``now`` (the trigger's
time), its state is the world folded up to the trigger plus the session's own copy-on-write changes
(:mod:`controller.policy.framework.view`), and what it produces is the list of committed decision
events in
``decisions``.

Differences from Volcano, on purpose (a session's outcome must depend only on the log):

* :meth:`victim_tasks` returns a de-duplicated (by task key) list sorted by
  ``(namespace, name)``, each :class:`Victim` carrying the nominating plugin as
  ``source``, instead of a Go set iterated in random order; when two plugins of one
  tier nominate the same task, the first plugin in tier order names the reason.
* Every comparison ends in a total tie-break (creation, UID, namespace, name).
* :meth:`preemptable` intersects by UID membership: a victim matching several
  candidates is kept once (Volcano's nested loop appends it once per match).
* Victims are only tasks tide owns and may evict (``projections.ownership``): a pod of
  another scheduler, a DaemonSet pod and a mirror pod are dropped from the candidates of
  :meth:`preemptable` / :meth:`reclaimable` and from :meth:`victim_tasks`' answers.
* The rotating start index of ``predicate_nodes`` lives on the session
  (:attr:`predicate_cursor`), not in a process-global variable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from controller.policy.framework.disruption import Disruptions
from controller.policy.framework.extensions import Extensions
from controller.policy.framework.ordering import (
    job_fallback,
    job_fallback_key,
    queue_fallback,
    task_fallback,
)
from controller.policy.framework.points import (
    SCORE_ERRORS,
    Victim,
    Vote,
)
from controller.policy.framework.tiers import TierConf
from controller.policy.framework.view import ClusterView
from projections.history import History
from projections.model import JobInfo, NodeInfo, QueueInfo, Resource, TaskInfo
from projections.oom import OOMState
from projections.ownership import LEGACY, Rules, may_be_victim
from projections.pressure import PressureState
from projections.usage import UsageState
from projections.world import PolicyInputs
from streams.events import Event
from streams.payloads import as_trigger

if TYPE_CHECKING:
    from controller.policy.framework.plugin import Plugin, PluginContext
    from controller.policy.framework.statement import Statement


class Session(Extensions):
    """One cycle: the world at ``now``, the tiers, and the registered plugin callables."""

    def __init__(
        self,
        world: PolicyInputs,
        trigger: Event,
        *,
        tiers: Sequence[TierConf],
        ctx: PluginContext,
    ) -> None:
        self.world = world
        self.trigger = trigger
        self.now: datetime = trigger.at
        self.ctx = ctx
        super().__init__(tiers)
        #: the policy inputs, typed: what the log says beyond the cluster
        self.history: History = world.history
        #: the ownership rules and behaviour level in force (projections.ownership)
        self.rules: Rules = getattr(world.cluster, "rules", LEGACY)
        self.usage: UsageState = world.usage
        self.oom: OOMState = world.oom
        self.pressure: PressureState = world.pressure
        #: the trigger's kind (``tick``, ``window-end``, ...), or None for a bare trigger
        kind = as_trigger(trigger).get("kind")
        self.trigger_kind: str | None = kind if isinstance(kind, str) else None
        self.view = ClusterView(world.cluster)
        self.nodes = self.view.nodes
        self.revocable_nodes = self.view.revocable_nodes
        self.jobs = self.view.jobs
        self.queues = self.view.queues
        self.tasks = self.view.tasks
        self.plugins: dict[str, Plugin] = {}
        self.decisions: list[Event] = []
        self._disruptions: Disruptions | None = None
        #: Session-local rotating start index of ``predicate_nodes`` (Volcano keeps a
        #: process-global one: pkg/scheduler/util/predicate_helper.go, ``PredicateNodes``).
        self.predicate_cursor = 0
        #: whether the action running now is the last of the cycle (set by
        #: ``controller.policy.engine.run_cycle``): its statements may then commit without
        #: staging in the session, since no later question reads it
        #: (``Statement.commit_evictions``). False for a caller that runs actions itself.
        self.last_action = False

    @property
    def disruptions(self) -> Disruptions:
        """The PodDisruptionBudgets in force and what this session has spent of them
        (:mod:`controller.policy.framework.disruption`); built on first use."""
        found = self._disruptions
        if found is None:
            pdbs = getattr(self.world, "pdbs", None)
            budgets = getattr(pdbs, "budgets", None)
            found = self._disruptions = Disruptions(
                budgets if isinstance(budgets, dict) else {},
                self.world.cluster.tasks,
                self.tasks,
            )
        return found

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

    def job_order_key(self) -> Callable[[JobInfo], tuple[Any, ...]] | None:
        """A sort key of the session's job order (ascending = first), or None when some
        plugin of the ``job_order`` chain registered no key for its comparison.

        Comparing two jobs' keys (as tuples) has the sign of :meth:`job_order_compare`
        while neither job changes: the plugins' keys in chain order (the first that differs
        decides, as the first non-zero answer does), then :func:`job_fallback_key`.
        """
        parts = self.job_order_keys()
        if parts is None:
            return None
        if len(parts) == 3:  # the usual chain (priority, gang, tdm): no generator
            first, second, third = parts

            def key3(job: JobInfo) -> tuple[Any, ...]:
                return (first(job), second(job), third(job), *job_fallback_key(job))

            return key3

        def key(job: JobInfo) -> tuple[Any, ...]:
            return (*(part(job) for part in parts), *job_fallback_key(job))

        return key

    def task_order_compare(self, left: TaskInfo, right: TaskInfo) -> int:
        return self._compare("task_order", left, right) or task_fallback(left, right)

    def queue_order_compare(self, left: QueueInfo, right: QueueInfo) -> int:
        return self._compare("queue_order", left, right) or queue_fallback(left, right)

    def predicate(self, task: TaskInfo, node: NodeInfo) -> None:
        """Raise the first plugin's :class:`FitError`; return when every plugin passes."""
        for fn in self.flat("predicate"):
            fn(task, node)

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        """Sum of scores; a plugin raising FitError/ValueError zeroes the node.

        Volcano's ``Session.NodeOrderFn`` returns ``(0, err)`` at the first plugin error.
        """
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
        # tide's rule: a pod tide does not own, a DaemonSet pod and a mirror pod are never
        # offered to the plugins (projections.ownership.may_be_victim)
        if not all(map(may_be_victim, preemptees)):
            preemptees = [task for task in preemptees if may_be_victim(task)]
        victims: list[TaskInfo] = []  # empty means "not decided yet", as upstream
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
        """Tier-wise intersection; an empty answer cancels only its tier.

        Volcano's ``Session.Preemptable``: an abstaining plugin is skipped, the first
        non-abstaining one seeds the victims, later ones intersect by UID; a plugin
        answering no candidates clears the victims and ends its tier; the first tier that
        ends with victims decides.
        """
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
                    if key not in chosen and may_be_victim(victim.task):
                        chosen[key] = (
                            victim
                            if victim.source
                            else Victim(victim.task, victim.reason, victim.evidence, name)
                        )
            if chosen:
                # (namespace, name) read off the task: the same order as splitting the key
                # (names hold no "/"), without a Python call per victim
                return sorted(chosen.values(), key=_VICTIM_ORDER)
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
        from controller.policy.framework.statement import Statement

        return Statement(self)

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

    def dispose(self) -> None:
        """Drop everything the session holds; it is unusable afterwards.

        Why: the session is the hub of many reference cycles (the plugins' registered
        closures, statements and memos all point back at it), so a session merely dropped
        leaves its whole graph (views, clones, memos) for the cyclic collector, which was
        a tenth of a replay. Emptied, reference counting frees it at once. Only for an
        owner that will ask it nothing more (:func:`controller.policy.engine.run_cycle`, after
        reading ``decisions``).
        """
        self.view.__dict__.clear()  # its job view calls back into it: a cycle too
        self.__dict__.clear()


_VICTIM_ORDER = attrgetter("task.namespace", "task.name")


def open_session(
    world: PolicyInputs,
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
