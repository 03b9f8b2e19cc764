"""The TDM eviction budget (``maxVictims``) and the order victims are taken in.

Why separate from the plugin: the budget is pure arithmetic over a job's task counts and
its disruption-budget annotation, and it is the part users argue about ("why was only one
pod evicted?"), so every number it used is returned in :class:`Budget` and goes into the
decision's evidence.

Arithmetic (spec §6.4, seed 000 §7.2):

* ``max-unavailable`` (``volcano.sh/jdb-max-unavailable``): ``real = total - final -
  running``; ``0`` if ``real >= max`` else ``max - real``. ``final`` counts Succeeded and
  Failed tasks, so finished tasks do not eat the budget.
* ``min-available`` (``volcano.sh/jdb-min-available``): ``running - min`` when ``running
  >= min``, else **0** (the seed's flowchart; upstream falls through to the default 1,
  spec §11.1-5). Min-available wins when both are present (as Volcano's JobInfo keeps
  only the min one).
* neither: 1 per job per round (``defaultPodEvictNum``).
* Values are a decimal integer or ``N%`` of ``total``, percentages rounded **up**.

Deliberate differences: an invalid value (``"abc"``, ``"30.5%"``, ``" 30%"``, ``"150%"``,
a negative or an out-of-int32 number) is an error, reported in :attr:`Budget.error`, and the
job loses nothing; upstream parses it as 0, which blocks every eviction for max-unavailable
but makes *every* running task evictable for min-available (spec §11.1-6).

The order within a job replaces upstream's map order (random, §11.1-8): lowest priority
first, then the most recently started (a task with no start time counts as the newest),
then namespace, name and uid.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from projections.model import JSON, JobInfo, TaskInfo, TaskStatus

DEFAULT_EVICT_NUM = 1
INT32_MAX = 2**31 - 1
_INT = re.compile(r"[0-9]+")
_PERCENT = re.compile(r"([0-9]+)%")

FORM_MAX_UNAVAILABLE = "max-unavailable"
FORM_MIN_AVAILABLE = "min-available"
FORM_NONE = "none"


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


@dataclass(frozen=True, slots=True)
class Budget:
    """How many tasks of a job may be evicted in one round, and from what."""

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


def job_budget(job: JobInfo) -> Budget:
    """``maxVictims`` for ``job``, counting every task of the job on every node."""
    statuses = [task.status for task in job.tasks.values()]
    total = len(statuses)
    running = sum(1 for s in statuses if s == TaskStatus.RUNNING)
    final = sum(1 for s in statuses if s in (TaskStatus.SUCCEEDED, TaskStatus.FAILED))
    if job.budget_min_available:
        form, value = FORM_MIN_AVAILABLE, job.budget_min_available
    elif job.budget_max_unavailable:
        form, value = FORM_MAX_UNAVAILABLE, job.budget_max_unavailable
    else:
        return Budget(job.id, FORM_NONE, "", total, running, final, None, DEFAULT_EVICT_NUM)
    try:
        limit = parse_int_or_percent(value, total)
    except BudgetValueError as exc:
        return Budget(job.id, form, value, total, running, final, None, 0, str(exc))
    if form == FORM_MAX_UNAVAILABLE:
        unavailable = total - final - running
        allowed = 0 if unavailable >= limit else limit - unavailable
    else:
        allowed = running - limit if running >= limit else 0
    return Budget(job.id, form, value, total, running, final, limit, allowed)


def victim_order_key(task: TaskInfo) -> tuple[int, int, float, str, str, str]:
    """Sort key: lowest priority, most recently started (unknown = newest), ns, name, uid."""
    started = task.start_time
    if started is None:
        return (task.priority, 0, 0.0, task.namespace, task.name, task.uid)
    return (task.priority, 1, -started.timestamp(), task.namespace, task.name, task.uid)


def order_victims(tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
    """``tasks`` in the order they are evicted (see :func:`victim_order_key`)."""
    return sorted(tasks, key=victim_order_key)
