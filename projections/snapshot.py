"""Explicit, deterministic encoding of the cluster model for checkpoints (no pickle).

Model objects are written field by field (``dataclasses.fields``, so a field added to the
model is carried automatically when it holds plain JSON). Resources become
``{"cpu", "memory", "scalars"}``, statuses their integer, times RFC 3339. Node accounting
(``idle``, ``used``, ``releasing``, ``pipelined``) is written as folded, not recomputed, so a
resumed projection continues from bit-identical floats. Indexes (``node.tasks``,
``job.tasks``, ``pending``) are rebuilt from the tasks on load. Raw objects are embedded as
they are stored (``orjson.Fragment``), without re-encoding.

It reads and fills a :class:`~projections.clusterindex.ClusterIndex` (the objects and
indexes of the fold), not the fold itself: :mod:`projections.cluster` imports this module
for its ``dump``/``load``, and this module needs nothing of its handlers.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

from projections.accounting import Overlay
from projections.base import CheckpointError
from projections.clusterindex import ClusterIndex
from projections.model import (
    COMPLETED_STATUSES,
    JobInfo,
    NodeInfo,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskStatus,
)
from projections.ownership import Rules
from projections.parsing import time_or_none
from projections.pods import share_maps
from streams.events import JSON, format_time

T = TypeVar("T")
_RESOURCES = frozenset(
    {
        "resreq",
        "init_resreq",
        "allocatable",
        "capacity",
        "idle",
        "used",
        "releasing",
        "pipelined",
        "capability",
        "guarantee",
    }
)
_TIMES = frozenset({"creation", "start_time"})
_SKIP = frozenset({"tasks"})


def encode_resource(resource: Resource) -> JSON:
    return {"cpu": resource.milli_cpu, "memory": resource.memory, "scalars": resource.scalars}


def decode_resource(data: Any) -> Resource:
    return Resource(
        float(data["cpu"]),
        float(data["memory"]),
        {str(k): float(v) for k, v in data["scalars"].items()},
    )


def encode(obj: Any) -> JSON:
    """A model dataclass as a JSON object (``tasks`` indexes left out)."""
    out: JSON = {}
    for spec in dataclasses.fields(obj):
        name = spec.name
        if name in _SKIP:
            continue
        value = getattr(obj, name)
        if isinstance(value, Resource):
            value = encode_resource(value)
        elif name in _TIMES:
            value = format_time(value) if value is not None else None
        out[name] = value
    return out


def decode(cls: type[T], data: JSON) -> T:
    """Rebuild a model dataclass from :func:`encode`'s output (unknown keys rejected)."""
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs: dict[str, object] = {}  # the constructor arguments (decoded values, not JSON)
    for name, value in data.items():
        if name not in names:
            raise CheckpointError(f"{cls.__name__} has no field {name!r}")
        if name in _RESOURCES and value is not None:
            value = decode_resource(value)
        elif name in _TIMES:
            value = time_or_none(value)
        elif name == "status":
            value = TaskStatus(value)
        kwargs[name] = value
    return cls(**kwargs)


def encode_task(task: TaskInfo) -> JSON:
    out = encode(task)
    if task.init_resreq is task.resreq:
        out["init_resreq"] = None  # one object, as Volcano's resReq := initResReq
    return out


def decode_task(data: JSON) -> TaskInfo:
    if data.get("init_resreq") is None:
        data = {**data, "init_resreq": data["resreq"]}
        task = decode(TaskInfo, data)
        task.init_resreq = task.resreq
    else:
        task = decode(TaskInfo, data)
    share_maps(task)
    return task


def dump_cluster(state: ClusterIndex) -> JSON:
    """The body of a cluster checkpoint."""
    return {
        "version": state.version,
        "sched_version": state.sched_version,
        "skipped": state.skipped,
        "nodes": {name: encode(node) for name, node in state.nodes.items()},
        "tasks": {key: encode_task(task) for key, task in state.tasks.items()},
        "jobs": {job_id: encode(job) for job_id, job in state.jobs.items()},
        "queues": {name: encode(queue) for name, queue in state.queues.items()},
        "priority_classes": state.priority_classes,
        "rules": [
            state.rules.behaviour,
            list(state.rules.scheduler_names),
            state.rules.preemptable_by_default,
        ],
        "overlays": {
            key: [o.decision, o.kind, o.node, int(o.base_status), o.base_node]
            for key, o in state.overlays.items()
        },
    }


def load_cluster(target: ClusterIndex, body: JSON) -> None:
    """Fill a fresh ``target`` from :func:`dump_cluster`'s output (raises CheckpointError)."""
    try:
        target.version = int(body["version"])
        # a checkpoint from before sched_version existed: every change counted
        target.sched_version = int(body.get("sched_version", target.version))
        target.skipped = int(body["skipped"])
        for name in sorted(body["nodes"]):
            target.nodes[name] = decode(NodeInfo, body["nodes"][name])
        for job_id in sorted(body["jobs"]):
            target.jobs[job_id] = decode(JobInfo, body["jobs"][job_id])
        for name in sorted(body["queues"]):
            target.queues[name] = decode(QueueInfo, body["queues"][name])
        for key in sorted(body["tasks"]):
            task = decode_task(body["tasks"][key])
            target.tasks[key] = task
            job = target.jobs.get(task.job)
            if job is not None:  # a pod of another scheduler forms no job (OWNERSHIP)
                job.tasks[key] = task
            if task.status == TaskStatus.PENDING:
                target.pending[key] = task
            if task.node_name and task.status not in COMPLETED_STATUSES:
                target.nodes[task.node_name].tasks[key] = task
        target.priority_classes = {str(k): int(v) for k, v in body["priority_classes"].items()}
        if "rules" in body:  # checkpoints written before the rules existed: level 1
            behaviour, names, by_default = body["rules"]
            target.rules = Rules(int(behaviour), tuple(str(n) for n in names), bool(by_default))
        for key in sorted(body["overlays"]):
            decision, kind, node, base_status, base_node = body["overlays"][key]
            target.overlays[key] = Overlay(decision, kind, node, TaskStatus(base_status), base_node)
            target._decisions[decision] = key
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CheckpointError(f"cluster checkpoint is malformed: {exc!r}") from exc
