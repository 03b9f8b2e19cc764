"""Preempt scenarios as data: Volcano's ``preempt_test.go`` cases, translated, plus tide's.

A cluster is Kubernetes JSON folded through the real World; each case names the victims
and where the preemptor ends up (pipelined in the session) in normal and in
topology-aware mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controller.policy.framework.tiers import default_flags
from streams.events import Event
from tests.builders import build_node, build_pod, build_podgroup, build_queue, watch

JSON = dict[str, Any]
HIGH, LOW = 100000, 10
PREEMPTABLE = "volcano.sh/preemptable"


def entry(name: str, *flags: str, **arguments: Any) -> JSON:
    """A tier entry enabling only ``flags`` (as Volcano's unit tests build tiers)."""
    out: JSON = {"name": name, **dict.fromkeys(default_flags(), False)}
    out.update(dict.fromkeys(flags, True))
    if arguments:
        out["arguments"] = arguments
    return out


#: The tiers of Volcano's preempt_test.go.
UPSTREAM_TIERS = [
    {
        "plugins": [
            entry("conformance", "enablePreemptable"),
            entry("gang", "enablePreemptable", "enableJobPipelined", "enableJobStarving"),
            entry(
                "priority",
                "enableTaskOrder",
                "enableJobOrder",
                "enablePreemptable",
                "enableJobPipelined",
                "enableJobStarving",
            ),
            entry("proportion", "enabledOverused", "enabledAllocatable", "enableQueueOrder"),
        ]
    }
]


def config(*, topology: bool = False, tiers: list[JSON] | None = None, **args: Any) -> JSON:
    arguments: JSON = {"enableTopologyAwarePreemption": topology, **args}
    return {
        "actions": "preempt",
        "tiers": tiers if tiers is not None else UPSTREAM_TIERS,
        "configurations": [{"name": "preempt", "arguments": arguments}],
    }


def pod(
    name: str,
    group: str,
    *,
    node: str = "",
    cpu: str | None = "1",
    memory: str | None = "1G",
    preemptable: str | None = None,
    priority: int | None = None,
    klass: str | None = None,
    **kw: Any,
) -> JSON:
    """A pod of namespace c1 (Running on ``node``, else Pending)."""
    labels = dict(kw.pop("labels", {}) or {})
    if preemptable is not None:
        labels[PREEMPTABLE] = preemptable
    out = build_pod(
        "c1",
        name,
        node=node,
        phase="Running" if node else "Pending",
        cpu=cpu,
        memory=memory,
        group=group,
        priority=priority,
        labels=labels,
        **kw,
    )
    if klass is not None:
        out["spec"]["priorityClassName"] = klass
    return out


def classes() -> list[JSON]:
    """Finished pods that teach the projection the two PriorityClass values."""
    return [
        pod(f"class-{name}", f"class-{name}", cpu="1", klass=name, priority=value)
        | {"status": {"phase": "Succeeded"}}
        for name, value in (("high-priority", HIGH), ("low-priority", LOW))
    ]


def group(name: str, min_member: int, klass: str | None = None, queue: str = "q1") -> JSON:
    return build_podgroup("c1", name, min_member=min_member, queue=queue, priority_class=klass)


def node(name: str, cpu: str, memory: str, pods: str = "10", **kw: Any) -> JSON:
    return build_node(name, cpu=cpu, memory=memory, pods=pods, **kw)


def queue(name: str = "q1", cpu: str | None = None, memory: str | None = None) -> JSON:
    capability = {"cpu": cpu, "memory": memory} if cpu and memory else None
    return build_queue(name, capability=capability)


@dataclass
class Case:
    """A cluster, and what preempt does to it in each mode."""

    name: str
    nodes: list[JSON]
    pods: list[JSON]
    groups: list[JSON] = field(default_factory=list)
    queues: list[JSON] = field(default_factory=lambda: [queue()])
    #: victims (``c1/name``) in normal mode
    evicted: list[str] = field(default_factory=list)
    #: preemptor → node it is pipelined on, in normal mode
    pipelined: dict[str, str] = field(default_factory=dict)
    #: topology-aware mode, where it differs (None: same as normal)
    topo_evicted: list[str] | None = None
    topo_pipelined: dict[str, str] | None = None
    tiers: list[JSON] | None = None

    def events(self) -> list[Event]:
        out = [watch("queues", q) for q in self.queues]
        out += [watch("nodes", n) for n in self.nodes]
        out += [watch("podgroups", g) for g in self.groups]
        out += [watch("pods", p) for p in classes() + self.pods]
        return out
