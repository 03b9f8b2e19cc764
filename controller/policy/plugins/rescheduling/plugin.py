"""The rescheduling plugin's session side: when a round runs and what it measures.

Why it exists: the strategy (:mod:`.low_node_utilization`) is pure arithmetic over node loads;
this module turns the session into those loads and hands the victims to ``shuffle``
(upstream: volcano-sh/volcano pkg/scheduler/plugins/rescheduling/rescheduling.go,
``reschedulingPlugin.OnSessionOpen``, and rescheduling_util.go, ``timeToRun``).

* **When.** The plugin declares one trigger, ``rescheduling/interval`` (kind
  ``rescheduling``), every ``interval`` from the controller's start; a round runs only in
  a session opened by that trigger, and only when the last firing of that trigger on the
  log (``ssn.history.last_fired``, folded from ``trigger.fired`` records) is at least one
  interval ago. The firing is always written (``Schedule.always_written``), so "last run" is
  a fold of the log, not Volcano's package-global ``lastRescheduleTime``; a restart that
  re-registers the trigger cannot run a second round inside one interval. The very first
  firing (none before it on the log) only starts the clock, so the first round comes one
  interval after the start, as upstream's (whose timer starts at process start), with a
  full ``metricsPeriod`` of samples behind it.
* **Measuring a node.** The mean of the node's ``metrics.node`` samples in ``(now −
  metricsPeriod, now]``. A node with no sample in that window is *stale* and takes no part
  (neither low nor high, and not counted in "every node is low"); one sample is enough.
  Unschedulable and NotReady nodes take no part either. The mean is read from the series'
  running window sums (:mod:`projections.usage_window`, kept up as samples are folded and
  equal to the plain mean to the bit), so a round costs O(nodes + victims), not O(samples).
* **Measuring a pod.** The mean of its ``metrics.pod`` samples over the same window (read
  only for the victims, summed once, no running sums kept for pods); a pod
  with none counts its request instead (the evidence says ``usage_source: request``).
* **Who may go.** Running pods of session jobs on the hot node (shuffle's candidates)
  whose ``task.preemptable`` is true; never a DaemonSet or mirror pod, nor a
  ``kube-system`` / system-critical pod (conformance's rule); and never a pod whose
  PodGroup would drop below its ``minAvailable`` (pods with no PodGroup are recreated by
  their owner and have no gang minimum), nor one whose eviction a PodDisruptionBudget
  forbids, counting the round's earlier victims and the session's evictions
  (:mod:`controller.policy.framework.disruption`; the pod is passed over and the next one in
  victim order is tried, as the descheduler goes on after a refused eviction). Which
  tasks count as preemptable is the
  projection's decision (:attr:`TaskInfo.preemptable`), not this plugin's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from operator import attrgetter, countOf

from controller.policy.framework.disruption import Disruptions
from controller.policy.framework.plugin import Interval, PluginContext, Schedule
from controller.policy.framework.points import Victim, build_victim
from controller.policy.framework.session import Session
from controller.policy.plugins.rescheduling.args import LnuParams, ReschedulingArgs
from controller.policy.plugins.rescheduling.low_node_utilization import (
    QOS_RANK,
    NodeLoad,
    Round,
    select,
    sort_keyed,
)
from projections.model import JobInfo, NodeInfo, TaskInfo, TaskStatus
from projections.ownership import DAEMON_SET, MIRROR, is_system
from projections.queuetotals import QueueTotals
from projections.usage import Series, UsageState, to_seconds
from streams.payloads import EvidenceDict

NAME = "rescheduling"
REASON = "low-node-utilization"
KIND = "rescheduling"
TRIGGER = "rescheduling/interval"
#: before the session tick when both are due at one instant
RANK = 10
CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
SYSTEM_NAMESPACE = "kube-system"


def schedules(args: ReschedulingArgs, ctx: PluginContext) -> tuple[Schedule, ...]:
    """One interval trigger, every ``args.interval`` from the start, always written."""
    del ctx
    return (Schedule(TRIGGER, KIND, Interval(args.interval), rank=RANK, always_written=True),)


def never_victim(task: TaskInfo) -> bool:
    """Pods no rescheduling round may evict, whatever their preemptable mark."""
    # DaemonSet and mirror pods: the projection's one rule (projections.ownership)
    return (
        is_system(task)
        or task.namespace == SYSTEM_NAMESPACE
        or task.priority_class in CRITICAL_CLASSES
    )


def average(series: Series | None, now: datetime, period: timedelta) -> tuple[float, float, int]:
    """``(cpu, memory, samples)``: the mean of the points in ``(now - period, now]``, read
    from the series' running sums (:meth:`projections.usage.Series.mean`)."""
    if series is None:
        return 0.0, 0.0, 0
    return series.mean(to_seconds(now), period.total_seconds())


