"""Which pods tide owns, which it may evict, and which are preemptable: the fold's rules.

These rules depend on the configuration in force (``config.applied``) and on the *behaviour
level* the record was written with, so the cluster fold keeps them as :class:`Rules` and
re-derives its tasks when they change. A log written before the level existed carries no
``behaviour`` in its ``config.applied`` payload and replays with level 1.

Level 1 (the first tide's rules): every pod without a PodGroup is an implicit job whatever
its scheduler; a task is preemptable unless marked otherwise (upstream Volcano's current
default, ``GetPodPreemptable`` in volcano-sh/volcano pkg/scheduler/api/pod_info.go); every
pod may be a victim; a PodGroup's ``jdb-min-available`` wins over ``jdb-max-unavailable``.

Level 2 (and every later level; :data:`projections.behaviour.CURRENT` is 4; levels 3 and 4
change none of these rules), each rule a named change of :mod:`projections.behaviour`:

* **ownership** (:data:`~projections.behaviour.OWNERSHIP`) — only a pod in a PodGroup
  (``scheduling.k8s.io/group-name``) or whose ``spec.schedulerName`` is one of the
  configured scheduler names forms a job (Volcano's PodGroup controller makes implicit
  PodGroups only for its schedulers' pods, volcano-sh/volcano
  pkg/controllers/podgroup/pg_controller.go ``addPod``). Other pods still count on their
  node and are never a TDM, preempt or rescheduling victim (``owned`` false);
* **system pods** (:data:`~projections.behaviour.SYSTEM_PODS`) — a DaemonSet-owned or mirror
  (static, annotation ``kubernetes.io/config.mirror``) pod is never a victim of any policy,
  pressure eviction included (``evictable`` false), as the descheduler's DefaultEvictor
  (kubernetes-sigs/descheduler pkg/framework/plugins/defaultevictor/defaultevictor.go);
* **preemptable is opt-in** (:data:`~projections.behaviour.PREEMPTABLE_OPT_IN`) — a task is
  preemptable when ``volcano.sh/preemptable`` on the pod (annotation, then label, Go
  ``ParseBool``, invalid → false), else on its PodGroup (annotation, then label), says
  ``"true"``; with no mark it takes ``preemptableByDefault`` (default false, the seeds'
  rule; ``true`` is upstream's);
* **budget precedence** (:data:`~projections.behaviour.BUDGET_MAX_FIRST`) —
  ``jdb-max-unavailable`` wins when both budget annotations are set (the seed's rule;
  upstream's JobInfo happens to read min-available first).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from projections.behaviour import (
    BUDGET_MAX_FIRST,
    OWNERSHIP,
    PREEMPTABLE_OPT_IN,
    SYSTEM_PODS,
    Change,
    active,
)
from projections.behaviour import (
    LEGACY as LEGACY_LEVEL,
)
from projections.model import JobInfo, TaskInfo
from projections.parsing import parse_bool

PREEMPTABLE = "volcano.sh/preemptable"
MIRROR = "kubernetes.io/config.mirror"
#: the owner kind of a DaemonSet pod (never a victim, see :func:`is_system`)
DAEMON_SET = "DaemonSet"
GROUP_NAME = "scheduling.k8s.io/group-name"
DEFAULT_SCHEDULERS = ("volcano",)


@dataclass(frozen=True, slots=True)
class Rules:
    """The ownership rules in force (see the module docstring)."""

    behaviour: int = LEGACY_LEVEL
    scheduler_names: tuple[str, ...] = DEFAULT_SCHEDULERS
    preemptable_by_default: bool = True

    def has(self, change: Change) -> bool:
        """Whether the behaviour ``change`` holds under these rules (its level or later).

        Args:
            change: a named change of :mod:`projections.behaviour`.

        Returns:
            True when the record's behaviour level is ``change.level`` or later.
        """
        return self.behaviour >= change.level

    @property
    def max_first(self) -> bool:
        """Whether ``jdb-max-unavailable`` wins over ``jdb-min-available``."""
        return self.has(BUDGET_MAX_FIRST)


LEGACY = Rules()


def scheduler_names(value: Any) -> tuple[str, ...]:
    """``schedulerName`` as a tuple of names: a string or a list of strings (else default)."""
    if isinstance(value, str) and value:
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    return DEFAULT_SCHEDULERS


def rules_of(payload: Mapping[str, Any]) -> Rules:
    """The rules a ``config.applied`` payload sets (lenient: the loader validated it)."""
    level = payload.get("behaviour")
    if not isinstance(level, int) or isinstance(level, bool) or not reads_config(level):
        return LEGACY
    config = payload.get("config")
    if not isinstance(config, Mapping):
        config = {}
    return Rules(
        behaviour=level,
        scheduler_names=scheduler_names(config.get("schedulerName")),
        preemptable_by_default=config.get("preemptableByDefault") is True,
    )


def reads_config(level: int) -> bool:
    """Whether the rules of behaviour ``level`` read the configuration's ``schedulerName``
    and ``preemptableByDefault`` (else every such level folds as :data:`LEGACY`, equal)."""
    return active(level, OWNERSHIP) or active(level, PREEMPTABLE_OPT_IN)


def derives(rules: Rules) -> bool:
    """Whether a task's flags depend on the rules and its job, so the fold must
    :func:`derive` them (else they are the level-1 flags ``task_from_pod`` gave it)."""
    return rules.has(OWNERSHIP) or rules.has(SYSTEM_PODS) or rules.has(PREEMPTABLE_OPT_IN)


def mark(annotations: Mapping[str, Any], labels: Mapping[str, Any]) -> bool | None:
    """``volcano.sh/preemptable``: annotation, then label; invalid → False; absent → None."""
    value = annotations.get(PREEMPTABLE)
    if value is None:
        value = labels.get(PREEMPTABLE)
        if value is None:
            return None
    return parse_bool(value) is True


def is_system(task: TaskInfo) -> bool:
    """A DaemonSet-owned or mirror (static) pod."""
    return task.owner_kind == DAEMON_SET or MIRROR in task.annotations


def forms_job(task: TaskInfo, rules: Rules) -> bool:
    """Whether the pod belongs to tide: in a PodGroup or of a configured scheduler."""
    if not rules.has(OWNERSHIP) or task.annotations.get(GROUP_NAME):
        return True
    return task.scheduler_name in rules.scheduler_names


def derive(task: TaskInfo, rules: Rules, job: JobInfo | None) -> None:
    """Set ``task.owned``, ``task.evictable`` and ``task.preemptable`` in place."""
    own = mark(task.annotations, task.labels)
    task.evictable = not is_system(task) if rules.has(SYSTEM_PODS) else True
    task.owned = forms_job(task, rules)
    if not rules.has(PREEMPTABLE_OPT_IN):
        task.preemptable = own is not False
        return
    if own is None and job is not None and not job.implicit and not job.placeholder:
        own = job.preemptable_mark
    if own is None:
        own = rules.preemptable_by_default
    task.preemptable = own and task.owned and task.evictable


def may_be_victim(task: TaskInfo) -> bool:
    """Whether a scheduling policy (TDM, preempt, reclaim, rescheduling) may evict it."""
    return task.owned and task.evictable
