"""Extension points: the questions a session asks its plugins, as typed callables.

Volcano keeps about forty ``map[string]XxxFn`` on its session; we name the callable shapes once here
so that plugins, the session and the actions agree on them (volcano-sh/volcano
pkg/scheduler/api/types.go declares the Go function types). Votes and fit statuses keep Volcano's
numeric values, because the aggregation rules are written in terms of them (``vote < 0`` rejects,
and so on).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from projections.model import JobInfo, NodeInfo, QueueInfo, TaskInfo
from streams.payloads import EvidenceDict

if TYPE_CHECKING:
    from controller.policy.framework.simulate import Scratch


class Vote(enum.IntEnum):
    """A plugin's vote (Volcano's ``util.Permit`` / ``Abstain`` / ``Reject``)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


class FitStatus(enum.IntEnum):
    """Kubernetes framework status codes carried by a :class:`FitError`.

    Same values as kubernetes/kubernetes pkg/scheduler/framework/interface.go ``Code``.
    """

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


class FitError(Exception):
    """A predicate's refusal of a node for a task.

    ``status`` decides who may retry: allocate rejects every status, preempt only the
    unresolvable ones (a plain ``UNSCHEDULABLE`` may be fixed by evicting victims).
    """

    SUCCESS = FitStatus.SUCCESS
    ERROR = FitStatus.ERROR
    UNSCHEDULABLE = FitStatus.UNSCHEDULABLE
    UNSCHEDULABLE_AND_UNRESOLVABLE = FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE
    WAIT = FitStatus.WAIT
    SKIP = FitStatus.SKIP

    def __init__(self, status: FitStatus | int, reason: str, *, plugin: str = "") -> None:
        self.status = FitStatus(status)
        self.reason = reason
        self.plugin = plugin
        super().__init__(reason)

    @property
    def resolvable_by_preemption(self) -> bool:
        """Volcano's ``predicate_for_preempt_action``: only plain Unschedulable may be fixed."""
        return self.status == FitStatus.UNSCHEDULABLE

    def __repr__(self) -> str:
        return f"FitError({self.status.name}, {self.reason!r}, plugin={self.plugin!r})"


#: What a node-order function may raise to zero its node's score (upstream ``(0, err)``).
SCORE_ERRORS: tuple[type[Exception], ...] = (FitError, ValueError)


@dataclass(frozen=True)
class Victim:
    """A task a plugin nominates for eviction, with the reason code and the evidence.

    ``reason`` is one of the decision reason codes (``tdm-window-closed``,
    ``low-node-utilization``, ...); ``evidence`` is JSON data explaining the choice. The
    shuffle action puts ``evidence`` into the decision as is (no copy: a window close
    has thousands of victims), so a victim function gives each victim a dict of its own
    and does not touch it afterwards.
    The session fills in the nominating plugin as ``source``, which the shuffle action
    writes as the decision's ``source``.
    """

    task: TaskInfo
    reason: str
    evidence: EvidenceDict = field(default_factory=dict)
    #: The nominating plugin; filled in by ``Session.victim_tasks`` when left empty.
    source: str = ""


_new = object.__new__


def build_victim(task: TaskInfo, reason: str, evidence: EvidenceDict, source: str) -> Victim:
    """``Victim(task, reason, evidence, source)``, built faster (no checks).

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; this
    fills the new instance's ``__dict__`` directly, in about 40 % of the time. For victim
    functions that nominate thousands (a rescheduling round at 5,000 nodes: ~5,000).
    """
    victim: Victim = _new(Victim)
    fields = victim.__dict__
    fields["task"] = task
    fields["reason"] = reason
    fields["evidence"] = evidence
    fields["source"] = source
    return victim


# -- callable shapes ------------------------------------------------------------------

