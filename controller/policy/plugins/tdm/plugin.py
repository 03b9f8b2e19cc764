"""The TDM (time-division multiplexing) plugin: revocable zones used only inside a window.

Nodes labelled ``volcano.sh/revocable-zone=<zone>`` may run opted-in workloads (tasks with a
revocable zone, i.e. ``volcano.sh/preemptable: "true"`` or ``volcano.sh/revocable-zone:
"*"``) only while the zone's daily window is open; once it closes, such tasks are nominated
for eviction a budget at a time. Upstream: volcano-sh/volcano
pkg/scheduler/plugins/tdm/tdm.go, ``tdmPlugin.OnSessionOpen`` (design note: the same
repository's docs/design/tdm-plugin.md). The callbacks:

* **predicate**: a normal node passes; a revocable node fails (unresolvable) when its zone
  is unknown or closed, or when the task has no revocable zone;
* **node order**: 100 for a revocable task on a node of an open zone, else 0;
* **preemptable**: a non-preemptable, non-revocable preemptor may preempt Running
  preemptable tasks on *normal* nodes, at most ``max_evict(job)`` per job (reason code
  ``tdm-preempt`` when the preempt action evicts them);
* **victim tasks**: for every closed zone whose evict period has elapsed, the Running
  preemptable tasks on that zone's revocable nodes, per job the first ``max_evict(job)`` in
  the defined order that no PodDisruptionBudget forbids, counting the victims chosen
  before them (:mod:`controller.policy.framework.disruption`), reason ``tdm-window-closed``;
* **job order**: non-preemptable jobs first; **job pipelined**: Volcano's ``is_pipelined``;
  **job starving**: a non-preemptable job with Pending tasks.

State: none between sessions. Time is ``ssn.now``; the evict timer is the last TDM eviction
recorded on the log (``ssn.history``), never a module global. See
``controller.policy.plugins.tdm.DIFFERENCES`` for where this departs from Volcano, and why.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.points import FitError, FitStatus, Victim, Vote, build_victim
from controller.policy.plugins.tdm.args import TdmArgs, Zone
from controller.policy.plugins.tdm.budget import Budget, first_victim, job_budget, order_victims
from projections.behaviour import TDM_BUDGET_PER_PERIOD
from projections.model import JSON, JobInfo, NodeInfo, TaskInfo, TaskStatus
from streams.events import format_time

if TYPE_CHECKING:
    from controller.policy.framework.session import Session
    from projections.history import History
    from projections.queuetotals import QueueTotals

NAME = "tdm"
MAX_NODE_SCORE = 100.0
REASON_WINDOW_CLOSED = "tdm-window-closed"
REASON_PREEMPT = "tdm-preempt"
ORDER_TEXT = "priority asc, start time desc (none = newest), namespace, name, uid"

_ALLOCATED = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
)
_WAITING_OR_READY = _ALLOCATED | {TaskStatus.SUCCEEDED, TaskStatus.PIPELINED}


def last_tdm_eviction(history: Any, zone: str | None) -> datetime | None:
    """The last TDM eviction in ``zone`` (``None``: in any zone), from the history projection."""
    if history is None:
        return None
    value = history.last_tdm_eviction(zone)
    return value if isinstance(value, datetime) else None


def is_pipelined(job: JobInfo) -> bool:
    """Volcano's ``JobInfo.IsPipelined``: waiting + ready + pending best-effort ≥ min."""
    count = sum(
        1
        for task in job.tasks.values()
        if task.status in _WAITING_OR_READY
        or (task.status == TaskStatus.PENDING and task.best_effort)
    )
    return count >= job.min_available


