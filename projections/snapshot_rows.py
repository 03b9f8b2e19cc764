"""The cluster checkpoint in rows (format 2): small to store, quick to load.

Why a second encoding beside :mod:`projections.snapshot` (format 1, still loaded): a
format-1 checkpoint writes every model object as a JSON object, so each of 30,000 tasks
repeats ~35 field names and its labels and annotations, and loading it builds a dict per
object before the object itself (78.8 MiB and 5.4 s for a World at 30,000 pods). Here:

* each model class's field names are written once (``fields``), each object as a list of
  its values in that order (a field the model does not have any more, or lacks, is
  refused: :class:`~projections.base.CheckpointError`, so the reader folds instead);
* the tasks' maps (labels, annotations, node selector, tolerations, affinity) are written
  once per distinct value in a table (``maps``) and named by their index: the pods of one
  workload share them, and the loaded tasks share them again as the fold would
  (:func:`projections.pods.shared_map`, once per entry of the table);
* resources are ``[cpu, memory, scalars]``, statuses their integer, times RFC 3339.

What the indexes hold (``node.tasks``, ``job.tasks``, ``pending``) is rebuilt on load, as
format 1 does; node accounting is written as folded, so a resumed fold continues from
bit-identical floats. Equal states give equal bytes (the maps table is keyed by the
canonical, key-sorted encoding of each map).

Format 3 (:mod:`projections.rowcache`, what checkpoints of version 3 hold) is this with
the maps named by a digest of their encoding instead of an index, so that a writer can
keep each task's row from one checkpoint to the next; :func:`load_rows` reads both, and
format 2 is still written to digest the state of a checkpoint of version 1 or 2.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable
from typing import Any

import orjson

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
from projections.pods import SHARED_MAPS, shared_map
from projections.snapshot import _RESOURCES, _SKIP, _TIMES
from streams.events import JSON

#: the task fields written through the maps table
MAPPED = frozenset(SHARED_MAPS)
_CLASSES: dict[str, type[Any]] = {
    "task": TaskInfo,
    "node": NodeInfo,
    "job": JobInfo,
    "queue": QueueInfo,
}


def names_of(cls: type[Any]) -> list[str]:
    return [f.name for f in dataclasses.fields(cls) if f.name not in _SKIP]


def resource_out(value: Resource | None) -> Any:
    if value is None:
        return None
    return [value.milli_cpu, value.memory, value.scalars]


def _resource_in(value: Any) -> Resource | None:
    if value is None:
        return None
    cpu, memory, scalars = value
    named = {str(k): float(v) for k, v in scalars.items()} if scalars else {}
    return Resource(float(cpu), float(memory), named)


class _Maps:
    """The table of distinct maps, in order of first use."""

    def __init__(self) -> None:
        self.index: dict[bytes, int] = {}
        self.values: list[orjson.Fragment] = []
        #: the maps already written, by identity (the fold shares equal maps between
        #: tasks: each shared one is encoded once); they stay alive while the dump runs
        self._seen: dict[int, tuple[Any, int]] = {}
        #: the empty map and list, by type: each task's empty labels are its own dict
        self._empty: dict[type, int] = {}

    def ref(self, value: Any) -> int:
        seen = self._seen.get(id(value))
        if seen is not None and seen[0] is value:
            return seen[1]
        kind = type(value)
        if not value and (kind is dict or kind is list):
            found = self._empty.get(kind)
            if found is None:
                found = self._empty[kind] = self._ref(value)
            return found
        found = self._ref(value)
        self._seen[id(value)] = (value, found)
        return found

    def _ref(self, value: Any) -> int:
        key = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        found = self.index.get(key)
        if found is None:
            found = self.index[key] = len(self.values)
            self.values.append(orjson.Fragment(key))
        return found


def row_writer(cls: type[Any], maps: _Maps | None = None) -> Callable[[Any], list[Any]]:
    """A function writing one object of ``cls`` as its row. Times and statuses are left as
    they are: the row is written with ``orjson.OPT_UTC_Z`` (:func:`dumps`), which gives
    :func:`streams.events.format_time`'s text, and a status is an ``IntEnum``."""
    names = names_of(cls)
    steps: list[tuple[int, Callable[[Any], Any]]] = []
    for i, name in enumerate(names):
        if name in _RESOURCES:
            steps.append((i, resource_out))
        elif maps is not None and name in MAPPED:
            steps.append((i, maps.ref))
    get = operator.attrgetter(*names)

    def write(obj: Any) -> list[Any]:
        row = list(get(obj))
        for i, step in steps:
            row[i] = step(row[i])
        return row

    return write


