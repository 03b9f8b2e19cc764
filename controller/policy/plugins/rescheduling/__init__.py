"""The rescheduling plugin (Volcano ``rescheduling``): evict from hot nodes so cold ones fill.

Module layout: :mod:`.args` (argument validation), :mod:`.low_node_utilization` (the pure
strategy arithmetic), :mod:`.plugin` (the session side: the interval, node and pod
usage, who may go). This package exposes the plugin-module contract of
``controller.policy.framework.plugin``: ``NAME``, ``parse_args``, ``build``, ``schedules`` and
``warnings`` (shuffle missing from ``actions``).

:data:`DIFFERENCES` lists every deliberate departure from upstream Volcano
(volcano-sh/volcano pkg/scheduler/plugins/rescheduling/: rescheduling.go,
low_node_utilization.go, node_utilization_util.go, rescheduling_util.go) with the reason;
docs/differences.md copies it.
"""

from __future__ import annotations

from controller.policy.plugins.rescheduling.args import (
    DEFAULT_INTERVAL,
    DEFAULT_METRICS_PERIOD,
    LOW_NODE_UTILIZATION,
    LnuParams,
    ReschedulingArgs,
    parse_args,
)
from controller.policy.plugins.rescheduling.low_node_utilization import (
    ALL_LOW,
    NO_HIGH,
    NO_LOW,
    NodeLoad,
    PodLoad,
    Round,
    classify,
    select,
    victim_order,
)
from controller.policy.plugins.rescheduling.plugin import (
    KIND,
    NAME,
    REASON,
    TRIGGER,
    ReschedulingPlugin,
    build,
    never_victim,
    node_loads,
    schedules,
)

SHUFFLE = "shuffle"


def warnings(args: ReschedulingArgs, actions: tuple[str, ...]) -> tuple[str, ...]:
    """A startup warning when no configured action would evict the plugin's victims."""
    del args
    if SHUFFLE in actions:
        return ()
    return (
        f"plugin {NAME} nominates victims only for the {SHUFFLE} action, which is not in "
        f"actions ({', '.join(actions) or 'none'}): nothing will be rescheduled",
    )


#: (topic, Volcano, tide, why) — one row per deliberate difference.
DIFFERENCES: tuple[tuple[str, str, str, str], ...] = (
    (
        "Usage source",
        "reads node averages under the key `metricsPeriod` (default `5m`) while the metrics "
        "client stores them only under `10m`, so usage reads 0 % and nothing is ever evicted "
        "(volcano-sh/volcano#3582)",
        "the mean of the node's `metrics.node` samples over `metricsPeriod`, as a percentage "
        "of allocatable; a node without a sample in the window is stale and takes no part",
        "the seed describes lowNodeUtilization acting on each node's average usage over "
        "`metricsPeriod`",
    ),
    (
        "Last run",
        "a package-global `lastRescheduleTime`, consumed by whatever session opens first "
        "(even one without shuffle); first round one interval after process start",
        "a declared interval trigger (`rescheduling/interval`), always written; a round "
        "runs when the last firing on the log is at least one interval ago",
        "state is a fold of the log, so replay and a restart see the same timer",
    ),
    (
        "Headroom exhausted",
        "stops only when a headroom resource is exactly 0; a negative headroom keeps evicting",
        "stops when any headroom resource is `<= 0`",
        "the seed stops when the cold nodes cannot take more",
    ),
    (
        "Ties",
        "unstable node and pod sorts; the pod comparator is not a strict order; victims "
        "matched by pod name only (namespace ignored)",
        "nodes by `cpu% + memory%` descending then name; pods by priority, BestEffort "
        "first, then namespace, name, uid; victims are the node's own tasks",
        "determinism",
    ),
    (
        "Who may go",
        "every Running pod on a hot node, including critical pods, gang members below "
        "`minAvailable` and pods marked not preemptable (threshold params unused)",
        "only `preemptable` tasks; never DaemonSet, mirror, `kube-system` or "
        "system-critical pods; a PodGroup never drops below its `minAvailable`",
        "the seed pairs rescheduling with gang; evicting critical pods is never intended",
    ),
    (
        "Percent bookkeeping",
        "headroom from allocatable (else capacity), victim percent from capacity; victims "
        "taken off by request",
        "allocatable throughout; a victim's averaged `metrics.pod` usage, its request only "
        "when it has no sample (evidence `usage_source`)",
        "one unit throughout, on measured usage",
    ),
    (
        "Invalid configuration",
        "unparsable `interval` becomes 5m, a non-string crashes; float thresholds crash; "
        "unknown strategies and malformed maps are ignored",
        "startup stops with `<key>: <value>: <problem>`; thresholds may be any number in [0, 100]",
        "invalid configuration stops startup with a message naming key and value",
    ),
    (
        "`enableVictim`",
        "only `enabledVictim` gates the victim function",
        "the seed's `enableVictim` and Volcano's `enabledVictim` both gate it",
        "the seed's configuration must work as pasted",
    ),
)

__all__ = [
    "ALL_LOW",
    "DEFAULT_INTERVAL",
    "DEFAULT_METRICS_PERIOD",
    "DIFFERENCES",
    "KIND",
    "LOW_NODE_UTILIZATION",
    "NAME",
    "NO_HIGH",
    "NO_LOW",
    "REASON",
    "TRIGGER",
    "LnuParams",
    "NodeLoad",
    "PodLoad",
    "ReschedulingArgs",
    "ReschedulingPlugin",
    "Round",
    "build",
    "classify",
    "never_victim",
    "node_loads",
    "parse_args",
    "schedules",
    "select",
    "victim_order",
    "warnings",
]
