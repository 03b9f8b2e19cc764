"""Scenario helpers for framework, plugin and action tests (Volcano's ``uthelper`` style).

Two ways to state a cluster: model objects directly (:func:`cluster`, for unit tests of
the framework), or Kubernetes JSON from ``tests.builders`` folded through the real
``World`` (:func:`world_of`, for scenario tests of actions and the engine).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from controller.policy.framework.plugin import Plugin, PluginContext
from controller.policy.framework.session import Session, open_session
from controller.policy.framework.tiers import PluginConf, TierConf
from projections.accounting import node_add
from projections.affinitypods import AffinityPods
from projections.cluster import ClusterState
from projections.history import History
from projections.model import JobInfo, NodeInfo, QueueInfo, Resource, TaskInfo, TaskStatus
from projections.oom import OOMState
from projections.pdb import PDBState
from projections.pressure import PressureState
from projections.usage import UsageState
from projections.world import World
from streams.events import Event, format_time, make_event
from tests.builders import T0

GI = 1024.0**3


class FakeCluster(ClusterState):
    # A cluster projection seeded with model objects directly instead of folded from
    # events. Tests edit its maps in place, so the index the fold keeps (``pending``) is
    # derived from ``tasks`` on every read instead of maintained.
    def __init__(
        self,
        *,
        nodes: dict[str, NodeInfo] | None = None,
        tasks: dict[str, TaskInfo] | None = None,
        jobs: dict[str, JobInfo] | None = None,
        queues: dict[str, QueueInfo] | None = None,
    ) -> None:
        super().__init__()
        self.nodes = dict(nodes or {})
        self.tasks = dict(tasks or {})
        self.jobs = dict(jobs or {})
        self.queues = dict(queues or {})

    @property
    def pending(self) -> dict[str, TaskInfo]:
        return {key: t for key, t in self.tasks.items() if t.status == TaskStatus.PENDING}

    @pending.setter
    def pending(self, value: dict[str, TaskInfo]) -> None:
        del value  # ClusterState.__init__ sets an empty index; the getter derives it

    @property
    def affinity_pods(self) -> AffinityPods:
        return AffinityPods()  # unbuilt: the first query derives it from ``tasks``

    @affinity_pods.setter
    def affinity_pods(self, value: AffinityPods) -> None:
        del value  # likewise


@dataclass
class FakeWorld:
    # satisfies projections.world.PolicyInputs around a seeded cluster
    cluster: ClusterState
    history: History = field(default_factory=History)
    usage: UsageState = field(default_factory=UsageState)
    oom: OOMState = field(default_factory=OOMState)
    pressure: PressureState = field(default_factory=PressureState)
    pdbs: PDBState = field(default_factory=PDBState)


def res(cpu: float = 1000, memory: float = GI, **scalars: float) -> Resource:
    return Resource(cpu, memory, dict(scalars))


def node(
    name: str,
    *,
    cpu: float = 8000,
    memory: float = 32 * GI,
    pods: float = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
    zone: str = "",
    unschedulable: bool = False,
    ready: bool = True,
) -> NodeInfo:
    alloc = Resource(cpu, memory, {"pods": pods})
    return NodeInfo(
        name,
        alloc,
        alloc.clone(),
        revocable_zone=zone,
        labels=dict(labels or {}),
        taints=list(taints or []),
        unschedulable=unschedulable,
        ready=ready,
        idle=alloc.clone(),
    )


def task(
    name: str,
    *,
    ns: str = "ns",
    job: str | None = None,
    status: TaskStatus = TaskStatus.PENDING,
    node: str = "",
    cpu: float = 1000,
    memory: float = GI,
    priority: int = 1,
    role: str = "",
    scheduler: str = "volcano",
    created: datetime = T0,
    priority_class: str = "",
    preemptable: bool = True,
    selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    affinity: dict[str, Any] | None = None,
) -> TaskInfo:
    req = Resource(cpu, memory, {"pods": 1})
    return TaskInfo(
        uid=f"{ns}-{name}",
        namespace=ns,
        name=name,
        job=job if job is not None else f"{ns}/{name}",
        status=status,
        resreq=req,
        init_resreq=req,
        priority=priority,
        preemptable=preemptable,
        best_effort=req.is_empty(),
        node_name=node,
        scheduler_name=scheduler,
        task_role=role,
        priority_class=priority_class,
        creation=created,
        node_selector=dict(selector or {}),
        tolerations=list(tolerations or []),
        affinity=affinity,
    )


def job(
    job_id: str,
    *,
    min_available: int = 1,
    queue: str = "default",
    priority: int = 0,
    created: datetime = T0,
    task_min: dict[str, int] | None = None,
    phase: str = "Running",
) -> JobInfo:
    namespace, _, name = job_id.partition("/")
    return JobInfo(
        uid=f"pg-{namespace}-{name}",
        namespace=namespace,
        name=name,
        queue=queue,
        min_available=min_available,
        priority=priority,
        creation=created,
        task_min_available=dict(task_min or {}),
        phase=phase,
    )


def cluster(
    nodes: Iterable[NodeInfo] = (),
    tasks: Iterable[TaskInfo] = (),
    jobs: Iterable[JobInfo] = (),
    queues: Iterable[QueueInfo] = (),
) -> FakeCluster:
    """A cluster projection stand-in; jobs of one are made for tasks naming no job given."""
    out = FakeCluster(
        nodes={n.name: n for n in nodes},
        jobs={j.id: j for j in jobs},
        queues={q.name: q for q in queues},
    )
    for t in tasks:
        out.tasks[t.key] = t
        if t.job not in out.jobs:
            out.jobs[t.job] = job(t.job)
        out.jobs[t.job].tasks[t.key] = t
        if t.node_name and t.status not in (TaskStatus.SUCCEEDED, TaskStatus.FAILED):
            node_add(out.nodes[t.node_name], t)
    return out


def trigger(at: datetime = T0, kind: str = "tick") -> Event:
    return make_event(
        "trigger.fired",
        at,
        {"trigger": kind, "kind": kind, "scheduled": format_time(at)},
    )


def ctx(scheduler: str = "volcano", tz: str = "UTC") -> PluginContext:
    return PluginContext(timezone=ZoneInfo(tz), scheduler_name=scheduler, options={})


def tiers(*rows: Sequence[PluginConf]) -> tuple[TierConf, ...]:
    return tuple(TierConf(tuple(row)) for row in rows)


def on(name: str) -> PluginConf:
    """A tier entry with every flag on, as a configuration file would give."""
    return PluginConf.of(name, all_flags=True)


def session(
    world: FakeWorld | ClusterState | World,
    tier_rows: Sequence[TierConf] = (),
    plugins: Sequence[Plugin] = (),
    *,
    at: datetime = T0,
    scheduler: str = "volcano",
) -> Session:
    if isinstance(world, ClusterState):
        world = FakeWorld(world)
    return open_session(world, trigger(at), tiers=tier_rows, plugins=plugins, ctx=ctx(scheduler))


def world_of(events: Iterable[Event]) -> World:
    """The real World folded from builder events."""
    world = World(extra=[])
    for offset, event in enumerate(events):
        world.apply(event.with_offset(offset))
    return world


def minutes(n: float) -> timedelta:
    return timedelta(minutes=n)


def binds(events: Iterable[Event]) -> dict[str, str]:
    """``ns/pod`` → node of every bind decision."""
    return {
        f"{e.data['namespace']}/{e.data['pod']}": e.data["node"]
        for e in events
        if e.type == "decision.bind"
    }


def evicts(events: Iterable[Event]) -> list[str]:
    """``ns/pod`` of every evict decision, in order."""
    return [f"{e.data['namespace']}/{e.data['pod']}" for e in events if e.type == "decision.evict"]
