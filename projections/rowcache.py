"""The cluster checkpoint in rows, format 3: each task's row depends on the task alone, so
a writer keeps the rows of its last checkpoint and writes again only the tasks that moved.

Why a third format beside :mod:`projections.snapshot_rows` (format 2, still read): a
format-2 row names its task's maps (labels, annotations, selector, tolerations, affinity)
by their index in the table of maps, in order of first use over every task, so a task's
row depends on the tasks before it and every checkpoint encodes all of them again (on a
12,000-pod World ~0.1 s of a writer's every checkpoint, most of the cost a writer pays).
Here a map is named by a digest of its canonical encoding (:func:`map_name`: 96 bits of
BLAKE2b, as text), the table of maps is keyed by those names, and each task's row is
encoded on its own (orjson, the envelope's options). Equal states still give equal bytes:
rows in key order, the table's entries in name order.

What a writer keeps between its checkpoints (:class:`RowCache`): each task's and each
job's encoded row, the table of the maps the rows name (each with how many rows name it)
in order, and what the fold added, removed or changed since (``touched`` of
:class:`projections.clusterindex.ClusterIndex`, a :class:`~projections.clusterindex.Touched`
the fold fills only while a cache tracks it: a task changes only in ``_add_task``,
``_remove_task``, ``_restatus`` and a PodGroup's derivation, a job only with one of its
tasks, a PodGroup record or a priority class learned, and each of them names what it
changed). Only those rows are written again; every other row of the last checkpoint is
the one its task or job encodes to now (nodes, 400 on the benchmark, are written whole). A
cluster the cache did not dump last (another World, one loaded since) is dumped whole. The
rows are encoded in one orjson call (cut apart after: one call per row costs ~3x, each
row's bytes allocated on their own), and the part is returned in pieces that a checkpoint
hashes and compresses without joining them (see
:data:`projections.checkpoint_codec.Pieces`). The cost: the writer holds each row's bytes
(~470 bytes a task) and each map's entry beside the World.

A 96-bit name is trusted to tell maps apart (two distinct maps among a million collide
with a chance of ~1e-17); two distinct encodings meeting under one name in a dump raise
rather than write a wrong checkpoint. Kept rows that do not cover the cluster's tasks or
jobs (one added or removed that nobody named) are dropped and the cluster dumped whole.
"""

from __future__ import annotations

import hashlib
import operator
import weakref
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import chain, pairwise
from typing import Any

import orjson

from projections.clusterindex import ClusterIndex, Touched
from projections.model import JobInfo, TaskInfo
from projections.snapshot import _RESOURCES
from projections.snapshot_rows import MAPPED, dumps, names_of, resource_out, rest_of, row_writer

#: the options of the envelope (:func:`projections.snapshot_rows.dumps`): a row encoded on
#: its own is the bytes the envelope would give it
_OPTIONS = orjson.OPT_SORT_KEYS | orjson.OPT_UTC_Z
_TASK_FIELDS = names_of(TaskInfo)
_GET = operator.attrgetter(*_TASK_FIELDS)
_RESOURCE_AT = tuple(i for i, name in enumerate(_TASK_FIELDS) if name in _RESOURCES)
_MAP_AT = tuple(i for i, name in enumerate(_TASK_FIELDS) if name in MAPPED)
_INIT_AT = _TASK_FIELDS.index("init_resreq")
#: a task row's maps' names, as a tuple
_MAPS_OF = operator.itemgetter(*_MAP_AT)
#: written between rows encoded in one call, to cut them apart (and where the table and
#: the rows go in the part): orjson escapes every control character inside a string, so a
#: raw NUL byte is never part of what it writes
_CUT = orjson.Fragment(b"\x00")
_JOBS_HERE, _MAPS_HERE, _TASKS_HERE = b"\x00jobs", b"\x00maps", b"\x00tasks"
_JOB_ROW = row_writer(JobInfo)

