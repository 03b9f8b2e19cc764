"""Raw Node, PodGroup and Queue JSON → model fields (volcano-sh/volcano pkg/scheduler/api:
``job_info.go``, ``node_info.go``, ``queue_info.go``).

Job-level rules, from Volcano's ``JobInfo.SetPodGroup`` and the PodGroup controller:

* ``min_available`` = ``spec.minMember`` (absent → 0, as Go's zero value);
  ``task_min_available`` = ``spec.minTaskMember``;
* ``queue`` = ``spec.queue``, empty → ``"default"`` (Volcano's admission default);
* ``preemptable``: annotation, then label ``volcano.sh/preemptable``, default **false**;
* budget from annotations only: ``volcano.sh/jdb-max-unavailable`` (alias
  ``volcano.sh/job-disruption-budget-max-unavailable``) wins over
  ``volcano.sh/jdb-min-available`` (alias ``...-min-available``), as the seed says; logs
  written before that rule (:mod:`projections.ownership`, level 1) keep min-available
  first, as upstream's JobInfo reads it; a real key wins over its alias;
* ``priority``: the value of the PriorityClass ``spec.priorityClassName``. PriorityClasses
  are not on the log, so the value is learned from pods: Kubernetes' admission resolves a
  pod's ``spec.priorityClassName`` into ``spec.priority``, so any pod seen with that class
  tells its value. The two built-in classes have fixed values. Unknown → 0 (Volcano's
  fallback when neither the class nor a global default exists).

A pod without a PodGroup gets the PodGroup Volcano's PodGroup controller would create for
it: ``minMember`` 1, the pod's priority class, the queue from the pod's annotation
``scheduling.volcano.sh/queue-name`` (else ``default``), and the pod's
``volcano.sh/preemptable`` (annotation or label), ``volcano.sh/revocable-zone`` and budget
annotations copied onto it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from projections.model import JobInfo, NodeInfo, QueueInfo, Resource, TaskInfo, TaskStatus
from projections.ownership import LEGACY, Rules, mark
from projections.parsing import parse_bool, resource_from_list, time_or_none
from projections.pods import PREEMPTABLE, QUEUE_NAME, revocable_zone

BUILTIN_PRIORITY_CLASSES = {
    "system-cluster-critical": 2000000000,
    "system-node-critical": 2000001000,
}
JDB_MIN = ("volcano.sh/jdb-min-available", "volcano.sh/job-disruption-budget-min-available")
JDB_MAX = ("volcano.sh/jdb-max-unavailable", "volcano.sh/job-disruption-budget-max-unavailable")
_EMPTY: Mapping[str, Any] = {}
_IMPLICIT_KEYS = frozenset({PREEMPTABLE, QUEUE_NAME, *JDB_MIN, *JDB_MAX})
_JOB_FIELDS = tuple(f.name for f in fields(JobInfo) if f.name not in ("namespace", "name", "tasks"))


def budget(annotations: Mapping[str, Any], *, max_first: bool = False) -> tuple[str, str]:
    """``(min_available, max_unavailable)`` of a disruption budget; real key first.

    With ``max_first`` max-unavailable wins when both are set, else min-available does.
    """
    if max_first:
        for key in JDB_MAX:
            if key in annotations:
                return "", str(annotations[key])
    for key in JDB_MIN:
        if key in annotations:
            return str(annotations[key]), ""
    for key in JDB_MAX:
        if key in annotations:
            return "", str(annotations[key])
    return "", ""


def apply_podgroup(
    job: JobInfo, podgroup: Mapping[str, Any], priority: int, rules: Rules = LEGACY
) -> None:
    """Set a job's PodGroup-derived fields in place (its tasks are kept)."""
    meta = podgroup.get("metadata") or _EMPTY
    spec = podgroup.get("spec") or _EMPTY
    annotations = meta.get("annotations") or _EMPTY
    min_task = spec.get("minTaskMember") or _EMPTY
    job.uid = str(meta.get("uid") or "")
    job.queue = str(spec.get("queue") or "default")
    job.min_available = int(spec.get("minMember") or 0)
    job.task_min_available = {str(k): int(v) for k, v in sorted(min_task.items())}
    job.priority_class = str(spec.get("priorityClassName") or "")
    job.priority = priority
    job.preemptable_mark = mark(annotations, meta.get("labels") or _EMPTY)
    job.preemptable = job.preemptable_mark is True
    job.revocable_zone = revocable_zone(annotations)
    job.budget_min_available, job.budget_max_unavailable = budget(
        annotations, max_first=rules.max_first
    )
    job.creation = time_or_none(meta.get("creationTimestamp"))
    job.phase = str((podgroup.get("status") or _EMPTY).get("phase") or "")
    job.implicit = False
    job.placeholder = False