class TdmPlugin:
    """One configured TDM plugin; registers its callbacks on every session."""

    def __init__(self, args: TdmArgs, ctx: PluginContext) -> None:
        self.name = NAME
        self.args = args
        self.timezone = ctx.timezone
        self._zones: dict[str, Zone] = {zone.name: zone for zone in args.zones}
        #: evidence text fixed by the configuration, formatted once (not per victim)
        self.evict_period_text = args.evict_period_text
        self.evict_timer_text = "shared" if args.shared_timer else "per-zone"
        #: jobs the latest victim round skipped because their budget annotation is invalid
        #: (diagnostics only; nothing decides on it)
        self.budget_errors: list[JSON] = []

    # -- session wiring ---------------------------------------------------------------

    def on_session_open(self, ssn: Session) -> None:
        view = _SessionView(self, ssn)
        # Both answers read only the node and whether the task has a revocable zone, so
        # the session may reuse them across tasks (allocate's node search hot loop).
        ssn.add_predicate_fn(self.name, view.predicate, key=revocable_key)
        ssn.add_node_order_fn(self.name, view.node_order, key=revocable_key)
        ssn.add_preemptable_fn(self.name, view.preemptable)
        ssn.add_victim_tasks_fn(self.name, view.victim_tasks)
        ssn.add_job_order_fn(self.name, job_order, key=job_order_key)
        ssn.add_job_pipelined_fn(self.name, job_pipelined)
        ssn.add_job_starving_fn(self.name, job_starving)

    def on_session_close(self, ssn: Session) -> None:
        del ssn

    # -- pure helpers -------------------------------------------------------------------

    def zone(self, name: str) -> Zone | None:
        """The configured zone ``name``, or None."""
        return self._zones.get(name)

    def zone_active(self, zone: str, now: datetime) -> bool:
        """Whether ``zone`` is configured and its window is open at ``now``."""
        configured = self._zones.get(zone)
        return configured is not None and configured.window.active(now, self.timezone)


