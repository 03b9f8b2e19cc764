"""Behaviour changes by name: what each behaviour level stands for, so a gate can be retired.

Why this module exists: a log replays with the rules it was written under. A
``config.applied`` record carries the *behaviour level* of the tide that wrote it
(``"behaviour"``; absent = 1, :data:`LEGACY`), and every rule that changed since the first
tide keeps its old branch for the logs of lower levels. A bare ``behaviour >= 2`` does not
say which change it guards, so no branch could ever be deleted. Here each change has a
name (as Temporal's ``workflow.patched("id")``): a :class:`Change` constant says what
changed, why, at which level, which golden log (``tests/replay/golden/``) holds the old
behaviour and what retiring it would take; :data:`CHANGES` lists them in order, and the
checks ask ``rules.has(OWNERSHIP)`` (:meth:`projections.ownership.Rules.has`) or
:func:`active`, never a number. ``docs/BEHAVIOUR.md`` is generated from :data:`CHANGES`
(``scripts/behaviour_table.py``; a test keeps them equal).

Adding a change: give it the next level (or the current one, while no log has been written
at it), add it to :data:`CHANGES`, gate the new rule with its name, and add a golden log
that shows the new behaviour. The level new runs stamp, :data:`CURRENT`, is the highest
level of :data:`CHANGES`.

This module sits low (projections import it, and so does the policy above them) and holds
no rule itself: only names, levels and the comparison.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the level of a ``config.applied`` record without a ``behaviour`` key (the first tide)
LEGACY = 1


@dataclass(frozen=True, slots=True)
class Change:
    """One behaviour change: from ``level`` on, the new rule holds.

    ``name`` is the change's stable id (kebab case); ``summary`` what changed, ``why`` the
    reason, ``golden`` the golden log that holds the old behaviour (and how), ``retire`` what
    deleting the old branch would take.
    """

    name: str
    level: int
    summary: str
    why: str
    golden: str
    retire: str


def active(level: int, change: Change) -> bool:
    """Whether ``change`` holds in a run or log of behaviour ``level``.

    Args:
        level: the behaviour level in force (a ``config.applied`` stamp, absent = 1).
        change: the change asked about.

    Returns:
        True from ``change.level`` on, False for older logs.
    """
    return level >= change.level


_RETIRE_2 = (
    "Retires with level 2 as a whole: once logs without a stamp no longer replay with this "
    "tide (the level-1 golden logs archived with the last release that replays them), "
)

PLACEMENT_PLUGINS = Change(
    name="placement-plugins",
    level=2,
    summary=(
        "the `nodeorder`, `usage` and `rescheduling` plugins run; a configuration that names "
        "one is stamped with the level in force"
    ),
    why=(
        "earlier tides skipped these names as unimplemented: a log of theirs that names one "
        "must replay with it skipped, as it ran"
    ),
    golden=(
        "none: no level-1 golden log names these plugins (forcing the change on them changes "
        "no decision); `tests/controller/policy/plugins/test_rescheduling_placement.py` "
        "(old-log-without-stamp) holds the old loading; new: `rescheduling-hot-cold.jsonl`"
    ),
    retire=(
        _RETIRE_2 + "drop `since=PLACEMENT_PLUGINS` from the three specs in "
        "`controller/policy/builtins.py` (and, with the last such spec, the `since` filter and "
        "stamp in `controller/policy/framework/config.py`)"
    ),
)
PREEMPT_BACKFILL = Change(
    name="preempt-backfill",
    level=2,
    summary=(
        "the `preempt` and `backfill` actions run; a configuration that names one is stamped "
        "with the level in force"
    ),
    why="earlier tides skipped these actions as unimplemented, as `placement-plugins`",
    golden=(
        "none: no level-1 golden log names these actions; "
        "`tests/controller/policy/actions/preempt/test_preempt_behaviour.py` holds the old "
        "loading; new: `rescheduling-hot-cold.jsonl` (backfill)"
    ),
    retire=(
        _RETIRE_2 + "drop `since=PREEMPT_BACKFILL` from the two specs in "
        "`controller/policy/builtins.py`"
    ),
)
OWNERSHIP = Change(
    name="ownership",
    level=2,
    summary=(
        "only a pod in a PodGroup or of a configured scheduler (`schedulerName`) forms a job; "
        "other pods count on their node and are never a TDM, preempt or rescheduling victim"
    ),
    why=(
        "Volcano's PodGroup controller makes implicit PodGroups only for its schedulers' pods; "
        "the first tide made every ungrouped pod a job and a victim"
    ),
    golden=(
        "none: every pod of the level-1 golden logs is in a PodGroup or of scheduler "
        "`volcano` (forced on them, no task loses `owned`, no decision changes); new: "
        "`ownership.jsonl` (the default-scheduler pod is no TDM victim)"
    ),
    retire=(
        _RETIRE_2 + "drop the `OWNERSHIP` test in `projections.ownership.forms_job`, "
        "`projections.ownership.derives` and `projections.ownership.reads_config`"
    ),
)
SYSTEM_PODS = Change(
    name="system-pods",
    level=2,
    summary=(
        "a DaemonSet-owned or mirror (static) pod is never a victim of any policy, pressure "
        "eviction included (`evictable` false; named `protected` in a pressure round)"
    ),
    why=(
        "as the descheduler's DefaultEvictor: a DaemonSet or static pod comes back on the "
        "same node, so evicting it frees nothing"
    ),
    golden=(
        "none: the level-1 golden logs hold no DaemonSet or mirror pod (forced, no decision "
        "changes); new: `ownership.jsonl` (its pressure round names both system pods "
        "`protected`)"
    ),
    retire=(
        _RETIRE_2 + "drop the `SYSTEM_PODS` tests in `projections.ownership.derive` and "
        "`projections.ownership.derives` (`evictable` is then `not is_system(task)`)"
    ),
)
PREEMPTABLE_OPT_IN = Change(
    name="preemptable-opt-in",
    level=2,
    summary=(
        "a task is preemptable only when `volcano.sh/preemptable` on the pod, else on its "
        'PodGroup, says `"true"`, else by `preemptableByDefault` (default false)'
    ),
    why=(
        "a pod nobody marked must not be a victim by default (the seeds' rule; upstream's "
        "default is true, which `preemptableByDefault: true` keeps)"
    ),
    golden=(
        "none by decision: forced on the level-1 golden logs it clears `preemptable` on "
        "unmarked tasks of `demo.jsonl`, `allocate-gang.jsonl` and `pressure-graceful.jsonl`, "
        "but no decision changes (their TDM victims are marked; nothing else of theirs "
        "preempts); new: `ownership.jsonl` (the unmarked `plain` pod is no TDM victim)"
    ),
    retire=(
        _RETIRE_2 + "drop the level-1 branch of `projections.ownership.derive`, its test in "
        "`projections.ownership.derives` and `projections.ownership.reads_config` (with "
        "`ownership` and `system-pods` gone too, a task's flags are always derived and "
        "`rules_of` never falls back to `LEGACY`) and the PodGroup re-derive gate in "
        "`projections/cluster.py`"
    ),
)
BUDGET_MAX_FIRST = Change(
    name="budget-max-first",
    level=2,
    summary=(
        "`jdb-max-unavailable` wins over `jdb-min-available` when a PodGroup sets both "
        "(`projections.objects.budget`)"
    ),
    why=(
        "the seed's rule: the stricter-looking budget a person wrote wins (upstream's JobInfo "
        "happens to read min-available first)"
    ),
    golden=(
        "none: no PodGroup of the level-1 golden logs sets both annotations (forced, no "
        "decision changes); new: `ownership.jsonl` (job `both` loses one pod per period, not "
        "two)"
    ),
    retire=(
        _RETIRE_2 + "drop `Rules.max_first` and `budget`'s `max_first` parameter "
        "(max-unavailable first always)"
    ),
)
TDM_BUDGET_PER_PERIOD = Change(
    name="tdm-budget-per-period",
    level=2,
    summary=(
        "a job's TDM disruption budget is spent once per evict period across sessions "
        "(earlier sessions' TDM evictions of the job count), not once per session"
    ),
    why=(
        "zones closing together fire one session each, so a job spanning them lost one pod "
        "per zone at the same instant"
    ),
    golden=(
        "none: forced on the level-1 golden logs (`tdm-budgets.jsonl`, the demo logs) it "
        "changes no decision; new: `ownership.jsonl` (job `span` loses one pod per period "
        "across zones, not one per zone)"
    ),
    retire=(
        _RETIRE_2 + "drop the `TDM_BUDGET_PER_PERIOD` test in "
        "`controller/policy/plugins/tdm/plugin.py` (the history is then always read)"
    ),
)
TAINT_FROM_DECISION = Change(
    name="taint-from-decision",
    level=2,
    summary=(
        "the pressure eviction taint lives `taintDuration` from the decision that places or "
        "extends it, not from the eviction's `evict_at` (decision plus pre-stop delay)"
    ),
    why="a 300 s taint should be on the node for 300 s",
    golden=(
        "`demo.jsonl`, `demo-v2.jsonl` and `pressure-graceful.jsonl` (forced on them, their "
        "decisions differ from the first pressure round on: untaints 10 s earlier); new: "
        "`demo-level2.jsonl`, `demo-v3.jsonl`"
    ),
    retire=(
        _RETIRE_2 + "drop the test in `controller.policy.pressure.decisions.taint_start`; "
        "the three logs of the golden column then no longer verify and leave "
        "`tests/replay/golden/` with level 1"
    ),
)
QUIET_TICK_SEEN = Change(
    name="quiet-tick-seen",
    level=3,
    summary=(
        "the quiet-tick rule compares `ClusterState.sched_version`: a node update that leaves "
        "every field a session sees equal (a status heartbeat) no longer wakes a session tick"
    ),
    why=(
        "on a real cluster some node heartbeats every second, so under level 2 nearly every "
        "1 s tick ran a full session (about 2.5x the sessions, same decisions)"
    ),
    golden=(
        "none: no golden log sends a node heartbeat (forced on the level-1 and level-2 logs, "
        "no decision changes; `demo-v4.jsonl` is `demo-v3.jsonl`'s run at level 3, only the "
        "stamp differs); `tests/controller/policy/test_quiet_level3.py` holds the difference"
    ),
    retire=(
        "Retires with level 3: once logs of levels 1 and 2 no longer replay with this tide, "
        "drop the `QUIET_TICK_SEEN` test in `controller/policy/step.py` (and `version` from the "
        "quiet-tick rule)"
    ),
)

STALE_METRICS = Change(
    name="stale-metrics",
    level=4,
    summary=(
        "a `metrics.node` sample older than three resolutions (its own `timestamp` against "
        "the record's `at`, a resolution being its `window`, `projections/usage_fresh.py`) "
        "is no evidence: its check decides nothing, later streaks skip it (named "
        "`stale_skipped` in their evidence) and no graceful batch is decided on it"
    ),
    why=(
        "tide stamped samples with its own clock, so the last point metrics-server serves "
        "for a node whose kubelet stopped answering (or a point read minutes late after a "
        "restart) kept driving pressure eviction; Koordinator expires a NodeMetric after "
        "three report intervals (`nodeMetricExpirationSeconds` 180 s)"
    ),
    golden=(
        "none: every sample of the level-1 to level-3 golden logs is stamped at its `at` "
        "(forced on them, no sample is stale, no decision changes); new: "
        "`stale-metrics.jsonl` (hot-0's frozen samples start no round, its fresh "
        "neighbour's do)"
    ),
    retire=(
        "Retires with level 4: once logs of levels 1 to 3 no longer replay with this tide, "
        "drop the `STALE_METRICS` tests in `controller/policy/pressure/policy.py` and "
        "`controller/policy/pressure/followups.py` (stale samples are then always skipped)"
    ),
)

#: every behaviour change, in order of level (the order of ``docs/BEHAVIOUR.md``)
CHANGES: tuple[Change, ...] = (
    PLACEMENT_PLUGINS,
    PREEMPT_BACKFILL,
    OWNERSHIP,
    SYSTEM_PODS,
    PREEMPTABLE_OPT_IN,
    BUDGET_MAX_FIRST,
    TDM_BUDGET_PER_PERIOD,
    TAINT_FROM_DECISION,
    QUIET_TICK_SEEN,
    STALE_METRICS,
)
#: the behaviour level new runs stamp on ``config.applied``: the newest change's
CURRENT = max(change.level for change in CHANGES)
