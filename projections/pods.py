"""A raw Pod → a :class:`~projections.model.TaskInfo`, with Volcano's rules (spec §1.2-1.3).

This is the hot path of the cluster fold (one call per pod watch event), so it reads the
raw JSON directly, parses each distinct quantity once (``projections.parsing``) and
shares equal labels, annotations and tolerations between pods of one workload.

Rules, as Volcano's ``NewTaskInfo`` applies them:

* status from ``status.phase``, ``spec.nodeName`` and ``metadata.deletionTimestamp``
  (a missing or unrecognised phase is ``Unknown``, as in Go's switch default);
* ``resreq`` and ``init_resreq`` are one object (``resReq := initResReq`` upstream): the sum
  of the containers plus ``spec.overhead``, with restartable (sidecar) init containers
  added, max'ed against each init container, plus the scalar ``pods: 1``;
* ``priority`` 1 ← ``spec.priority`` ← annotation ``volcano.sh/task-priority`` (int32);
  ``pod_priority`` = ``spec.priority`` or 0;
* ``preemptable``: annotation, then label, Go ``ParseBool`` (invalid → false), default true;
* ``revocable_zone``: annotation ``"*"`` → ``"*"``, any other value → ``""``; else the
  preemptable *annotation* parsing true → ``"*"``;
* ``qos``: label ``koordinator.sh/qosClass``, else ``BE`` for a Kubernetes BestEffort pod
  (``status.qosClass``, or no positive cpu/memory request or limit anywhere), else ``LS``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from projections.model import JSON, Resource, TaskInfo, TaskStatus
from projections.parsing import (
    add_requests,
    intern_map,
    max_into,
    milli,
    parse_bool,
    parse_int32,
    time_or_none,
    units,
)

GROUP_NAME = "scheduling.k8s.io/group-name"
PREEMPTABLE = "volcano.sh/preemptable"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
TASK_PRIORITY = "volcano.sh/task-priority"
TASK_SPEC = "volcano.sh/task-spec"
QUEUE_NAME = "scheduling.volcano.sh/queue-name"
QOS_LABEL = "koordinator.sh/qosClass"

_EMPTY: Mapping[str, Any] = {}
_LABELS: dict[Any, Any] = {}
_ANNOTATIONS: dict[Any, Any] = {}
_SELECTORS: dict[Any, Any] = {}
_TOLERATIONS: dict[Any, list[JSON]] = {}
_intern = sys.intern


def task_status(phase: Any, node_name: str, deleting: bool) -> TaskStatus:
    """Volcano's ``getTaskStatus`` (spec §1.2)."""
    if phase == "Running":
        return TaskStatus.RELEASING if deleting else TaskStatus.RUNNING
    if phase == "Pending":
        if deleting:
            return TaskStatus.RELEASING
        return TaskStatus.BOUND if node_name else TaskStatus.PENDING
    if phase == "Succeeded":
        return TaskStatus.SUCCEEDED
    if phase == "Failed":
        return TaskStatus.FAILED
    return TaskStatus.UNKNOWN


def _container_requests(containers: Any) -> Resource:
    acc = [0.0, 0.0]
    scalars: dict[str, float] = {}
    for container in containers or ():
        resources = container.get("resources")
        if resources:
            requests = resources.get("requests")
            if requests:
                add_requests(acc, scalars, requests)
    return Resource(acc[0], acc[1], scalars)


def pod_request(spec: Mapping[str, Any]) -> Resource:
    """Volcano's ``GetPodResourceRequest`` (the request a pod needs to start and run)."""
    result = _container_requests(spec.get("containers"))
    overhead = spec.get("overhead")
    if overhead:
        result.add(_container_requests([{"resources": {"requests": overhead}}]))
    init_containers = spec.get("initContainers")
    if init_containers:
        restartable = Resource()
        init_max = Resource()
        for container in init_containers:
            request = _container_requests([container])
            if container.get("restartPolicy") == "Always":
                result.add(request)
                restartable.add(request)
                request = restartable
            else:
                request.add(restartable)
            max_into(init_max, request)
        max_into(result, init_max)
    scalars = result.scalars
    scalars["pods"] = scalars.get("pods", 0.0) + 1.0
    return result


