"""A pressure-eviction loop for tests, and scenario builders.

:class:`Loop` runs the controller's own step (:class:`controller.policy.step.Step`) on the
virtual-time driver (:class:`controller.drive.loop.virtual.VirtualLoop`) without the scheduler:
no configuration, hence no session triggers. Inputs in time order are written and folded;
every ``metrics.node`` sample goes to pressure eviction; the follow-ups are fired as
``trigger.fired`` records (written only when they decide something); with ``sim=True`` the
simulated cluster answers the decisions (notice, termination, recreation, taints).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from controller.drive.effector import SimulatedCluster
from controller.drive.loop.virtual import VirtualLoop
from controller.policy.loader import load_config
from controller.policy.pressure.config import EvictionConfig, parse_eviction_config
from controller.policy.step import Step
from projections.world import World
from replay.verify import replay
from streams.backends.memory import MemoryLog
from streams.events import DECISION_TYPES, Event
from tests.builders import T0, build_node, build_pod, node_metrics, pod_metrics, watch

JSON = dict[str, Any]
GI = 2**30
#: every Loop a test builds; tests/controller/policy/pressure/conftest.py verifies their logs
LOOPS: list[Loop] = []


def new_world() -> World:
    return World()


def config(**overrides: Any) -> EvictionConfig:
    """A configuration from seed keys; ``overrides`` are merged one level deep."""
    raw: dict[str, Any] = {}
    for key, value in overrides.items():
        raw[key] = value
    return parse_eviction_config(raw)


@dataclass
class Loop:
    cfg: EvictionConfig
    sim: bool = False
    world: World = field(default_factory=World)
    decisions: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        LOOPS.append(self)
        self.cluster = SimulatedCluster()
        self.memory = MemoryLog()
        self.step = Step(config=None, eviction=self.cfg, world=self.world)
        self.driver = VirtualLoop(
            self.step, log=self.memory, effector=self.cluster if self.sim else None
        )
        self.driver.decisions = self.decisions

    @property
    def log(self) -> list[Event]:
        """Every record written, in offset order."""
        return self.memory.events

    def run(self, inputs: list[Event], until: datetime | None = None) -> list[Event]:
        self.driver.push(sorted(inputs, key=lambda e: e.at))
        return self.driver.run(until=until)

    def verify(self) -> None:
        """``tide replay --verify`` on this loop's log: every decision re-derives."""
        report = replay(self.log, configs=(load_config({}), self.cfg))
        assert report.ok, [d.describe() for d in report.differences]

    def evictions(self) -> list[Event]:
        return [d for d in self.decisions if d.type == "decision.evict"]


def decisions_of(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type in DECISION_TYPES]


# ---- scenario builders ------------------------------------------------------------------


def node_event(name: str = "n1", *, cpu: int = 100, memory_gi: int = 100, **kw: Any) -> Event:
    return watch("nodes", build_node(name, cpu=str(cpu), memory=f"{memory_gi}Gi", **kw))


def pod_event(
    name: str,
    *,
    node: str = "n1",
    qos: str | None = "BE",
    priority: int | None = None,
    started: datetime = T0,
    namespace: str = "default",
    owner: str | None = "ReplicaSet",
    requests: tuple[str, str] | None = ("1", "1Gi"),
    statuses: list[JSON] | None = None,
) -> Event:
    labels = {"koordinator.sh/qosClass": qos} if qos else {}
    cpu, memory = requests if requests else (None, None)
    pod = build_pod(
        namespace,
        name,
        node=node,
        priority=priority,
        labels=labels,
        cpu=cpu,
        memory=memory,
        created=started,
        started=started,
        owner_kind=owner,
        container_statuses=statuses,
    )
    return watch("pods", pod, T0 - timedelta(minutes=1))


def node_sample(name: str, when: datetime, *, cpu_cores: float, memory_gi: float = 10.0) -> Event:
    return node_metrics(
        name,
        cpu=f"{round(cpu_cores * 1000)}m",
        memory=f"{round(memory_gi * 1024)}Mi",
        when=when,
    )


def pod_sample(
    name: str,
    when: datetime,
    *,
    cpu_cores: float,
    memory_gi: float = 1.0,
    namespace: str = "default",
) -> Event:
    return pod_metrics(
        namespace,
        name,
        cpu=f"{round(cpu_cores * 1000)}m",
        memory=f"{round(memory_gi * 1024)}Mi",
        when=when,
    )


def seconds(n: float) -> datetime:
    return T0 + timedelta(seconds=n)


def evicted(decisions: list[Event]) -> list[str]:
    return [d.data["pod"] for d in decisions if d.type == "decision.evict"]
