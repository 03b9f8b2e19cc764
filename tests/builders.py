"""Builders of raw Kubernetes JSON and log events for tests (Volcano's util.BuildPod style)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from streams.events import Event, format_time, make_event

JSON = dict[str, Any]
T0 = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)


def at(minutes: float = 0.0, *, base: datetime = T0) -> datetime:
    return base + timedelta(minutes=minutes)


def build_node(
    name: str,
    *,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[JSON] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
    capacity: dict[str, str] | None = None,
) -> JSON:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    node: JSON = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"node-{name}", "labels": dict(labels or {})},
        "spec": {},
        "status": {
            "allocatable": alloc,
            "capacity": dict(capacity or alloc),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    if taints:
        node["spec"]["taints"] = taints
    if unschedulable:
        node["spec"]["unschedulable"] = True
    return node


def build_pod(
    namespace: str,
    name: str,
    *,
    node: str = "",
    phase: str = "Running",
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    group: str | None = None,
    priority: int | None = None,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    owner_kind: str | None = None,
    scheduler: str = "volcano",
    created: datetime = T0,
    started: datetime | None = None,
    deleting: datetime | None = None,
    grace: int | None = None,
    containers: list[JSON] | None = None,
    container_statuses: list[JSON] | None = None,
) -> JSON:
    requests: JSON = {}
    if cpu is not None:
        requests["cpu"] = cpu
    if memory is not None:
        requests["memory"] = memory
    ann = dict(annotations or {})
    if group is not None:
        ann["scheduling.k8s.io/group-name"] = group
    meta: JSON = {
        "name": name,
        "namespace": namespace,
        "uid": f"{namespace}-{name}",
        "creationTimestamp": format_time(created),
        "annotations": ann,
        "labels": dict(labels or {}),
    }
    if owner_kind:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner_kind,
                "name": f"{name}-owner",
                "uid": f"owner-{name}",
                "controller": True,
            }
        ]
    if deleting is not None:
        meta["deletionTimestamp"] = format_time(deleting)
    spec: JSON = {
        "schedulerName": scheduler,
        "containers": containers
        if containers is not None
        else [{"name": "main", "image": "busybox", "resources": {"requests": requests}}],
    }
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    status: JSON = {"phase": phase}
    if phase == "Running":
        status["startTime"] = format_time(started or created)
    if container_statuses is not None:
        status["containerStatuses"] = container_statuses
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def build_podgroup(
    namespace: str,
    name: str,
    *,
    min_member: int = 1,
    queue: str = "default",
    annotations: dict[str, str] | None = None,
    phase: str = "Running",
    created: datetime = T0,
    priority_class: str | None = None,
) -> JSON:
    spec: JSON = {"minMember": min_member, "queue": queue}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"pg-{namespace}-{name}",
            "creationTimestamp": format_time(created),
            "annotations": dict(annotations or {}),
        },
        "spec": spec,
        "status": {"phase": phase},
    }


def build_queue(name: str = "default", *, weight: int = 1, capability: JSON | None = None) -> JSON:
    spec: JSON = {"weight": weight}
    if capability:
        spec["capability"] = capability
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name, "uid": f"queue-{name}", "creationTimestamp": format_time(T0)},
        "spec": spec,
        "status": {"state": "Open"},
    }


def watch(resource: str, obj: JSON, when: datetime = T0, event: str = "ADDED") -> Event:
    return make_event("k8s.watch", when, {"resource": resource, "event": event, "object": obj})


def node_metrics(name: str, *, cpu: str, memory: str, when: datetime = T0) -> Event:
    return make_event(
        "metrics.node",
        when,
        {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "NodeMetrics",
            "metadata": {"name": name},
            "timestamp": format_time(when),
            "window": "30s",
            "usage": {"cpu": cpu, "memory": memory},
        },
    )


def pod_metrics(namespace: str, name: str, *, cpu: str, memory: str, when: datetime = T0) -> Event:
    return make_event(
        "metrics.pod",
        when,
        {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "PodMetrics",
            "metadata": {"name": name, "namespace": namespace},
            "timestamp": format_time(when),
            "window": "30s",
            "containers": [{"name": "main", "usage": {"cpu": cpu, "memory": memory}}],
        },
    )