def dumps(name: str, position: int, body: JSON, *, fmt: int) -> bytes:
    """:func:`projections.base.encode_state`'s envelope of ``body``, times as RFC 3339
    UTC with ``Z`` (the rows hold them as datetimes)."""
    return orjson.dumps(
        {"projection": name, "format": fmt, "position": position, "state": body},
        option=orjson.OPT_SORT_KEYS | orjson.OPT_UTC_Z,
    )


#: a status by its integer (a lookup: ``TaskStatus(value)`` costs an Enum call per task)
_STATUSES = {int(status): status for status in TaskStatus}


class _SharedMaps:
    """One task field's maps, from the checkpoint's table (``maps``), each shared with
    equal ones (:func:`projections.pods.shared_map`) once per table entry, not once per
    task naming it: the tasks of one workload name one entry. An empty entry is shared
    again for every task, as :func:`~projections.pods.share_maps` does (an empty label
    map is each task's own: a new dict each time, without asking again)."""

    __slots__ = ("_field", "_fresh", "_get", "_shared")

    def __init__(self, field: str, maps: list[Any] | JSON) -> None:
        self._field = field
        #: an entry of format 2's list, named by index, or of format 3's dict, by digest
        self._get: Callable[[Any], Any] = maps.__getitem__
        self._shared: dict[int | str, Any] = {}
        #: the entries :func:`~projections.pods.shared_map` gives a new empty dict for
        self._fresh: set[int | str] = set()

    def get(self, index: int | str) -> Any:
        found = self._shared.get(index)
        if found is None:
            if index in self._fresh:
                return {}
            value = self._get(index)
            found = shared_map(self._field, value)
            if found or found is value:  # shared, or an empty one given back as it is
                self._shared[index] = found
            else:
                self._fresh.add(index)
        return found


def _reader(
    cls: type[Any], names: Any, maps: list[Any] | JSON | None
) -> Callable[[list[Any]], Any]:
    """A function building one object of ``cls`` from its row, the row's fields being
    ``names`` (the checkpoint's): they must be the model's, else CheckpointError."""
    if not isinstance(names, list) or names != names_of(cls):
        raise CheckpointError(f"{cls.__name__} checkpoint fields {names!r} are not the model's")
    steps: list[tuple[int, Callable[[Any], Any]]] = []
    for i, name in enumerate(names):
        if name in _RESOURCES:
            steps.append((i, _resource_in))
        elif name in _TIMES:
            steps.append((i, time_or_none))
        elif name == "status":
            steps.append((i, _STATUSES.__getitem__))
        elif maps is not None and name in MAPPED:
            steps.append((i, _SharedMaps(name, maps).get))
    width = len(names)
    # the index fields left out of the row come back empty, where the constructor has them
    every = [f.name for f in dataclasses.fields(cls)]
    holes = [i for i, name in enumerate(every) if name in _SKIP]

    def read(row: list[Any]) -> Any:
        if len(row) != width:
            raise CheckpointError(f"{cls.__name__} row of {len(row)} values, expected {width}")
        values = list(row)
        for i, step in steps:
            values[i] = step(values[i])
        for i in holes:
            values.insert(i, {})
        return cls(*values)

    return read