def node_loads(
    nodes: Sequence[NodeInfo], usage: UsageState, now: datetime, period: timedelta
) -> tuple[list[NodeLoad], list[str]]:
    """``(loads, stale)``: the nodes taking part with their averaged usage, and the names
    of schedulable Ready nodes without a sample in the window."""
    loads: list[NodeLoad] = []
    stale: list[str] = []
    for node, cpu, memory, n in _averaged(nodes, usage, to_seconds(now), period.total_seconds()):
        if n == 0:
            stale.append(node.name)
            continue
        alloc = node.allocatable
        loads.append(NodeLoad(node.name, alloc.milli_cpu, alloc.memory, cpu, memory, n))
    return loads, sorted(stale)


def round_loads(
    nodes: Sequence[NodeInfo], usage: UsageState, end: float, seconds: float, params: LnuParams
) -> tuple[list[NodeLoad], list[str], int]:
    """``(loads, stale, taking part)`` for one strategy: :func:`node_loads` (window ``(end
    - seconds, end]``, POSIX seconds) less the nodes that are neither low nor high under
    ``params`` (:func:`.low_node_utilization.classify`'s comparisons, the same arithmetic):
    a round reads nothing of those but their count, so no :class:`NodeLoad` is built for
    most of the nodes. ``taking part`` counts every node :func:`node_loads` would return."""
    loads: list[NodeLoad] = []
    stale: list[str] = []
    lo_cpu, lo_mem = params.thresholds["cpu"], params.thresholds["memory"]
    hi_cpu, hi_mem = params.target_thresholds["cpu"], params.target_thresholds["memory"]
    count = 0
    for node, cpu, memory, n in _averaged(nodes, usage, end, seconds):
        if n == 0:
            stale.append(node.name)
            continue
        count += 1
        alloc = node.allocatable
        a_cpu, a_mem = alloc.milli_cpu, alloc.memory
        p_cpu = 100.0 * cpu / a_cpu if a_cpu > 0 else 0.0
        p_mem = 100.0 * memory / a_mem if a_mem > 0 else 0.0
        if (p_cpu < lo_cpu and p_mem < lo_mem) or p_cpu > hi_cpu or p_mem > hi_mem:
            loads.append(NodeLoad(node.name, a_cpu, a_mem, cpu, memory, n))
    return loads, sorted(stale), count


def _averaged(
    nodes: Sequence[NodeInfo], usage: UsageState, end: float, seconds: float
) -> Iterator[tuple[NodeInfo, float, float, int]]:
    """``(node, cpu, memory, samples)`` of each schedulable Ready node: its averaged usage
    over the window ``(end - seconds, end]`` (``samples`` 0: none in the window)."""
    series = usage.nodes
    for node in nodes:
        if node.unschedulable or not node.ready:
            continue
        found = series.get(node.name)
        if found is None:
            yield node, 0.0, 0.0, 0
        else:
            yield (node, *found.mean(end, seconds))


class ReschedulingPlugin:
    """Registers the victim function on the sessions of its own trigger."""

    name = NAME

    def __init__(self, args: ReschedulingArgs) -> None:
        self.args = args
        #: the rounds of the last session that ran one (for tests and audit)
        self.rounds: list[Round] = []

    def due(self, ssn: Session) -> bool:
        """Whether this session runs a round: our trigger, and one interval since the last."""
        if ssn.trigger_kind != KIND:
            return False
        last = ssn.history.last_fired.get(TRIGGER)
        return last is not None and ssn.now - last >= self.args.interval

    def on_session_open(self, ssn: Session) -> None:
        self.rounds = []
        if self.due(ssn):
            ssn.add_victim_tasks_fn(NAME, lambda tasks: self.victims(ssn, tasks))

    def on_session_close(self, ssn: Session) -> None:
        del ssn

    def victims(self, ssn: Session, tasks: Sequence[TaskInfo]) -> list[Victim]:
        """Every strategy's victims; ``tasks`` (shuffle's candidates) is not walked: the
        same set is read off the hot nodes (Running tasks of session jobs)."""
        del tasks
        args = self.args
        now, period = ssn.now, args.metrics_period
        nodes = ssn.view.node_list  # the session's nodes, by name
        chosen: list[Victim] = []
        budgets: dict[str, list[EvidenceDict]] = {}
        end, seconds = to_seconds(now), period.total_seconds()
        pod_load = _pod_loads(ssn.usage.pods, end, seconds)
        disruptions = ssn.disruptions if ssn.disruptions.active else None
        gang = GangCounts(ssn)

        may_evict: Callable[[TaskInfo], bool]
        if disruptions is None:  # no budget exists: only the gang minimum holds back
            may_evict = gang.take
        else:

            def may_evict(task: TaskInfo) -> bool:
                return _may_evict(disruptions, gang, task, budgets)

        for params in args.strategies:
            loads, stale, count = round_loads(nodes, ssn.usage, end, seconds, params)
            result = select(
                loads,
                params,
                taking_part=count,
                candidates=lambda name: _candidates(ssn, name),
                ordered=True,
                pod_load=pod_load,
                may_evict=may_evict,
                shared={
                    "metrics_period": _go(period),
                    "interval": _go(args.interval),
                    "stale_nodes": len(stale),
                },
            )
            self.rounds.append(result)
            if budgets:
                for choice in result.victims:
                    covered = budgets.get(choice.task.key)
                    if covered:
                        choice.evidence["disruption_budgets"] = covered
            chosen += [build_victim(c.task, REASON, c.evidence, NAME) for c in result.victims]
        return chosen