#: a task's row: its bytes and its maps' names
_Row = tuple[bytes, tuple[str, ...]]
#: a map's entry: the map (so its id is not reused while the entry lives), its name, and
#: its entry in the table (``"name":`` and its encoding)
_Map = tuple[Any, str, bytes]


def map_name(encoding: bytes) -> str:
    """The name a map's canonical encoding (key-sorted JSON) has in format 3's table."""
    return hashlib.blake2b(encoding, digest_size=12).hexdigest()


def _entry(value: Any) -> _Map:
    encoding = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    name = map_name(encoding)
    return (value, name, b'"%s":%s' % (name.encode(), encoding))


#: the empty label map and toleration list, by type: each task's empty map is its own
_EMPTY: dict[type, _Map] = {kind: _entry(kind()) for kind in (dict, list)}


class RowCache:
    """A writer's rows of its last format-3 dump (see the module docstring). Held by the
    writer (:class:`projections.checkpoints.Keeper`), passed to every dump it makes."""

    __slots__ = ("job_ids", "jobs", "keys", "maps", "order", "rows", "table", "touched", "tracked")

    def __init__(self) -> None:
        #: what the dumped cluster fills with the tasks and jobs it changes (None: none
        #: dumped yet); the cluster holds the same one while the cache is its tracker
        self.touched: Touched | None = None
        #: that cluster (told to stop tracking when the cache dumps another one)
        self.tracked: weakref.ref[ClusterIndex] | None = None
        #: task key -> its row of the last dump, and the keys in order
        self.rows: dict[str, _Row] = {}
        self.keys: list[str] = []
        #: the table of maps those rows name: name -> [how many rows name it, its entry],
        #: and its names in order
        self.table: dict[str, list[Any]] = {}
        self.order: list[str] = []
        #: the maps the last dump encoded, by identity (a map the fold holds is never
        #: changed in place: raw objects are copied to be edited)
        self.maps: dict[int, _Map] = {}
        #: job id -> its row of the last dump, and the ids in order
        self.jobs: dict[str, bytes] = {}
        self.job_ids: list[str] = []

    def drop(self) -> None:
        """Forget every row (the next dump is whole)."""
        self.touched, self.rows, self.table, self.keys = None, {}, {}, []
        self.order, self.jobs, self.job_ids = [], {}, []


class _Names:
    """The names of the maps of one dump: each shared map encoded once, the maps of the
    writer's last dump not encoded again."""

    __slots__ = ("_known", "seen")

    def __init__(self, known: dict[int, _Map]) -> None:
        self._known = known
        self.seen: dict[int, _Map] = {}

    def entry(self, value: Any) -> _Map:
        key = id(value)
        found = self.seen.get(key)
        if found is not None and found[0] is value:
            return found
        if not value and type(value) in _EMPTY:
            return _EMPTY[type(value)]
        found = self._known.get(key)
        if found is None or found[0] is not value:
            found = _entry(value)
        self.seen[key] = found
        return found


def _values(
    key: str, task: TaskInfo, names: _Names, table: dict[str, list[Any]], born: list[str]
) -> Any:
    """``[key, row]`` of a task to encode, its maps counted in ``table`` (those new to it
    named in ``born``)."""
    row = list(_GET(task))
    for i in _RESOURCE_AT:
        row[i] = resource_out(row[i])
    for i in _MAP_AT:
        _, name, entry = names.entry(row[i])
        row[i] = name
        counted = table.get(name)
        if counted is None:
            table[name] = [1, entry]
            born.append(name)
        elif counted[1] is entry or counted[1] == entry:
            counted[0] += 1
        else:
            raise RuntimeError(f"two maps are named {name} in one cluster checkpoint")
    if task.init_resreq is task.resreq:  # one object, as Volcano's resReq := initResReq
        row[_INIT_AT] = None
    return [key, row]


def _encoded(values: list[Any]) -> list[bytes]:
    """Each of ``values`` encoded, in one call (one per row costs ~3x: each row's bytes
    allocated on their own), cut apart at :data:`_CUT`."""
    if not values:
        return []
    spaced: list[Any] = [_CUT] * (2 * len(values) - 1)
    spaced[::2] = values
    pieces = orjson.dumps(spaced, option=_OPTIONS)[1:-1].split(b",\x00,")
    if len(pieces) != len(values):
        raise RuntimeError("a cluster row holds a NUL byte")
    return pieces