def _implicit_fields(task: TaskInfo, rules: Rules) -> tuple[str, bool, str, str]:
    """Queue, preemptable and budget of the PodGroup a bare pod would get.

    The controller copies the pod's ``volcano.sh/preemptable`` annotation and label, its
    revocable-zone annotation and its budget annotation onto the PodGroup, so the job-level
    rules read the pod's own values (the revocable zone is then the task's own).
    """
    annotations, labels = task.annotations, task.labels
    if _IMPLICIT_KEYS.isdisjoint(annotations) and PREEMPTABLE not in labels:
        return "default", False, "", ""
    value = annotations.get(PREEMPTABLE)
    if value is None:
        value = labels.get(PREEMPTABLE)
    preemptable = value is not None and parse_bool(value) is True
    budget_min, budget_max = (
        budget(annotations, max_first=rules.max_first) if annotations else ("", "")
    )
    return str(annotations.get(QUEUE_NAME) or "default"), preemptable, budget_min, budget_max


def implicit_job(task: TaskInfo, rules: Rules = LEGACY) -> JobInfo:
    """The job of one for a pod without a PodGroup (see the module docstring)."""
    queue, preemptable, budget_min, budget_max = _implicit_fields(task, rules)
    return JobInfo(
        task.uid,
        task.namespace,
        task.name,
        queue,
        1,
        {},
        task.pod_priority,
        preemptable,
        task.revocable_zone,
        budget_min,
        budget_max,
        task.creation,
        "Inqueue" if task.status == TaskStatus.PENDING else "Running",
        True,
        {},
        False,
        task.priority_class,
    )


def apply_implicit(job: JobInfo, task: TaskInfo, rules: Rules = LEGACY) -> None:
    """Make ``job`` (in place) the implicit job of ``task``."""
    fresh = implicit_job(task, rules)
    for name in _JOB_FIELDS:
        setattr(job, name, getattr(fresh, name))


def reset_placeholder(job: JobInfo) -> None:
    """Back to a job whose PodGroup is unknown (Volcano's ``UnsetPodGroup``)."""
    job.uid = ""
    job.queue = "default"
    job.min_available = 0
    job.task_min_available = {}
    job.priority_class = ""
    job.priority = 0
    job.preemptable = False
    job.preemptable_mark = None
    job.revocable_zone = ""
    job.budget_min_available = job.budget_max_unavailable = ""
    job.creation = None
    job.phase = ""
    job.implicit = False
    job.placeholder = True


def node_ready(status: Mapping[str, Any]) -> bool:
    """Volcano: a node is NotReady only if its ``Ready`` condition exists and is not True."""
    for condition in status.get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return True


def node_inputs(raw: Mapping[str, Any]) -> tuple[Any, ...]:
    """What :func:`apply_node` reads of a raw Node, as written in it: equal inputs give
    equal fields (a status heartbeat changes only condition times, which are not read).
    Compared with ``==``, where a label, taint or quantity that is equal but written
    differently would read the same: ``streams.shapes`` admits only strings for labels and
    taints, and a quantity's number and its float parse alike."""
    meta = raw.get("metadata") or _EMPTY
    spec = raw.get("spec") or _EMPTY
    status = raw.get("status") or _EMPTY
    return (
        meta.get("labels"),
        spec.get("taints"),
        spec.get("unschedulable"),
        status.get("allocatable"),
        status.get("capacity"),
        node_ready(status),
    )


def apply_node(node: NodeInfo, raw: Mapping[str, Any]) -> None:
    """Set a node's static fields from its raw JSON; ``idle = allocatable - used``."""
    meta = raw.get("metadata") or _EMPTY
    spec = raw.get("spec") or _EMPTY
    status = raw.get("status") or _EMPTY
    labels = meta.get("labels") or {}
    # everything is read before anything is set: a malformed node changes nothing
    allocatable = resource_from_list(status.get("allocatable"))
    capacity = resource_from_list(status.get("capacity") or status.get("allocatable"))
    zone = str(labels.get("volcano.sh/revocable-zone") or "")
    taints = list(spec.get("taints") or [])
    unschedulable = bool(spec.get("unschedulable"))
    ready = node_ready(status)
    idle = allocatable.clone().sub(node.used)
    node.allocatable, node.capacity, node.labels = allocatable, capacity, labels
    node.revocable_zone, node.taints, node.unschedulable = zone, taints, unschedulable
    node.ready, node.placeholder, node.idle = ready, False, idle


def new_node(name: str) -> NodeInfo:
    """A node known only from tasks that name it (Volcano's ``NewNodeInfo(nil)``)."""
    return NodeInfo(name, Resource(), Resource(), ready=False, placeholder=True)


def queue_from(raw: Mapping[str, Any]) -> QueueInfo:
    """A Volcano Queue; a missing capability or guarantee is ``None`` (unlimited / none)."""
    meta = raw.get("metadata") or _EMPTY
    spec = raw.get("spec") or _EMPTY
    capability = spec.get("capability")
    guarantee = (spec.get("guarantee") or _EMPTY).get("resource")
    weight = spec.get("weight")
    return QueueInfo(
        name=str(meta.get("name") or ""),
        weight=weight if isinstance(weight, int) and weight > 0 else 1,
        capability=resource_from_list(capability) if capability else None,
        guarantee=resource_from_list(guarantee) if guarantee else None,
        priority=int(spec.get("priority") or 0),
        state=str((raw.get("status") or _EMPTY).get("state") or "Open"),
        creation=time_or_none(meta.get("creationTimestamp")),
        uid=str(meta.get("uid") or ""),
    )