def _candidates(ssn: Session, node: str) -> list[TaskInfo]:
    """The node's Running, preemptable, not protected tasks, in victim order
    (:func:`.low_node_utilization.in_victim_order`, built in the same pass); their job is
    checked later, by :meth:`GangCounts.take`, only for the few the round reaches.

    :func:`never_victim` and :func:`projections.ownership.is_system` are inlined, and the
    filter and the sort keys are one comprehension: every task of every hot node passes
    here, and most of its cost is reaching each task's fields (cache misses), once.
    """
    running = TaskStatus.RUNNING
    rank = QOS_RANK.get
    keyed = [
        (task.pod_priority, rank(task.k8s_qos, -1), task.namespace, task.name, task.uid, i, task)
        for i, task in enumerate(ssn.nodes[node].tasks.values())
        if task.status == running
        and task.preemptable
        and task.priority_class not in CRITICAL_CLASSES
        and task.namespace != SYSTEM_NAMESPACE
        and task.owner_kind != DAEMON_SET
        and MIRROR not in task.annotations
    ]
    return sort_keyed(keyed)


def _pod_loads(
    pods: Mapping[str, Series], end: float, seconds: float
) -> Callable[[TaskInfo], tuple[float, float, str]]:
    """A victim's usage for the window ending at ``end``: the mean of its pod's samples (a
    one-off read: no running sums are kept for pods), or its request when it has no sample
    there, as the plain tuple of a :class:`PodLoad` (called once per victim: a closure and
    a tuple cost less than a call with four arguments and an instance)."""
    get = pods.get

    def pod_load(task: TaskInfo) -> tuple[float, float, str]:
        series = get(task.key)
        if series is not None:
            cpu, memory, n = series.mean(end, seconds, keep=False)
            if n:
                return cpu, memory, "metrics"
        return task.resreq.milli_cpu, task.resreq.memory, "request"

    return pod_load


_STATUS = attrgetter("status")
_RUNNING = TaskStatus.RUNNING


def _may_evict(
    disruptions: Disruptions,
    gang: GangCounts,
    task: TaskInfo,
    budgets: dict[str, list[EvidenceDict]],
) -> bool:
    """No PodDisruptionBudget forbids it (counting the round's earlier victims) and its
    gang keeps its minimum; a victim it allows is counted against both, and the budgets
    covering it (as they stood before it) go to ``budgets`` for its evidence. (Without
    any budget the round asks :meth:`GangCounts.take` alone: nothing else holds back.)"""
    if disruptions.blocking(task) is not None:
        return False
    if not gang.take(task):
        return False
    covered = disruptions.evidence(task)
    if covered:
        budgets[task.key] = covered
        disruptions.take(task)
    return True


class GangCounts:
    """A PodGroup job keeps at least ``minAvailable`` Running pods over one round.

    Per job (by the task's job key) it holds the Running pods the round has not taken yet
    and the job's minimum, both read on the job's first candidate: the session's jobs do
    not change while a round chooses, so later candidates of the job skip the lookup.

    The count of a job the session has not changed (its lookup is the cluster
    projection's own object) is read from the projection's maintained index
    (:meth:`projections.queuetotals.QueueTotals.running`, kept up as the fold touches
    jobs); a job the session changed (a clone), or a cluster without the index, is
    counted (one C-level pass over its tasks). Counting every task of every job the round
    reached was a tenth of a round at 5,000 nodes: mostly cache misses on other nodes'
    tasks.
    """

    __slots__ = ("base", "left", "lookup", "minimum", "running")

    def __init__(self, ssn: Session) -> None:
        self.lookup = ssn.jobs.lookup
        self.left: dict[str, int] = {}
        self.minimum: dict[str, int] = {}
        cluster = getattr(getattr(ssn, "world", None), "cluster", None)
        index: QueueTotals | None = getattr(cluster, "queue_totals", None)
        self.base: Mapping[str, JobInfo] = {}
        self.running: Mapping[str, int] = {}
        if cluster is not None and index is not None:
            self.base = cluster.jobs
            self.running = index.running(cluster.jobs)

    def take(self, task: TaskInfo) -> bool:
        """Whether the task's job may lose it; records the taking when it may. A task of no
        session job may not go; an implicit job (a pod without PodGroup) has no minimum."""
        key = task.job
        count = self.left.get(key)
        if count is None:
            job = self.lookup(key)
            if job is None:
                return False
            if job.implicit:
                return True
            count = self.running.get(key) if job is self.base.get(key) else None
            if count is None:
                count = countOf(map(_STATUS, job.tasks.values()), _RUNNING)
            self.minimum[key] = job.min_available
        if count - 1 < self.minimum[key]:
            self.left[key] = count
            return False
        self.left[key] = count - 1
        return True


def _go(period: timedelta) -> str:
    seconds = int(period.total_seconds())
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{period.total_seconds():g}s"


def build(args: ReschedulingArgs, ctx: PluginContext) -> ReschedulingPlugin:
    """The plugin for validated ``args``."""
    del ctx
    return ReschedulingPlugin(args)