def _order(before: list[str], table: dict[str, list[Any]], born: list[str]) -> list[str]:
    """The names of ``table`` in order, from ``before`` (the last dump's, in order) and the
    names that came into it since (``born``, a few): those of ``before`` still in it,
    merged with the new ones (two sorted runs: a merge, not a sort of them all)."""
    kept = [name for name in before if name in table]
    new = sorted({name for name in born if name in table and not _among(before, name)})
    return sorted(kept + new) if new else kept


def _among(ordered: list[str], name: str) -> bool:
    at = bisect_left(ordered, name)
    return at < len(ordered) and ordered[at] == name


class _Stale(Exception):
    """The rows kept do not cover the cluster's tasks or jobs (a change nobody named)."""


def _forget(table: dict[str, list[Any]], names: tuple[str, ...]) -> None:
    for name in names:
        counted = table[name]
        counted[0] -= 1
        if not counted[0]:
            del table[name]


def cluster_part(state: ClusterIndex, cache: RowCache | None = None) -> tuple[bytes, ...]:
    """The cluster's part of a checkpoint of version 3, in pieces (joined, the envelope
    :func:`projections.snapshot_rows.dumps` of a format-3 body); ``cache``: the writer's
    rows of its last dump (read when they are this cluster's, then brought up to this
    dump, and the cluster told to track its changes for the next)."""
    touched = state.touched
    if cache is not None and touched is not None and touched is cache.touched:
        # the rows of every other task and job are as they were
        whole = False
        rows, table, keys, before = cache.rows, cache.table, cache.keys, cache.order
        jobs, job_ids = cache.jobs, cache.job_ids
        work, job_work = sorted(touched.tasks), sorted(touched.jobs)
    else:
        whole = True
        rows, table, jobs, before = {}, {}, {}, []
        keys = work = sorted(state.tasks)
        job_ids = job_work = sorted(state.jobs)
    try:
        names = _Names(cache.maps if cache is not None else {})
        born: list[str] = []
        keys = _tasks_again(state, rows, table, names, born, work, keys, whole)
        job_ids = _jobs_again(state, jobs, job_work, job_ids, whole)
        order = sorted(table) if whole else _order(before, table, born)
    except _Stale:  # the rows kept missed a change: never written, the cluster dumped whole
        assert cache is not None and not whole
        cache.drop()
        return cluster_part(state, cache)
    except BaseException:
        if cache is not None:  # its rows are half brought up to date: start again whole
            cache.drop()
        raise
    if cache is not None:
        cache.rows, cache.table, cache.maps, cache.keys = rows, table, names.seen, keys
        cache.order, cache.jobs, cache.job_ids = order, jobs, job_ids
        tracked = cache.tracked() if cache.tracked is not None else None
        if tracked is not None and tracked is not state and tracked.touched is cache.touched:
            tracked.touched = None
        cache.touched = state.touched = Touched()
        cache.tracked = weakref.ref(state)
    here = (orjson.Fragment(_MAPS_HERE), orjson.Fragment(_TASKS_HERE), orjson.Fragment(_JOBS_HERE))
    envelope = dumps("cluster", state.position, rest_of(state, *here), fmt=3)
    # the keys in order: fields, jobs, maps, nodes, ..., tasks, version
    head, _, rest = envelope.partition(_JOBS_HERE)
    between, _, rest = rest.partition(_MAPS_HERE)
    middle, _, tail = rest.partition(_TASKS_HERE)
    return (
        head,
        b"[",
        b",".join([jobs[job_id] for job_id in job_ids]),
        b"]",
        between,
        b"{",
        b",".join([table[name][1] for name in order]),
        b"}",
        middle,
        b"[",
        b",".join([rows[key][0] for key in keys]),
        b"]",
        tail,
    )


