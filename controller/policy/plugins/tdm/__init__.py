"""The TDM plugin (Volcano ``tdm``): revocable zones usable only inside a daily window.

Module layout: :mod:`.window` (window grammar and activity, Go durations), :mod:`.budget`
(``maxVictims`` and the victim order), :mod:`.args` (argument validation), :mod:`.plugin`
(the session callbacks), :mod:`.schedule` (the triggers it declares). This package exposes
the plugin-module contract of ``controller.policy.framework.plugin``: ``NAME``,
``parse_args(raw) -> TdmArgs``, ``build(args, ctx) -> TdmPlugin`` and
``schedules(args, ctx) -> tuple[Schedule, ...]``.

:data:`DIFFERENCES` lists every deliberate departure from upstream Volcano
(volcano-sh/volcano pkg/scheduler/plugins/tdm/tdm.go: ``parseRevocableZone``,
``tdmPlugin.availableRevocableZone``, ``tdmPlugin.getMaxPodEvictNum``, the callbacks of
``tdmPlugin.OnSessionOpen``) with the reason; docs/differences.md copies it.
"""

from __future__ import annotations

from controller.policy.plugins.tdm.args import (
    DEFAULT_EVICT_PERIOD,
    EVICT_PERIOD,
    SHARED_TIMER,
    ZONE_PREFIX,
    TdmArgs,
    Zone,
    parse_args,
)
from controller.policy.plugins.tdm.budget import (
    Budget,
    job_budget,
    order_victims,
    parse_int_or_percent,
)
from controller.policy.plugins.tdm.plugin import (
    MAX_NODE_SCORE,
    NAME,
    REASON_PREEMPT,
    REASON_WINDOW_CLOSED,
    TdmPlugin,
    build,
)
from controller.policy.plugins.tdm.schedule import (
    EVICT_PERIOD_KIND,
    WINDOW_END,
    WINDOW_START,
    LastClose,
    ZoneSchedule,
    last_close,
    schedules,
    zone_schedules,
)
from controller.policy.plugins.tdm.window import (
    Window,
    WindowError,
    parse_go_duration,
    parse_window,
)

#: (topic, Volcano, tide, why) — one row per deliberate difference.
DIFFERENCES: tuple[tuple[str, str, str, str], ...] = (
    (
        "Cross-midnight windows",
        "`22:00-06:00` is active only 22:00-24:00: the start is always anchored to today, "
        "so the after-midnight part is lost",
        "active from 22:00 until 06:00 the next morning, including after midnight",
        "`start >= end` is meant as a window across midnight (upstream moves the end to the "
        "next day for it), so the night part must count",
    ),
    (
        "Equal start and end",
        "`t1 == t2` is a 24 h window starting today at t1, so only `0:00-0:00` is always "
        "on; `23:59-23:59` is on one minute a day",
        "`t1 == t2` is always active",
        "`t1 == t2` is meant as a 24-hour window (upstream puts the end a day after the "
        "start), so it is always on",
    ),
    (
        "End bound",
        "inclusive to the second: whole Unix seconds are compared, so `10:00-21:00` is still "
        "open at 21:00:00.999",
        "half-open `[start, end)`: `10:00-21:00` is closed at 21:00:00 sharp, and the "
        "window-end trigger fires then",
        "the close and the first eviction coincide with the configured time: a zone handed "
        "back at 21:00 is free at 21:00",
    ),
    (
        "Timezone",
        "windows read in the scheduler process's local zone; DST shifts the window",
        "windows read in the configured IANA `timezone` (default UTC) with zoneinfo; a "
        "repeated wall time means its first occurrence, a skipped one maps with the "
        "pre-transition offset (the instants APScheduler's CronTrigger fires at)",
        "deterministic replay must not depend on the machine",
    ),
    (
        "Evict timer per zone",
        "one process-global `lastEvictAt` for all zones: one zone's round throttles the "
        "others (a known upstream limitation)",
        "the evict period is kept per zone; `tdm.evict.shared-timer: true` restores a "
        "single timer (last TDM eviction in any zone)",
        "a zone's eviction should not silence the others",
    ),
    (
        "Timer source and advance",
        "a package variable, reset to now on every non-throttled call even when nothing is evicted",
        "the last TDM eviction recorded on the log (`ssn.history`, folded from "
        "`decision.evict` events); it advances only on actual evictions",
        "state is a fold of the log; an empty round is not an eviction",
    ),
    (
        "Min-available below minimum",
        "`running < min-available` falls through to the default and evicts 1",
        "evicts 0",
        "a job already below its min-available must not lose more pods",
    ),
    (
        "Invalid budget value",
        "`abc`, `30.5%`, ` 30%` parse to 0: max-unavailable blocks all evictions, "
        "min-available makes every running task evictable",
        "`abc`, `30.5%`, ` 30%`, `150%`, negatives and non-int32 numbers are errors: the "
        "job loses nothing; the error is listed as `skipped_jobs` in the evidence of that "
        "zone's other victims and in `TdmPlugin.budget_errors`",
        "annotations are data, not configuration, so they cannot stop startup; evicting "
        "nothing is the safe reading",
    ),
    (
        "Budget across zones",
        "recomputed for each closed zone in a round: a job spanning two zones can lose "
        "twice its budget",
        "one budget per job per evict period, shared by all zones and by the sessions "
        "of zones that close together (the job's TDM evictions of the period, a fold of "
        "the log)",
        "the budget is a per-job disruption budget",
    ),
    (
        "Victim order within a job",
        "map iteration order (random)",
        "lowest priority first, then most recently started (no start time = newest), "
        "then namespace, name, uid",
        "determinism; evict the cheapest work first",
    ),
    (
        "Invalid configuration",
        "a malformed window makes the zone inactive forever; an unparsable or negative "
        "`tdm.evict.period` becomes 1m or is used as is; a non-string value crashes",
        "startup stops with `<key>: <value>: <problem>` for a bad window, a zero or "
        "negative or unparsable period, a non-string value, an empty zone name or an "
        "unknown `tdm.*` key",
        "invalid configuration stops startup with a message naming key and value",
    ),
    (
        "Zone keys",
        "any key *containing* `tdm.revocable-zone.` defines a zone (`x.tdm.revocable-"
        "zone.rz1` is zone `x.rz1`)",
        "only keys *starting with* `tdm.revocable-zone.`; other `tdm.*` keys are errors",
        "a substring match hides typos",
    ),
    (
        "Node order in a closed or unknown zone",
        "returns an error that discards every plugin's score for the node",
        "scores 0 (the predicate already rejects the node)",
        "one plugin should not erase the others' scores",
    ),
)

__all__ = [
    "DEFAULT_EVICT_PERIOD",
    "DIFFERENCES",
    "EVICT_PERIOD",
    "EVICT_PERIOD_KIND",
    "MAX_NODE_SCORE",
    "NAME",
    "REASON_PREEMPT",
    "REASON_WINDOW_CLOSED",
    "SHARED_TIMER",
    "WINDOW_END",
    "WINDOW_START",
    "ZONE_PREFIX",
    "Budget",
    "LastClose",
    "TdmArgs",
    "TdmPlugin",
    "Window",
    "WindowError",
    "Zone",
    "ZoneSchedule",
    "build",
    "job_budget",
    "last_close",
    "order_victims",
    "parse_args",
    "parse_go_duration",
    "parse_int_or_percent",
    "parse_window",
    "schedules",
    "zone_schedules",
]