#: Negative: ``l`` first; positive: ``r`` first; zero: no opinion.
JobOrderFn = Callable[[JobInfo, JobInfo], int]
TaskOrderFn = Callable[[TaskInfo, TaskInfo], int]
QueueOrderFn = Callable[[QueueInfo, QueueInfo], int]
#: Returns None when the node fits; raises :class:`FitError` otherwise.
PredicateFn = Callable[[TaskInfo, NodeInfo], None]
#: A score; raising aborts the node's whole session score (upstream ``(0, err)``).
NodeOrderFn = Callable[[TaskInfo, NodeInfo], float]
#: ``(preemptor, preemptees) -> (victims, vote)``; used for preemptable and reclaimable.
EvictableFn = Callable[[TaskInfo, Sequence[TaskInfo]], tuple[list[TaskInfo], Vote]]
VictimTasksFn = Callable[[Sequence[TaskInfo]], list[Victim]]
#: None means valid; a string is the reason the job is not.
JobValidFn = Callable[[JobInfo], "str | None"]
JobReadyFn = Callable[[JobInfo], bool]
JobPipelinedFn = Callable[[JobInfo], Vote]
JobEnqueueableFn = Callable[[JobInfo], Vote]
JobStarvingFn = Callable[[JobInfo], bool]
AllocatableFn = Callable[[QueueInfo, TaskInfo], bool]
OverusedFn = Callable[[QueueInfo], bool]
EventFn = Callable[[TaskInfo], None]

# Simulate hooks (Volcano's ``api.Simulate*Fn``): they run on a scratch copy
# (:class:`~controller.policy.framework.simulate.Scratch`), read and write only the scratch and
# their own per-plugin scratch state, and raise :class:`FitError` to refuse.
#: ``(scratch, task_to_schedule, task_added_or_removed, scratch_node) -> None``.
SimulateTaskFn = Callable[["Scratch", TaskInfo, TaskInfo, NodeInfo], None]
#: ``(scratch, task, scratch_node) -> None``; raises :class:`FitError` to reject the node.
SimulatePredicateFn = Callable[["Scratch", TaskInfo, NodeInfo], None]
#: ``(scratch, queue, task) -> bool``: may the queue take the task, on the scratch shares?
SimulateAllocatableFn = Callable[["Scratch", QueueInfo, TaskInfo], bool]


@dataclass(frozen=True)
class EventHandler:
    """Allocate / deallocate callbacks run by every staged statement operation."""

    plugin: str
    allocate: EventFn | None = None
    deallocate: EventFn | None = None


# -- enable flags (Volcano's PluginOption yaml names) ---------------------------------

JOB_ORDER = "enableJobOrder"
NAMESPACE_ORDER = "enableNamespaceOrder"
HIERARCHY = "enableHierarchy"
JOB_READY = "enableJobReady"
JOB_PIPELINED = "enableJobPipelined"
TASK_ORDER = "enableTaskOrder"
PREEMPTABLE = "enablePreemptable"
RECLAIMABLE = "enableReclaimable"
PREEMPTIVE = "enablePreemptive"
QUEUE_ORDER = "enableQueueOrder"
CLUSTER_ORDER = "EnabledClusterOrder"
PREDICATE = "enablePredicate"
BEST_NODE = "enableBestNode"
NODE_ORDER = "enableNodeOrder"
TARGET_JOB = "enableTargetJob"
RESERVED_NODES = "enableReservedNodes"
JOB_ENQUEUED = "enableJobEnqueued"
VICTIM = "enabledVictim"
JOB_STARVING = "enableJobStarving"
OVERUSED = "enabledOverused"
ALLOCATABLE = "enabledAllocatable"
HYPER_NODE_ORDER = "enabledHyperNodeOrder"

#: Every flag the configuration loader knows. Unset flags default to true when loaded
#: from a file, except those in :data:`FLAGS_DEFAULT_OFF` (as Volcano's loader does).
ALL_FLAGS: tuple[str, ...] = (
    JOB_ORDER,
    NAMESPACE_ORDER,
    HIERARCHY,
    JOB_READY,
    JOB_PIPELINED,
    TASK_ORDER,
    PREEMPTABLE,
    RECLAIMABLE,
    PREEMPTIVE,
    QUEUE_ORDER,
    CLUSTER_ORDER,
    PREDICATE,
    BEST_NODE,
    NODE_ORDER,
    TARGET_JOB,
    RESERVED_NODES,
    JOB_ENQUEUED,
    VICTIM,
    JOB_STARVING,
    OVERUSED,
    ALLOCATABLE,
    HYPER_NODE_ORDER,
)

FLAGS_DEFAULT_OFF = frozenset({CLUSTER_ORDER, HIERARCHY})
