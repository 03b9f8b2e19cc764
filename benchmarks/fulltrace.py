"""A generated full cluster under a trace-like churn: what the full-cluster preempt benchmark
simulates (:mod:`benchmarks.bench_fullpreempt`, issue 28).

Modelled on a public production pod trace of a large co-located cluster (generated, not
copied): CPU-only nodes and GPU nodes (``nvidia.com/gpu`` as an extended resource), every
node filled at the start with Running pods of the trace's QoS classes until less than a
core is free, then ``seconds`` of arrivals and departures: pods of the same mix arrive
(``rate`` a second), live a trace-like lifetime and are deleted; some of the pods running
at the start are deleted along the way. The QoS classes (share, priority):

* LS 30 % (1000), Guaranteed 10 % (800), Burstable 20 % (500): never preemptable;
* BE 40 % (0): ``volcano.sh/preemptable: "true"``, the only victims there are.

A fifth of the pods on GPU nodes and a third of the arrivals ask for GPUs (1, 2 or 4).
Every pod is its own job (no PodGroup) in the one queue ``default``. Same arguments, same
records.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from benchmarks.generate import T0
from streams.events import Event, format_time, make_event

JSON = dict[str, Any]
GPU = "nvidia.com/gpu"
PREEMPTABLE = "volcano.sh/preemptable"
NAMESPACE = "trace"
#: the trace's QoS classes: name, share of the pods, priority
QOS = (("LS", 0.3, 1000), ("Guaranteed", 0.1, 800), ("Burstable", 0.2, 500), ("BE", 0.4, 0))
CPUS = ("500m", "1", "2", "4")
MILLI = {"500m": 500, "1": 1000, "2": 2000, "4": 4000}


@dataclass(frozen=True, slots=True)
class TraceScale:
    """How big: nodes (every fifth a GPU node), seconds of churn, arrivals a second."""

    nodes: int = 1_500
    seconds: float = 120.0
    rate: float = 15.0
    seed: int = 28
    #: the share of the pods running at the start deleted during the churn
    departing: float = 0.1


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _watch(resource: str, obj: JSON, when: datetime, event: str = "ADDED") -> Event:
    return make_event("k8s.watch", when, {"resource": resource, "event": event, "object": obj})


def node(name: str, *, cpu: int, memory: str, gpus: int) -> JSON:
    alloc = {"cpu": str(cpu), "memory": memory, "pods": "110"}
    if gpus:
        alloc[GPU] = str(gpus)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"node-{name}", "labels": {}},
        "spec": {},
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str, *, qos: str, cpu: str, memory: str, gpus: int, created: datetime, on: str = ""
) -> JSON:
    """A pod of QoS class ``qos``; Running on node ``on`` when given, else Pending."""
    priority = next(p for q, _, p in QOS if q == qos)
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        requests[GPU] = str(gpus)
    annotations = {PREEMPTABLE: "true"} if qos == "BE" else {}
    spec: JSON = {
        "schedulerName": "volcano",
        "priority": priority,
        "containers": [{"name": "main", "image": "app", "resources": {"requests": requests}}],
    }
    status: JSON = {"phase": "Pending"}
    if on:
        spec["nodeName"] = on
        status = {"phase": "Running", "startTime": format_time(created)}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": f"{NAMESPACE}-{name}",
            "creationTimestamp": format_time(created),
            "annotations": annotations,
            "labels": {"qos": qos},
        },
        "spec": spec,
        "status": status,
    }


def queue() -> JSON:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {
            "name": "default",
            "uid": "queue-default",
            "creationTimestamp": format_time(T0),
        },
        "spec": {"weight": 1},
        "status": {"state": "Open"},
    }


def _qos(rng: random.Random) -> str:
    return rng.choices([q for q, _, _ in QOS], weights=[w for _, w, _ in QOS])[0]


def _life(rng: random.Random) -> float:
    """A trace-like lifetime: many short-lived pods, a long tail."""
    return rng.choice([rng.uniform(2.0, 10.0), rng.uniform(10.0, 60.0), rng.uniform(60.0, 600.0)])


def generate(scale: TraceScale) -> list[Event]:
    """The recording: the queue, the nodes and their Running pods at 0 s, then the churn
    (in time order)."""
    rng = random.Random(scale.seed)
    start = at(0)
    records = [_watch("queues", queue(), start)]
    running: list[JSON] = []
    for i in range(scale.nodes):
        gpus = 8 if i % 5 == 0 else 0
        cpu = 64 if gpus else rng.choice([32, 48])
        name = f"node-{i:05d}"
        records.append(
            _watch("nodes", node(name, cpu=cpu, memory=f"{cpu * 4}Gi", gpus=gpus), start)
        )
        free_cpu, free_gpu = cpu * 1000, gpus
        while free_cpu >= 1000:
            size = rng.choice([c for c in CPUS if MILLI[c] <= free_cpu])
            want = rng.choice([1, 2, 4]) if free_gpu and rng.random() < 0.5 else 0
            want = want if want <= free_gpu else 0
            made = pod(
                f"run-{len(running):06d}",
                qos=_qos(rng),
                cpu=size,
                memory=f"{MILLI[size] * 2 // 1000 or 1}Gi",
                gpus=want,
                created=start,
                on=name,
            )
            free_cpu -= MILLI[size]
            free_gpu -= want
            running.append(made)
    records.extend(_watch("pods", made, start) for made in running)
    churn: list[Event] = []
    for made in running:
        if rng.random() < scale.departing:
            churn.append(_watch("pods", made, at(rng.uniform(1.0, scale.seconds)), "DELETED"))
    count = int(scale.seconds * scale.rate)
    for i, born in enumerate(sorted(rng.uniform(0.5, scale.seconds) for _ in range(count))):
        size = rng.choice(CPUS)
        made = pod(
            f"new-{i:06d}",
            qos=_qos(rng),
            cpu=size,
            memory=rng.choice(["512Mi", "2Gi", "8Gi"]),
            gpus=rng.choice([1, 1, 2, 4]) if rng.random() < 1 / 3 else 0,
            created=at(born),
        )
        churn.append(_watch("pods", made, at(born)))
        churn.append(_watch("pods", made, at(born + _life(rng)), "DELETED"))
    churn.sort(key=lambda event: event.at)
    return records + churn
