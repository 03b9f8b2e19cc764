"""Volcano's scheduling model: resources, tasks, jobs, nodes and queues, as folded from raw
Kubernetes JSON (volcano-sh/volcano pkg/scheduler/api: ``resource_info.go`` ``Resource``,
``job_info.go`` ``TaskInfo``/``JobInfo``, ``node_info.go`` ``NodeInfo``, ``types.go``
``TaskStatus``).

These are plain mutable objects owned by the cluster projection. Policy sessions must
not mutate them in place: a session works on copies of the objects it changes.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from streams.payloads import RawObject

MIN_RESOURCE = 0.1
JSON = RawObject  # a Kubernetes object as raw JSON


class Resource:
    """A resource vector: milli-CPU, memory bytes, and scalars (``pods`` plain, others milli)."""

    __slots__ = ("memory", "milli_cpu", "scalars")

    def __init__(
        self, milli_cpu: float = 0.0, memory: float = 0.0, scalars: dict[str, float] | None = None
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.scalars: dict[str, float] = scalars if scalars is not None else {}

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, dict(self.scalars))

    def add(self, other: Resource) -> Resource:
        """In-place add; returns self."""
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        scalars = self.scalars
        for name, value in other.scalars.items():
            scalars[name] = scalars.get(name, 0.0) + value
        return self

    def sub(self, other: Resource) -> Resource:
        """In-place subtract (may go negative, as Volcano's unchecked sub); returns self."""
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        scalars = self.scalars
        for name, value in other.scalars.items():
            scalars[name] = scalars.get(name, 0.0) - value
        return self

    def is_empty(self) -> bool:
        """Volcano's IsEmpty: cpu, memory and every scalar but ``pods`` below 0.1."""
        if self.milli_cpu >= MIN_RESOURCE or self.memory >= MIN_RESOURCE:
            return False
        return all(v < MIN_RESOURCE for k, v in self.scalars.items() if k != "pods")

    def less_equal(self, other: Resource, *, infinite_default: bool = False) -> bool:
        """Every dimension of ``self`` ≤ ``other``, each with a 0.1 tolerance.

        Volcano's ``Resource.LessEqual`` (volcano-sh/volcano
        pkg/scheduler/api/resource_info.go): ``a ≤ b`` means ``a < b or |a - b| < 0.1``. With
        the zero default a scalar missing in ``other`` counts as 0; with ``infinite_default``
        a scalar of ``other`` missing in ``self`` fails at once and one missing in ``other``
        is skipped (infinite).
        """

        def le(a: float, b: float) -> bool:
            return a < b or abs(a - b) < MIN_RESOURCE

        if not le(self.milli_cpu, other.milli_cpu) or not le(self.memory, other.memory):
            return False
        if infinite_default:
            if any(name not in self.scalars for name in other.scalars):
                return False
            return all(
                le(v, other.scalars[k]) for k, v in self.scalars.items() if k in other.scalars
            )
        return all(le(v, other.scalars.get(k, 0.0)) for k, v in self.scalars.items())

    def to_json(self) -> JSON:
        out: JSON = {"cpu_milli": self.milli_cpu, "memory": self.memory}
        for name in sorted(self.scalars):
            out[name] = self.scalars[name]
        return out

    def __eq__(self, other: object) -> bool:
        """Equal cpu, memory and non-zero scalars (a scalar at 0 is one not there)."""
        if not isinstance(other, Resource):
            return False
        if self.milli_cpu != other.milli_cpu or self.memory != other.memory:
            return False
        mine, theirs = self.scalars, other.scalars
        if mine == theirs:  # the usual case, without building two filtered copies
            return True
        return {k: v for k, v in mine.items() if v} == {k: v for k, v in theirs.items() if v}

    def __repr__(self) -> str:
        return f"Resource(cpu={self.milli_cpu}m, mem={self.memory}, {self.scalars})"


class TaskStatus(enum.IntEnum):
    """Volcano's task status (volcano-sh/volcano pkg/scheduler/api/types.go, ``TaskStatus``).

    Pod phase → status follows ``getTaskStatus`` (pkg/scheduler/api/helpers.go): a deleting
    pod is Releasing, a Pending pod with a node is Bound, else the phase of the same name.
    """

    PENDING = 1
    ALLOCATED = 2
    PIPELINED = 3
    BINDING = 4
    BOUND = 5
    RUNNING = 6
    RELEASING = 7
    SUCCEEDED = 8
    FAILED = 9
    UNKNOWN = 10


ALLOCATED_STATUSES = frozenset(
    {TaskStatus.BOUND, TaskStatus.BINDING, TaskStatus.RUNNING, TaskStatus.ALLOCATED}
)
PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
COMPLETED_STATUSES = frozenset({TaskStatus.FAILED, TaskStatus.SUCCEEDED})


@dataclass(slots=True)
class TaskInfo:
    """One pod as a schedulable task. ``key`` is ``namespace/name``."""

    uid: str
    namespace: str
    name: str
    job: str  # job id: "<ns>/<podgroup>" or, for a pod without a group, "<ns>/<pod name>"
    status: TaskStatus
    resreq: Resource
    init_resreq: Resource
    priority: int = 1
    pod_priority: int = 0  # spec.priority or 0 (preempt's candidate scoring)
    preemptable: bool = True
    revocable_zone: str = ""
    best_effort: bool = False
    qos: str = "LS"  # koordinator.sh/qosClass, else BE for BestEffort pods, else LS
    node_name: str = ""
    scheduler_name: str = ""
    task_role: str = ""
    priority_class: str = ""
    creation: datetime | None = None
    start_time: datetime | None = None
    owner_kind: str = ""  # kind of the controller owner reference ("" = none)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[JSON] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    grace_seconds: int = 30
    deleting: bool = False
    affinity: JSON | None = None  # spec.affinity as raw JSON (shared, read-only)
    owner: str = ""  # "Kind/name" of the controller owner reference ("" = none)
    preemption_policy: str = ""  # spec.preemptionPolicy ("Never" never preempts; "" = default)
    nominated_node: str = ""  # status.nominatedNodeName ("" = none)
    k8s_qos: str = ""  # Kubernetes QoS class: BestEffort / Burstable / Guaranteed
    # tide's to decide for (a PodGroup's pod or one of its schedulers'); see projections.ownership
    owned: bool = True
    # False for DaemonSet and mirror pods: never a victim of any policy
    evictable: bool = True

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class JobInfo:
    """A PodGroup (or an implicit job of one pod) with its tasks.

    Mirrors Volcano's ``JobInfo`` (volcano-sh/volcano pkg/scheduler/api/job_info.go): the
    gang minimum, per-role minimums, queue, priority, preemptable flag and disruption budget
    come from the PodGroup (see :mod:`projections.objects`).
    """

    uid: str
    namespace: str
    name: str
    queue: str = "default"
    min_available: int = 1
    task_min_available: dict[str, int] = field(default_factory=dict)
    priority: int = 0
    preemptable: bool = False
    revocable_zone: str = ""
    budget_min_available: str = ""
    budget_max_unavailable: str = ""
    creation: datetime | None = None
    phase: str = ""
    implicit: bool = False
    tasks: dict[str, TaskInfo] = field(default_factory=dict)  # task key -> task
    # True while tasks name this job but its PodGroup has not been seen (Volcano keeps such
    # a JobInfo without a PodGroup and leaves it out of the session snapshot).
    placeholder: bool = False
    priority_class: str = ""  # PodGroup spec.priorityClassName
    # the PodGroup's own volcano.sh/preemptable mark (None = unmarked); tasks fall back to it
    preemptable_mark: bool | None = None

    @property
    def id(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(slots=True)
class NodeInfo:
    """A node with its running accounting (``idle``, ``used``, ``releasing``, ``pipelined``).

    Mirrors Volcano's ``NodeInfo`` (volcano-sh/volcano pkg/scheduler/api/node_info.go); the
    arithmetic is :func:`projections.accounting.node_add` / ``node_remove``.
    """

    name: str
    allocatable: Resource
    capacity: Resource
    revocable_zone: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[JSON] = field(default_factory=list)
    unschedulable: bool = False
    ready: bool = True
    idle: Resource = field(default_factory=Resource)
    used: Resource = field(default_factory=Resource)
    releasing: Resource = field(default_factory=Resource)
    pipelined: Resource = field(default_factory=Resource)
    tasks: dict[str, TaskInfo] = field(default_factory=dict)  # task key -> task
    # True while tasks name this node but the Node object is absent (not Ready).
    placeholder: bool = False

    def future_idle(self) -> Resource:
        return self.idle.clone().add(self.releasing).sub(self.pipelined)


@dataclass(slots=True)
class QueueInfo:
    """A Volcano Queue."""

    name: str
    weight: int = 1
    capability: Resource | None = None
    guarantee: Resource | None = None
    priority: int = 0
    state: str = "Open"
    creation: datetime | None = None
    uid: str = ""