class _SessionView:
    """The callbacks of one session: ``now`` fixed, zone activity computed once."""

    def __init__(self, plugin: TdmPlugin, ssn: Session) -> None:
        self.plugin = plugin
        self.ssn = ssn
        self.now: datetime = ssn.now
        self.active = {z.name: plugin.zone_active(z.name, self.now) for z in plugin.args.zones}
        #: zone -> why its nodes are refused now (None: open); filled on first use
        self._reasons: dict[str, str | None] = {}

    def _reject_reason(self, node: NodeInfo) -> str | None:
        zone = node.revocable_zone
        try:
            return self._reasons[zone]
        except KeyError:
            pass
        configured = self.plugin.zone(zone)
        reason: str | None = None
        if configured is None:
            reason = f"revocable zone {zone} not support"
        elif not self.active[zone]:
            reason = (
                f"current time {format_time(self.now)} beyond revocable zone "
                f"{zone}:{configured.window.raw}"
            )
        self._reasons[zone] = reason
        return reason

    def predicate(self, task: TaskInfo, node: NodeInfo) -> None:
        if not node.revocable_zone:
            return
        reason = self._reject_reason(node)
        if reason is None and not task.revocable_zone:
            reason = "not allow to dispatch to revocable node"
        if reason is not None:
            raise FitError(FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE, reason, plugin=NAME)

    def node_order(self, task: TaskInfo, node: NodeInfo) -> float:
        # Upstream returns an error for a closed or unknown zone, which discards every
        # plugin's score for the node (``Session.NodeOrderFn``); the predicate has already filtered
        # such nodes, so a plain 0 is given here.
        if not node.revocable_zone or not task.revocable_zone:
            return 0.0
        if self._reject_reason(node) is not None:
            return 0.0
        return MAX_NODE_SCORE

    def preemptable(
        self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]
    ) -> tuple[list[TaskInfo], Vote]:
        if preemptor.preemptable or preemptor.revocable_zone:
            return [], Vote.REJECT
        nodes: Mapping[str, NodeInfo] = self.ssn.nodes
        groups: dict[str, list[TaskInfo]] = {}
        for task in preemptees:
            if not task.preemptable or task.status != TaskStatus.RUNNING:
                continue
            node = nodes.get(task.node_name)
            if node is None or node.revocable_zone:
                continue
            groups.setdefault(task.job, []).append(task)
        victims: list[TaskInfo] = []
        jobs: Mapping[str, JobInfo] = self.ssn.jobs
        for job_id in sorted(groups):
            job = jobs.get(job_id)
            if job is None:
                continue
            budget = job_budget(job)
            victims.extend(order_victims(groups[job_id])[: budget.max_evict])
        return victims, Vote.PERMIT

    def _zone_due(self, zone: Zone) -> tuple[bool, datetime | None]:
        """Whether ``zone``'s evict period has elapsed, and the last eviction it counts from."""
        args = self.plugin.args
        history = getattr(self.ssn, "history", None)
        last = last_tdm_eviction(history, None if args.shared_timer else zone.name)
        return last is None or last + args.evict_period <= self.now, last

    def _zone_candidates(self, zone: str) -> dict[str, list[TaskInfo]]:
        """The Running preemptable tasks on ``zone``'s nodes, by job.

        In no particular order: :func:`order_victims` sorts by a total key, so neither the
        node order nor the order of a node's tasks can change the choice (and sorting
        them here cost more than the rest of the choice). The session's view answers from
        the fold's zone index (:mod:`projections.zonetasks`) when the cluster keeps one.
        """
        finder = getattr(getattr(self.ssn, "view", None), "zone_candidates", None)
        indexed = finder(zone) if finder is not None else None
        if indexed is not None:
            found_groups: dict[str, list[TaskInfo]] = indexed
            return found_groups
        groups: dict[str, list[TaskInfo]] = {}
        running = TaskStatus.RUNNING
        nodes: Mapping[str, NodeInfo] | Sequence[NodeInfo] = self.ssn.revocable_nodes
        for node in nodes.values() if isinstance(nodes, Mapping) else nodes:
            if node.revocable_zone != zone:
                continue
            for task in node.tasks.values():
                if task.preemptable and task.status == running:
                    found = groups.get(task.job)
                    if found is None:
                        groups[task.job] = [task]
                    else:
                        found.append(task)
        return groups

    def victim_tasks(self, tasks: Sequence[TaskInfo]) -> list[Victim]:
        """Tasks to evict from closed zones (``tasks`` is ignored, as upstream does)."""
        del tasks
        self.plugin.budget_errors = []
        victims: list[Victim] = []
        history = getattr(self.ssn, "history", None)
        across = self.ssn.rules.has(TDM_BUDGET_PER_PERIOD) and history is not None
        round_ = _Round(
            history if across else None,
            self.now - self.plugin.args.evict_period,
            getattr(self.ssn.world, "cluster", None),
        )
        for zone in self.plugin.args.zones:
            if self.active[zone.name]:
                continue
            due, last = self._zone_due(zone)
            if due:
                victims.extend(self._zone_victims(zone, last, round_))
        return victims

    def _zone_victims(self, zone: Zone, last: datetime | None, round_: _Round) -> list[Victim]:
        """One closed zone's victims: per job, the first ``max_evict`` not yet spent.

        A window close evicts thousands of pods, so everything that is the same for the
        whole zone (its window, the timer texts, the last eviction's time) is formatted
        once here, and a job's budget evidence once per job, not once per victim.
        """
        jobs: Mapping[str, JobInfo] = self.ssn.jobs
        groups = self._zone_candidates(zone.name)
        plugin = self.plugin
        zone_name, window = zone.name, zone.window.raw
        timezone = plugin.timezone.key
        period, timer = plugin.evict_period_text, plugin.evict_timer_text
        last_text = format_time(last) if last is not None else None
        skipped: list[JSON] = []
        victims: list[Victim] = []
        spent = round_.spent
        disruptions = self.ssn.disruptions
        for job_id in sorted(groups):
            job = jobs.get(job_id)
            if job is None:
                continue
            budget = round_.budget(job, job_id)
            if budget.error is not None:
                skipped.append({"job": job_id, **budget.evidence()})
                continue
            used = spent.get(job_id, 0)
            earlier = round_.earlier(job_id)
            allowed = budget.max_evict - used - earlier
            if allowed <= 0:
                spent[job_id] = used
                continue
            group = groups[job_id]
            covered: list[list[JSON]] | None = None
            if disruptions.active:  # PodDisruptionBudgets: the first `allowed` they let go
                picked, held = disruptions.pick(order_victims(group), allowed)
                chosen = [task for task, _ in picked]
                covered = [budgets for _, budgets in picked]
            else:
                chosen = [first_victim(group)] if allowed == 1 else order_victims(group)[:allowed]
            spent[job_id] = used + len(chosen)
            budget_json = budget.evidence()
            if covered is not None and held:
                budget_json["held_by_disruption_budgets"] = held
            if used:
                budget_json["used_in_other_zones"] = used
            if earlier:
                budget_json["used_this_period"] = earlier
            candidates = len(group)
            for position, task in enumerate(chosen, start=1):
                evidence: JSON = {
                    "zone": zone_name,
                    "window": window,
                    "timezone": timezone,
                    "job": job_id,
                    "budget": budget_json if position == 1 else dict(budget_json),
                    "order": {"position": position, "candidates": candidates, "by": ORDER_TEXT},
                    "evict_period": period,
                    "evict_timer": timer,
                    "last_eviction": last_text,
                }
                if covered is not None and covered[position - 1]:
                    evidence["disruption_budgets"] = covered[position - 1]
                victims.append(build_victim(task, REASON_WINDOW_CLOSED, evidence, NAME))
        if skipped:
            for victim in victims:
                victim.evidence["skipped_jobs"] = [dict(s) for s in skipped]
            plugin.budget_errors.extend({"zone": zone.name, **s} for s in skipped)
        return victims


