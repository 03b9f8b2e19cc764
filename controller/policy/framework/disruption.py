"""PodDisruptionBudgets in victim choice: may this pod go, given the evictions already chosen?

Why a module of its own: TDM (window-close victims and its preemptable function), the
preempt action (normal and topology-aware) and the rescheduling plugin all choose pods to
evict, and the Eviction API will refuse (429) any eviction that takes a budget below what
it demands; all three must ask the same question the same way, counting what the session
has already chosen, or a simulation would promise evictions a cluster cannot make.

The rule, as upstream applies it:

* The descheduler (kubernetes-sigs/descheduler pkg/descheduler/evictions/evictions.go,
  ``PodEvictor.EvictPod``) evicts one pod at a time through the Eviction API; a 429
  (a budget would be violated) skips that pod and the strategy goes on with the next, so
  every granted eviction spends one disruption of each budget covering the pod.
* Volcano's ``pdb`` plugin (volcano-sh/volcano pkg/scheduler/plugins/pdb/pdb.go) filters
  victim lists (``VictimTasks``, ``Preemptable``, ``Reclaimable``) by walking them in order
  with a copy of each budget's ``status.disruptionsAllowed``, decrementing it for every
  covering budget, and drops a pod that takes some budget below zero.

tide's restatement: a budget's *allowance* at session start is its
``status.disruptionsAllowed`` when the log carries one, else the disruption controller's
arithmetic over the pods it selects (:func:`projections.pdb.disruptions_allowed`;
healthy = Running and not terminating, expected = selected pods not Succeeded / Failed;
``minAvailable`` and ``maxUnavailable`` as an integer or a percentage, rounded up). A pod
covered by budgets may be a victim only while *every* covering budget has an allowance
above the disruptions already chosen in this session: the session's own evictions
(tasks it turned Releasing) plus the victims a plugin has nominated but not yet staged
(:meth:`Disruptions.take`, e.g. for ``shuffle`` to evict later) plus, in a dry run, the
trial's own removals (:meth:`Disruptions.trial`). A pod counts once however often it is
chosen. A pod no budget selects is never held back.

Differences from Volcano, on purpose: tide always applies the rule (the Eviction API
would refuse anyway), not only when a ``pdb`` plugin is configured; a pod that is held
back spends no budget (Volcano decrements every covering budget before deciding); a
budget with an empty selector covers every pod of its namespace (``policy/v1``; Volcano
treats it as matching nothing); and a budget without a status is computed from the pods
on the log instead of being skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from projections.model import TaskInfo, TaskStatus
from projections.pdb import Budget, disruptions_allowed
from streams.payloads import EvidenceDict

__all__ = ["Disruptions", "Trial"]

_TERMINAL = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})
_RELEASING = TaskStatus.RELEASING


class _Lookup:
    """What the budget arithmetic reads: the tasks at session start and now."""

    def __init__(self, base: Mapping[str, TaskInfo], current: Any) -> None:
        self.base = base
        self.current = current  # an OverlayView (``lookup``) or a plain mapping

    def now(self, key: str) -> TaskInfo | None:
        lookup = getattr(self.current, "lookup", None)
        if lookup is not None:
            found: TaskInfo | None = lookup(key)
            return found
        value = self.current.get(key)
        return value if isinstance(value, TaskInfo) else None


class Disruptions:
    """One session's disruption budgets: their allowances and what is spent of them.

    Args:
        budgets: "namespace/name" → :class:`~projections.pdb.Budget` (the World's
            ``pdbs.budgets``).
        base: the tasks at session start ("ns/name" → task; the cluster projection's).
        current: the session's current tasks (``ssn.tasks``); evictions the session has
            staged show there as Releasing tasks.
    """

    def __init__(
        self, budgets: Mapping[str, Budget], base: Mapping[str, TaskInfo], current: Any
    ) -> None:
        self.budgets = {key: budgets[key] for key in sorted(budgets)}
        self._tasks = _Lookup(base, current)
        self._taken: set[str] = set()
        self._covering: dict[str, tuple[str, ...]] = {}
        self._selected: dict[str, list[str]] | None = None
        self._start: dict[str, int] = {}

    @property
    def active(self) -> bool:
        """Whether any budget exists (without one, nothing is ever held back)."""
        return bool(self.budgets)

    def _index(self) -> dict[str, list[str]]:
        """Budget key → the keys of the tasks it selects (built once, on first use)."""
        if self._selected is None:
            by_ns: dict[str, list[Budget]] = {}
            for budget in self.budgets.values():
                by_ns.setdefault(budget.namespace, []).append(budget)
            selected: dict[str, list[str]] = {key: [] for key in self.budgets}
            for key in sorted(self._tasks.base):
                task = self._tasks.base[key]
                for budget in by_ns.get(task.namespace, ()):
                    if budget.selects(task.namespace, task.labels):
                        selected[budget.key].append(key)
            self._selected = selected
        return self._selected

    def covering(self, task: TaskInfo) -> tuple[str, ...]:
        """The keys of the budgets that select ``task``, by name."""
        key = task.key
        found = self._covering.get(key)
        if found is None:
            found = self._covering[key] = tuple(
                b.key for b in self.budgets.values() if b.selects(task.namespace, task.labels)
            )
        return found

    def start_allowance(self, budget_key: str) -> int:
        """The budget's allowance when the session opened (see the module docstring)."""
        found = self._start.get(budget_key)
        if found is None:
            budget = self.budgets[budget_key]
            if budget.status_allowed is not None:
                found = budget.status_allowed
            else:
                base = self._tasks.base
                members = [base[k] for k in self._index()[budget_key]]
                live = [t for t in members if t.status not in _TERMINAL]
                healthy = sum(1 for t in live if t.status == TaskStatus.RUNNING and not t.deleting)
                found = disruptions_allowed(budget, healthy=healthy, expected=len(live))
            self._start[budget_key] = found
        return found

    def _chosen(self, key: str) -> bool:
        """Whether the session already chose task ``key`` (staged or nominated)."""
        if key in self._taken:
            return True
        task = self._tasks.now(key)
        if task is None or task.status is not _RELEASING:
            return False
        before = self._tasks.base.get(key)
        return before is None or before.status is not _RELEASING

    def spent(self, budget_key: str, extra: Iterable[str] = ()) -> int:
        """Disruptions of the budget chosen in this session (plus ``extra`` task keys)."""
        members = self._index()[budget_key]
        more = set(extra)
        return sum(1 for k in members if k in more or self._chosen(k))

    def allowance(self, budget_key: str, extra: Iterable[str] = ()) -> int:
        """What is left of the budget now: its start allowance less what is spent."""
        return self.start_allowance(budget_key) - self.spent(budget_key, extra)

    def blocking(self, task: TaskInfo, extra: Iterable[str] = ()) -> str | None:
        """The first budget (by name) that forbids evicting ``task`` now, or None.

        ``extra`` are task keys a caller has chosen on top of the session (a dry run's).
        A task already chosen is never blocked again: it is counted once.
        """
        if not self.budgets:
            return None
        keys = self.covering(task)
        if not keys:
            return None
        more = frozenset(extra)
        if task.key in more or self._chosen(task.key):
            return None
        for budget_key in keys:
            if self.allowance(budget_key, more) <= 0:
                return budget_key
        return None

    def take(self, task: TaskInfo) -> None:
        """Count ``task`` as chosen for the rest of the session (a victim a plugin
        nominates for a later eviction)."""
        if self.budgets and self.covering(task):
            self._taken.add(task.key)

    def pick(
        self, ordered: Iterable[TaskInfo], limit: int
    ) -> tuple[list[tuple[TaskInfo, list[EvidenceDict]]], list[dict[str, str]]]:
        """The first ``limit`` of ``ordered`` that the budgets let go, each taken.

        Returns ``(chosen, held)``: each chosen task with its budgets' evidence (as
        :meth:`evidence`, before it was taken), and the tasks passed over before the last
        choice, as ``{"pod": "ns/name", "budget": "ns/name"}``.
        """
        chosen: list[tuple[TaskInfo, list[EvidenceDict]]] = []
        held: list[dict[str, str]] = []
        if limit <= 0:
            return chosen, held
        for task in ordered:
            blocked = self.blocking(task)
            if blocked is not None:
                held.append({"pod": task.key, "budget": blocked})
                continue
            chosen.append((task, self.evidence(task)))
            self.take(task)
            if len(chosen) >= limit:
                break
        return chosen, held

    def trial(self) -> Trial:
        """A dry run's tally on top of the session's (see :class:`Trial`)."""
        return Trial(self)

    def evidence(self, task: TaskInfo) -> list[EvidenceDict]:
        """The budgets covering ``task`` with what each allows now (for a victim's
        evidence); empty when none covers it."""
        return [{"budget": key, "allowed": self.allowance(key)} for key in self.covering(task)]


class Trial:
    """Tentative choices of one dry run, counted with the session's but never kept."""

    def __init__(self, parent: Disruptions) -> None:
        self.parent = parent
        self.keys: list[str] = []

    def take(self, task: TaskInfo) -> str | None:
        """Count ``task`` if no budget forbids it; the blocking budget's key otherwise."""
        blocked = self.parent.blocking(task, self.keys)
        if blocked is None and task.key not in self.keys:
            self.keys.append(task.key)
        return blocked