def pod_preemptable(annotations: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """``volcano.sh/preemptable``: annotation, then label; invalid → false; default true."""
    value = annotations.get(PREEMPTABLE)
    if value is None:
        value = labels.get(PREEMPTABLE)
        if value is None:
            return True
    return parse_bool(value) is True


def revocable_zone(annotations: Mapping[str, Any]) -> str:
    """Volcano's ``GetPodRevocableZone`` (annotations only; pods and PodGroups alike)."""
    zone = annotations.get(REVOCABLE_ZONE)
    if zone is not None:
        return "*" if zone == "*" else ""
    value = annotations.get(PREEMPTABLE)
    if value is not None and parse_bool(value) is True:
        return "*"
    return ""


def _is_best_effort_pod(spec: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """Kubernetes' BestEffort QoS: no positive cpu/memory request or limit in any container."""
    qos_class = status.get("qosClass")
    if qos_class:
        return bool(qos_class == "BestEffort")
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            resources = container.get("resources") or _EMPTY
            for part in ("requests", "limits"):
                values = resources.get(part) or _EMPTY
                if milli(values.get("cpu", 0)) > 0 or units(values.get("memory", 0)) > 0:
                    return False
    return True


def _tolerations(value: Any) -> list[JSON]:
    if not value:
        return []
    try:
        key = tuple(tuple(item.items()) for item in value)
        shared = _TOLERATIONS.get(key)
    except (TypeError, AttributeError):
        return list(value)
    if shared is None:
        if len(_TOLERATIONS) >= 4096:
            _TOLERATIONS.clear()
        _TOLERATIONS[key] = shared = value
    return shared


def _owner_kind(meta: Mapping[str, Any]) -> str:
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            return _intern(str(ref.get("kind") or ""))
    return ""


def job_id(namespace: str, name: str, annotations: Mapping[str, Any]) -> tuple[str, bool]:
    """The task's job id and whether it is an implicit job of one (no PodGroup named)."""
    group = annotations.get(GROUP_NAME)
    if group:
        return f"{namespace}/{group}", False
    return f"{namespace}/{name}", True


def task_from_pod(pod: Mapping[str, Any]) -> TaskInfo:
    """Build the task for a raw Pod (raises ``KeyError``/``TypeError`` on a malformed one)."""
    meta = pod["metadata"]
    spec = pod.get("spec") or _EMPTY
    status = pod.get("status") or _EMPTY
    namespace = _intern(meta.get("namespace") or "default")
    name = meta["name"]
    annotations = intern_map(_ANNOTATIONS, meta.get("annotations"))
    labels = intern_map(_LABELS, meta.get("labels"))
    node_name = spec.get("nodeName") or ""
    if node_name:
        node_name = _intern(node_name)
    deleting = bool(meta.get("deletionTimestamp"))
    request = pod_request(spec)

    spec_priority = spec.get("priority")
    pod_priority = spec_priority if isinstance(spec_priority, int) else 0
    priority = pod_priority if isinstance(spec_priority, int) else 1
    if TASK_PRIORITY in annotations:
        override = parse_int32(annotations[TASK_PRIORITY])
        if override is not None:
            priority = override

    qos = labels.get(QOS_LABEL)
    if qos is None:
        qos = "BE" if _is_best_effort_pod(spec, status) else "LS"

    role = annotations.get(TASK_SPEC) or labels.get(TASK_SPEC) or ""
    grace = spec.get("terminationGracePeriodSeconds")
    group = annotations.get(GROUP_NAME)
    return TaskInfo(
        meta.get("uid") or "",
        namespace,
        name,
        f"{namespace}/{group}" if group else f"{namespace}/{name}",
        task_status(status.get("phase"), node_name, deleting),
        request,
        request,
        priority,
        pod_priority,
        pod_preemptable(annotations, labels),
        revocable_zone(annotations),
        request.is_empty(),
        _intern(qos),
        node_name,
        _intern(spec.get("schedulerName") or ""),
        role,
        _intern(spec.get("priorityClassName") or ""),
        time_or_none(meta.get("creationTimestamp")),
        time_or_none(status.get("startTime")),
        _owner_kind(meta),
        intern_map(_SELECTORS, spec.get("nodeSelector")),
        _tolerations(spec.get("tolerations")),
        labels,
        annotations,
        grace if isinstance(grace, int) else 30,
        deleting,
        spec.get("affinity") or None,
    )