class _Round:
    """One victim round's budgets: computed once per job, spent across zones.

    With ``history`` (:data:`~projections.behaviour.TDM_BUDGET_PER_PERIOD`, level 2) a job's
    budget is also spent by the TDM evictions of the same job decided after ``since`` (one
    evict period ago) in earlier sessions:
    zones closing together fire one session each, and the budget is one per job per evict
    period, not per session.

    A job the session has not changed (its lookup is the cluster projection's own object)
    is budgeted from the fold's maintained counts (``cluster.queue_totals``); a job the
    session changed, or a cluster without the index, is counted. Counting every task of
    every job of the zone was a quarter of a window close's victim choice.
    """

    def __init__(
        self,
        history: History | None = None,
        since: datetime | None = None,
        cluster: Any = None,
    ) -> None:
        self.budgets: dict[str, Budget] = {}
        self.spent: dict[str, int] = {}
        self._history = history
        self._since = since
        index: QueueTotals | None = getattr(cluster, "queue_totals", None)
        self._base: Mapping[str, JobInfo] = {}
        self._running: Mapping[str, int] = {}
        self._final: Mapping[str, int] = {}
        if index is not None:
            self._base = cluster.jobs
            self._running = index.running(cluster.jobs)
            self._final = index.finished(cluster.jobs)

    def earlier(self, job_id: str) -> int:
        """The job's TDM evictions of this evict period decided by earlier sessions."""
        if self._history is None or self._since is None:
            return 0
        return self._history.tdm_evictions_of_job(job_id, self._since)

    def budget(self, job: JobInfo, job_id: str) -> Budget:
        """``job``'s budget (``job_id``: its id, which the caller holds: ``JobInfo.id`` is
        formatted on every read)."""
        found = self.budgets.get(job_id)
        if found is None:
            counted = None
            if job is self._base.get(job_id):
                running = self._running.get(job_id)
                if running is not None:
                    counted = (running, self._final[job_id])
            found = self.budgets[job_id] = job_budget(job, counted)
        return found


def revocable_key(task: TaskInfo) -> bool:
    """All the predicate and the node order read of a task: whether it may use a zone."""
    return bool(task.revocable_zone)


def job_order(left: JobInfo, right: JobInfo) -> int:
    """Non-preemptable jobs before preemptable ones; otherwise no opinion."""
    if left.preemptable == right.preemptable:
        return 0
    return 1 if left.preemptable else -1


def job_order_key(job: JobInfo) -> bool:
    """A sort key equal to :func:`job_order` (ascending = first): non-preemptable first."""
    return job.preemptable


def job_pipelined(job: JobInfo) -> Vote:
    """Permit a pipelined job, reject the others (upstream votes on every job)."""
    return Vote.PERMIT if is_pipelined(job) else Vote.REJECT


def job_starving(job: JobInfo) -> bool:
    """A non-preemptable job with Pending tasks is starving."""
    if job.preemptable:
        return False
    return any(task.status == TaskStatus.PENDING for task in job.tasks.values())


def build(args: TdmArgs, ctx: PluginContext) -> TdmPlugin:
    """Build the plugin from validated arguments and the process context."""
    return TdmPlugin(args, ctx)


__all__ = [
    "MAX_NODE_SCORE",
    "NAME",
    "REASON_PREEMPT",
    "REASON_WINDOW_CLOSED",
    "TdmPlugin",
    "build",
    "is_pipelined",
    "job_order",
    "job_pipelined",
    "job_starving",
    "last_tdm_eviction",
]
