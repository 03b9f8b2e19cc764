"""A raw Pod → a :class:`~projections.model.TaskInfo`, with Volcano's rules.

The rules are ``NewTaskInfo`` (volcano-sh/volcano pkg/scheduler/api/job_info.go),
``getTaskStatus`` (pkg/scheduler/api/helpers.go) and ``GetPodPreemptable`` /
``GetPodRevocableZone`` (pkg/scheduler/api/pod_info.go).

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

import orjson

from projections.model import JSON, Resource, TaskInfo, TaskStatus
from projections.parsing import (
    MILLI_CACHE,
    TIME_CACHE,
    UNITS_CACHE,
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

#: shared empty values (read-only by contract, like every map a task holds)
_EMPTY: JSON = {}
_NONE: list[JSON] = []
_LABELS: dict[Any, Any] = {}
_ANNOTATIONS: dict[Any, Any] = {}
_SELECTORS: dict[Any, Any] = {}
_TOLERATIONS: dict[bytes, list[JSON]] = {}
_AFFINITY: dict[bytes, JSON] = {}
_intern = sys.intern
#: keys whose presence sends a pod down the slow path of ``task_from_pod``
_ANNOTATION_KEYS = frozenset({GROUP_NAME, PREEMPTABLE, REVOCABLE_ZONE, TASK_PRIORITY, TASK_SPEC})
_LABEL_KEYS = frozenset({PREEMPTABLE, TASK_SPEC, QOS_LABEL})


def task_status(phase: Any, node_name: str, deleting: bool) -> TaskStatus:
    """Volcano's ``getTaskStatus`` (volcano-sh/volcano pkg/scheduler/api/helpers.go).

    Running or Pending with a deletion timestamp → Releasing; Running → Running; Pending →
    Bound when it names a node, else Pending; Succeeded, Failed, Unknown map by name.
    """
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


class _Shared:
    """Equal labels, annotations, tolerations, affinity and selector, per owner.

    Pods of one ReplicaSet (or Job, StatefulSet...) mostly carry equal copies of these.
    Comparing with the previous pod of the same controller owner is cheap (the keys come
    from orjson's key cache), and keeping one copy saves kilobytes per pod. Shared objects
    are read-only by contract (``projections.model``).
    """

    __slots__ = ("affinity", "annotations", "labels", "selector", "tolerations")

    def __init__(
        self, labels: Any, annotations: Any, tolerations: Any, affinity: Any, selector: Any
    ) -> None:
        self.labels = labels
        self.annotations = annotations
        self.tolerations = tolerations
        self.affinity = affinity
        self.selector = selector


_BY_OWNER: dict[str, _Shared] = {}


def _fast_request(containers: Any) -> Resource:
    """``pod_request`` for the common pod: regular containers only."""
    cpu = memory = 0.0
    scalars: dict[str, float] = {}
    milli_cache, units_cache = MILLI_CACHE, UNITS_CACHE
    for container in containers or ():
        resources = container.get("resources")
        if not resources:
            continue
        requests = resources.get("requests")
        if not requests:
            continue
        for name, quantity in requests.items():
            if name == "cpu":
                value = milli_cache.get(quantity)
                cpu += milli(quantity) if value is None else value
            elif name == "memory":
                value = units_cache.get(quantity)
                memory += units(quantity) if value is None else value
            else:
                add_requests([0.0, 0.0], scalars, {name: quantity})
    scalars["pods"] = scalars.get("pods", 0.0) + 1.0
    return Resource(cpu, memory, scalars)


class _Shape:
    """What the ``resources`` of a common pod's containers decide (see :func:`_shape`).

    ``k8s_qos`` and ``best_effort`` are the spec's answers for a pod whose status names
    no QoS class; each is worked out the first time a pod needs it, by the very function
    the full path calls, so a pod on which that function raises raises as before.
    """

    __slots__ = ("best_effort", "empty", "k8s_qos", "request")

    def __init__(self, request: Resource) -> None:
        self.request = request
        self.empty = request.is_empty()
        self.k8s_qos: str | None = None
        self.best_effort: bool | None = None


#: the containers' resources (as JSON bytes) -> their shape: a workload's pods, and most
#: of a day's pod updates, repeat a few shapes, and the key is cheaper than the parse
_SHAPES: dict[bytes, _Shape] = {}


def _shape(containers: Any) -> _Shape | None:
    """The shape of ``spec.containers`` for a pod without init containers or overhead.

    Every answer of the shape depends on the containers' ``resources`` alone (and on the
    status' QoS class, read apart), so equal resources share one. The key is their JSON,
    which tells ``1`` from ``"1"``, ``1.0`` and ``true``, as the parse does. ``None``
    when they have no JSON form (a value built in Python, not decoded from a log); the
    caller then takes the full path. Raises where :func:`_fast_request` raises.
    """
    resources = [container.get("resources") for container in containers or ()]
    try:
        key = orjson.dumps(resources)
    except orjson.JSONEncodeError:
        return None
    shape = _SHAPES.get(key)
    if shape is None:
        shape = _Shape(_fast_request(containers))
        if len(_SHAPES) >= 1 << 16:
            _SHAPES.clear()
        _SHAPES[key] = shape
    return shape


def task_from_pod(pod: Mapping[str, Any]) -> TaskInfo:
    """Build the task for a raw Pod (raises ``KeyError``/``TypeError`` on a malformed one)."""
    meta = pod["metadata"]
    spec = pod.get("spec") or _EMPTY
    status = pod.get("status") or _EMPTY
    namespace = meta.get("namespace") or "default"
    name = meta["name"]
    annotations = meta.get("annotations") or _EMPTY
    labels = meta.get("labels") or _EMPTY
    tolerations = spec.get("tolerations") or _NONE
    affinity = spec.get("affinity") or None
    selector = spec.get("nodeSelector") or _EMPTY

    owner_kind = owner = ""
    refs = meta.get("ownerReferences")
    if refs:
        for ref in refs:
            if ref.get("controller"):
                owner_kind = _intern(ref.get("kind") or "")
                owner = f"{owner_kind}/{ref.get('name') or ''}"
                shared = _BY_OWNER.get(ref.get("uid"))
                if shared is None:
                    if len(_BY_OWNER) >= 1 << 16:
                        _BY_OWNER.clear()
                    _BY_OWNER[ref.get("uid")] = _Shared(
                        labels, annotations, tolerations, affinity, selector
                    )
                else:
                    # Equal to the owner's last pod: share its copy; else remember this one.
                    if shared.labels == labels:
                        labels = shared.labels
                    else:
                        shared.labels = labels
                    if shared.annotations == annotations:
                        annotations = shared.annotations
                    else:
                        shared.annotations = annotations
                    if shared.tolerations == tolerations:
                        tolerations = shared.tolerations
                    else:
                        shared.tolerations = tolerations
                    if shared.affinity == affinity:
                        affinity = shared.affinity
                    else:
                        shared.affinity = affinity
                    if shared.selector == selector:
                        selector = shared.selector
                    else:
                        shared.selector = selector
                break

    shape = None
    if "initContainers" in spec or "overhead" in spec:
        request = pod_request(spec)
    else:
        shape = _shape(spec.get("containers"))
        if shape is None:
            request = _fast_request(spec.get("containers"))
        else:
            held = shape.request  # a copy per task: a task's request is its own
            request = Resource(held.milli_cpu, held.memory, dict(held.scalars))

    spec_priority = spec.get("priority")
    if isinstance(spec_priority, int):
        pod_priority = priority = spec_priority
    else:
        pod_priority, priority = 0, 1
    group = preemptable = None
    zone = role = ""
    if annotations and not _ANNOTATION_KEYS.isdisjoint(annotations):
        group = annotations.get(GROUP_NAME)
        role = annotations.get(TASK_SPEC) or ""
        zone = revocable_zone(annotations)
        preemptable = annotations.get(PREEMPTABLE)
        if TASK_PRIORITY in annotations:
            override = parse_int32(annotations[TASK_PRIORITY])
            if override is not None:
                priority = override
    qos = None
    if labels and not _LABEL_KEYS.isdisjoint(labels):
        role = role or labels.get(TASK_SPEC) or ""
        if preemptable is None:
            preemptable = labels.get(PREEMPTABLE)
        qos = labels.get(QOS_LABEL)
    if qos is None:
        qos = "BE" if _best_effort(spec, status, shape) else "LS"

    node_name = spec.get("nodeName") or ""
    deleting = bool(meta.get("deletionTimestamp"))
    grace = spec.get("terminationGracePeriodSeconds")
    created = meta.get("creationTimestamp")
    started = status.get("startTime")
    times = TIME_CACHE
    return TaskInfo(
        meta.get("uid") or "",
        _intern(namespace),
        name,
        f"{namespace}/{group}" if group else f"{namespace}/{name}",
        task_status(status.get("phase"), node_name, deleting),
        request,
        request,
        priority,
        pod_priority,
        preemptable is None or parse_bool(preemptable) is True,
        zone,
        request.is_empty() if shape is None else shape.empty,
        _intern(qos),
        _intern(node_name) if node_name else "",
        _intern(spec.get("schedulerName") or ""),
        role,
        _intern(spec.get("priorityClassName") or ""),
        (times.get(created) or time_or_none(created)) if created else None,
        (times.get(started) or time_or_none(started)) if started else None,
        owner_kind,
        selector,
        tolerations,
        labels,
        annotations,
        grace if isinstance(grace, int) else 30,
        deleting,
        affinity,
        owner,
        spec.get("preemptionPolicy") or "",
        status.get("nominatedNodeName") or "",
        _k8s_qos(spec, status, shape),
    )


def _best_effort(spec: Mapping[str, Any], status: Mapping[str, Any], shape: _Shape | None) -> bool:
    """:func:`_is_best_effort_pod`, the spec's answer kept in ``shape``."""
    if shape is None or status.get("qosClass"):
        return _is_best_effort_pod(spec, status)
    if shape.best_effort is None:
        shape.best_effort = _is_best_effort_pod(spec, _EMPTY)
    return shape.best_effort


def _k8s_qos(spec: Mapping[str, Any], status: Mapping[str, Any], shape: _Shape | None) -> str:
    """:func:`k8s_qos_class`, the spec's answer kept in ``shape``."""
    given = status.get("qosClass")
    if shape is None or (isinstance(given, str) and given):
        return k8s_qos_class(spec, status)
    if shape.k8s_qos is None:
        shape.k8s_qos = k8s_qos_class(spec, _EMPTY)
    return shape.k8s_qos


def _limits_equal_requests(container: Mapping[str, Any]) -> bool:
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or limits
    return all(
        name in limits and str(requests.get(name)) == str(limits[name])
        for name in ("cpu", "memory")
    )


def k8s_qos_class(spec: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    """The pod's Kubernetes QoS class: ``status.qosClass`` when the API server set it,
    else computed as Kubernetes' ``GetPodQOS`` does (simplified to cpu and memory): no
    request or limit anywhere → BestEffort; every container's cpu and memory limits set
    and equal to the requests → Guaranteed; otherwise Burstable."""
    given = status.get("qosClass")
    if isinstance(given, str) and given:
        return given
    containers = [
        c
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])
        if isinstance(c, Mapping)
    ]
    if not any(
        (c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits")
        for c in containers
    ):
        return "BestEffort"
    if containers and all(_limits_equal_requests(c) for c in containers):
        return "Guaranteed"
    return "Burstable"


def share_maps(task: TaskInfo) -> None:
    """Share a restored task's maps with equal ones (checkpoints store them per task)."""
    for field in SHARED_MAPS:
        setattr(task, field, shared_map(field, getattr(task, field)))


#: the task fields :func:`share_maps` shares
SHARED_MAPS = ("labels", "annotations", "node_selector", "tolerations", "affinity")
_FLAT = {"labels": _LABELS, "annotations": _ANNOTATIONS, "node_selector": _SELECTORS}
_ENCODED: dict[str, dict[bytes, Any]] = {"tolerations": _TOLERATIONS, "affinity": _AFFINITY}


def shared_map(field: str, value: Any) -> Any:
    """The value a restored task holds for ``field`` (one of :data:`SHARED_MAPS`): an
    equal one already shared when there is one. An empty label, annotation or selector
    map comes back as a new empty dict; an empty toleration list or affinity as it is."""
    flat = _FLAT.get(field)
    if flat is not None:
        return intern_map(flat, value)
    if not value:
        return value
    return _ENCODED[field].setdefault(orjson.dumps(value), value)
