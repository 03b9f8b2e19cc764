"""The TDM eviction budget (``maxVictims``) and the order victims are taken in.

Why separate from the plugin: the budget is pure arithmetic over a job's task counts and
its disruption-budget annotation, and it is the part users argue about ("why was only one
pod evicted?"), so every number it used is returned in :class:`Budget` and goes into the
decision's evidence.

Arithmetic (volcano-sh/volcano pkg/scheduler/plugins/tdm/tdm.go,
``tdmPlugin.getMaxPodEvictNum`` and ``tdmPlugin.parseIntStr``, except where noted):

* ``max-unavailable`` (``volcano.sh/jdb-max-unavailable``): ``real = total - final -
  running``; ``0`` if ``real >= max`` else ``max - real``. ``final`` counts Succeeded and
  Failed tasks, so finished tasks do not eat the budget.
* ``min-available`` (``volcano.sh/jdb-min-available``): ``running - min`` when ``running >= min``,
  else **0** (tide's design: a job below its minimum loses nothing; upstream falls through to the
  default 1). Which one a job carries when both annotations are set is the cluster fold's
  rule (:func:`projections.objects.budget`): max-unavailable wins for logs of behaviour
  level 2, min-available (as Volcano's JobInfo keeps only the min one) before that.
* neither: 1 per job per round (``defaultPodEvictNum``). From level 2 a job's budget is
  one per evict period across sessions (the plugin subtracts the job's TDM evictions of
  the period already on the log).
* Values are a decimal integer or ``N%`` of ``total``, percentages rounded **up**.

Deliberate differences: an invalid value (``"abc"``, ``"30.5%"``, ``" 30%"``, ``"150%"``,
a negative or an out-of-int32 number) is an error, reported in :attr:`Budget.error`, and the
job loses nothing; upstream parses it as 0, which blocks every eviction for max-unavailable
but makes *every* running task evictable for min-available.

The order within a job replaces upstream's map order (random): lowest priority
first, then the most recently started (a task with no start time counts as the newest),
then namespace, name and uid.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import NamedTuple

from projections.model import JSON, JobInfo, TaskInfo, TaskStatus

DEFAULT_EVICT_NUM = 1
INT32_MAX = 2**31 - 1
_INT = re.compile(r"[0-9]+")
_PERCENT = re.compile(r"([0-9]+)%")

FORM_MAX_UNAVAILABLE = "max-unavailable"
FORM_MIN_AVAILABLE = "min-available"
FORM_NONE = "none"
_STATUS = attrgetter("status")


class BudgetValueError(ValueError):
    """A disruption-budget annotation value that is neither ``N`` nor ``N%`` (0..100)."""


def parse_int_or_percent(value: str, total: int) -> int:
    """``"3"`` → 3; ``"30%"`` of ``total`` → ``ceil(30 * total / 100)``.

    Raises :class:`BudgetValueError` for anything else, including percentages above 100,
    negative numbers, surrounding whitespace and numbers beyond int32.
    """
    if _INT.fullmatch(value):
        number = int(value)
        if number > INT32_MAX:
            raise BudgetValueError(f"{value!r} is beyond int32")
        return number
    match = _PERCENT.fullmatch(value)
    if match is None:
        raise BudgetValueError(f"{value!r} is neither an integer nor a percentage like '30%'")
    percent = int(match.group(1))
    if percent > 100:
        raise BudgetValueError(f"{value!r} is more than 100%")
    return math.ceil(percent * total / 100)


class Budget(NamedTuple):
    """How many tasks of a job may be evicted in one round, and from what.

    A named tuple rather than a frozen dataclass: a window close budgets every job with
    a task in the zone (~1,800 at 5,000 nodes), and a tuple is built in C where the
    dataclass set its nine fields one by one (~2 µs a budget on the loaded machine).
    """

    job: str
    form: str  # FORM_*
    value: str  # the annotation's text ("" for FORM_NONE)
    total: int
    running: int
    final: int
    limit: int | None  # the parsed min-available / max-unavailable (None: none or invalid)
    max_evict: int
    error: str | None = None

    def evidence(self) -> JSON:
        """The budget as decision evidence (sorted, JSON-safe)."""
        out: JSON = {
            "form": self.form,
            "value": self.value,
            "total": self.total,
            "running": self.running,
            "final": self.final,
            "max_evict": self.max_evict,
        }
        if self.limit is not None:
            out["limit"] = self.limit
        if self.error is not None:
            out["error"] = self.error
        return out


def job_budget(job: JobInfo, counted: tuple[int, int] | None = None) -> Budget:
    """``maxVictims`` for ``job``, counting every task of the job on every node.

    ``counted``: the job's Running and finished (Succeeded + Failed) tasks when the caller
    has them (the fold's maintained counts, :meth:`projections.queuetotals.QueueTotals.running`
    and ``finished``); else they are counted here.
    """
    total = len(job.tasks)
    if counted is None:
        # map + list.count run in C: a window close budgets every job in the zone
        statuses = list(map(_STATUS, job.tasks.values()))
        running = statuses.count(TaskStatus.RUNNING)
        final = statuses.count(TaskStatus.SUCCEEDED) + statuses.count(TaskStatus.FAILED)
    else:
        running, final = counted
    if job.budget_min_available:
        form, value = FORM_MIN_AVAILABLE, job.budget_min_available
    elif job.budget_max_unavailable:
        form, value = FORM_MAX_UNAVAILABLE, job.budget_max_unavailable
    else:
        return Budget(job.id, FORM_NONE, "", total, running, final, None, DEFAULT_EVICT_NUM, None)
    try:
        limit = parse_int_or_percent(value, total)
    except BudgetValueError as exc:
        return Budget(job.id, form, value, total, running, final, None, 0, str(exc))
    if form == FORM_MAX_UNAVAILABLE:
        unavailable = total - final - running
        allowed = 0 if unavailable >= limit else limit - unavailable
    else:
        allowed = running - limit if running >= limit else 0
    return Budget(job.id, form, value, total, running, final, limit, allowed, None)


def victim_order_key(task: TaskInfo) -> tuple[int, int, float, str, str, str]:
    """Sort key: lowest priority, most recently started (unknown = newest), ns, name, uid."""
    started = task.start_time
    if started is None:
        return (task.priority, 0, 0.0, task.namespace, task.name, task.uid)
    return (task.priority, 1, -started.timestamp(), task.namespace, task.name, task.uid)


_PRIORITY = attrgetter("priority")
_START = attrgetter("start_time")
_IDENTITY = attrgetter("namespace", "name", "uid")


def order_victims(tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
    """``tasks`` in the order they are evicted: sorted by :func:`victim_order_key`.

    Built as stable sorts on plain attributes, least significant first (namespace, name,
    uid; then the start, latest first, the tasks without one ahead of all; then the
    priority), each a C loop: building the key, a Python call per task, was most of a
    window close's choice for the jobs that give up several tasks. Same order (aware
    datetimes order as their timestamps do; a sort with ``reverse`` stays stable).
    """
    ordered = sorted(tasks, key=_IDENTITY)
    starts = list(map(_START, ordered))
    if None in starts:
        started = [task for task, at in zip(ordered, starts, strict=True) if at is not None]
        started.sort(key=_START, reverse=True)
        ordered = [task for task, at in zip(ordered, starts, strict=True) if at is None]
        ordered.extend(started)
    else:
        ordered.sort(key=_START, reverse=True)
    ordered.sort(key=_PRIORITY)
    return ordered


def first_victim(tasks: Sequence[TaskInfo]) -> TaskInfo:
    """``order_victims(tasks)[0]`` for a non-empty ``tasks``, narrowed key by key.

    Most jobs give up one task per round, and building :func:`victim_order_key` for
    every candidate was most of a window close's victim choice; here each step is a C
    loop over plain attributes. Same answer: the lowest priority, then a task without
    a start time (the newest) or else the latest start (aware datetimes order as their
    timestamps do), then namespace, name, uid. ``tasks`` is only read (not copied): a
    close picks for every job of the zone, and a single latest start (the usual case) is
    found by its index instead of filtering the pool.
    """
    if len(tasks) == 1:
        return tasks[0]
    pool = tasks
    priorities = list(map(_PRIORITY, pool))
    lowest = min(priorities)
    if priorities.count(lowest) != len(pool):
        pool = [task for task, p in zip(pool, priorities, strict=True) if p == lowest]
    starts = list(map(_START, pool))
    if None in starts:
        pool = [task for task, at in zip(pool, starts, strict=True) if at is None]
    else:
        latest = max(starts)
        ties = starts.count(latest)
        if ties == 1:
            return pool[starts.index(latest)]
        if ties != len(pool):
            pool = [task for task, at in zip(pool, starts, strict=True) if at == latest]
    return pool[0] if len(pool) == 1 else min(pool, key=_IDENTITY)