def dump_rows(state: ClusterIndex) -> JSON:
    """The body of a format-2 cluster checkpoint (what checkpoints of version 1 and 2
    hold: their state digest is computed from it)."""
    maps = _Maps()
    task_row = row_writer(TaskInfo, maps)
    init_at = names_of(TaskInfo).index("init_resreq")
    tasks = []
    for key in sorted(state.tasks):  # as format 1 loads them: in key order
        task = state.tasks[key]
        row = task_row(task)
        if task.init_resreq is task.resreq:  # one object, as Volcano's resReq := initResReq
            row[init_at] = None
        tasks.append([key, row])
    return rest_of(state, maps.values, tasks)


def rest_of(state: ClusterIndex, maps: Any, tasks: Any, jobs: Any = None) -> JSON:
    """A rows body (format 2 or 3) of ``state`` around its table of ``maps``, its
    ``tasks``' rows and (None: written here) its ``jobs``' rows (what the formats write
    alike: the fields, nodes, jobs, queues...)."""
    node_row, job_row, queue_row = (row_writer(cls, None) for cls in (NodeInfo, JobInfo, QueueInfo))
    if jobs is None:
        jobs = [[job_id, job_row(state.jobs[job_id])] for job_id in sorted(state.jobs)]
    return {
        "version": state.version,
        "sched_version": state.sched_version,
        "skipped": state.skipped,
        "fields": {kind: names_of(cls) for kind, cls in _CLASSES.items()},
        "maps": maps,
        "nodes": [[name, node_row(state.nodes[name])] for name in sorted(state.nodes)],
        "tasks": tasks,
        "jobs": jobs,
        "queues": [[name, queue_row(state.queues[name])] for name in sorted(state.queues)],
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


def load_rows(target: ClusterIndex, body: JSON, fmt: int = 2) -> None:
    """Fill a fresh ``target`` from :func:`dump_rows`'s output (``fmt`` 2), or
    :func:`projections.rowcache.cluster_part`'s (3: the maps by name); raises
    CheckpointError."""
    try:
        fields = body["fields"]
        maps: Any = list(body["maps"]) if fmt == 2 else dict(body["maps"])
        read_task = _reader(TaskInfo, fields["task"], maps)
        read_node = _reader(NodeInfo, fields["node"], None)
        read_job = _reader(JobInfo, fields["job"], None)
        read_queue = _reader(QueueInfo, fields["queue"], None)
        init_at = fields["task"].index("init_resreq")
        target.version = int(body["version"])
        target.sched_version = int(body["sched_version"])
        target.skipped = int(body["skipped"])
        nodes, jobs, pending = target.nodes, target.jobs, target.pending
        for name, row in body["nodes"]:
            nodes[name] = read_node(row)
        for job_id, row in body["jobs"]:
            jobs[job_id] = read_job(row)
        for name, row in body["queues"]:
            target.queues[name] = read_queue(row)
        tasks = target.tasks
        for key, row in body["tasks"]:
            task = read_task(row)
            if row[init_at] is None:
                task.init_resreq = task.resreq
            tasks[key] = task
            job = jobs.get(task.job)
            if job is not None:  # a pod of another scheduler forms no job (OWNERSHIP)
                job.tasks[key] = task
            if task.status == TaskStatus.PENDING:
                pending[key] = task
            if task.node_name and task.status not in COMPLETED_STATUSES:
                nodes[task.node_name].tasks[key] = task
        target.priority_classes = {str(k): int(v) for k, v in body["priority_classes"].items()}
        behaviour, names, by_default = body["rules"]
        target.rules = Rules(int(behaviour), tuple(str(n) for n in names), bool(by_default))
        for key, (decision, kind, node_name, base_status, base_node) in body["overlays"].items():
            target.overlays[key] = Overlay(
                decision, kind, node_name, TaskStatus(base_status), base_node
            )
            target._decisions[decision] = key
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise CheckpointError(f"cluster checkpoint is malformed: {exc!r}") from exc