def _tasks_again(
    state: ClusterIndex,
    rows: dict[str, _Row],
    table: dict[str, list[Any]],
    names: _Names,
    born: list[str],
    work: list[str],
    keys: list[str],
    whole: bool,
) -> list[str]:
    """Bring ``rows`` (and ``table``) up to ``state`` for the tasks ``work`` names; the
    task keys in order."""
    tasks = state.tasks
    values: list[Any] = []
    added = removed = False
    for key in work:
        task = tasks.get(key)
        row = rows.get(key)
        if row is not None:
            _forget(table, row[1])
            if task is None:
                del rows[key]
                removed = True
        if task is not None:
            added = added or row is None
            values.append(_values(key, task, names, table, born))
    for (key, row_values), piece in zip(values, _encoded(values), strict=True):
        rows[key] = (piece, tuple(row_values[i] for i in _MAP_AT))
    if not whole and (added or removed):
        keys = sorted(tasks)  # as format 1 loads them: in key order
    if len(keys) != len(tasks):
        raise _Stale("the cluster's tasks changed without telling its checkpoints")
    return keys


def _jobs_again(
    state: ClusterIndex, jobs: dict[str, bytes], work: list[str], ids: list[str], whole: bool
) -> list[str]:
    """Bring ``jobs`` up to ``state`` for the jobs ``work`` names; the job ids in order."""
    values: list[Any] = []
    moved = False
    for job_id in work:
        job = state.jobs.get(job_id)
        had = jobs.pop(job_id, None)
        moved = moved or (had is None) != (job is None)
        if job is not None:
            values.append([job_id, _JOB_ROW(job)])
    for (job_id, _), piece in zip(values, _encoded(values), strict=True):
        jobs[job_id] = piece
    if not whole and moved:
        ids = sorted(state.jobs)
    if len(ids) != len(state.jobs):
        raise _Stale("the cluster's jobs changed without telling its checkpoints")
    return ids


def seeded(
    state: ClusterIndex, pieces: Sequence[bytes], rows: Sequence[Any], maps: Mapping[str, Any]
) -> RowCache | None:
    """A cache holding the rows ``state`` was just loaded from, as if a writer had dumped
    ``state`` itself (the next dump encodes only what the fold touches since, and the
    cluster is told to track it): ``pieces`` and ``rows``, each task's row as bytes and as
    parsed, in order (:func:`projections.rowslices.cut`), ``maps`` the part's table. None
    when they are not what a dump of ``state`` writes: rows not one per task in key order,
    a map named otherwise than by its encoding, a name not in the table or an entry no row
    names. (Each row's bytes are trusted to be its task's encoding as far as the
    checkpoint is: a segment's is, by the digest of the one before it.) The jobs, fewer
    and smaller (9,785 beside 30,900 tasks on the 1,000-node day), are encoded afresh."""
    keys = [row[0] for row in rows]
    if len(keys) != len(state.tasks) or any(a >= b for a, b in pairwise(keys)):
        return None
    table: dict[str, list[Any]] = {}
    for name, value in maps.items():
        _, named, entry = _entry(value)  # as a dump names and writes it
        if named != name:
            return None
        table[name] = [0, entry]
    names = [_MAPS_OF(row[1]) for row in rows]
    counts = Counter(chain.from_iterable(names))
    if counts.keys() != table.keys():  # a name no entry has, or an entry no row names
        return None
    for name, counted in table.items():
        counted[0] = counts[name]
    cached: dict[str, _Row] = dict(zip(keys, zip(pieces, names, strict=True), strict=True))
    job_ids = sorted(state.jobs)
    values = [[job_id, _JOB_ROW(state.jobs[job_id])] for job_id in job_ids]
    cache = RowCache()
    cache.rows, cache.keys, cache.table, cache.order = cached, keys, table, sorted(table)
    cache.jobs, cache.job_ids = dict(zip(job_ids, _encoded(values), strict=True)), job_ids
    cache.touched = state.touched = Touched()
    cache.tracked = weakref.ref(state)
    return cache
