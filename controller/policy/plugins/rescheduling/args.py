"""Rescheduling plugin arguments: parsing and validation, so a bad value stops startup.

Upstream reads an untyped ``Arguments`` map (volcano-sh/volcano
pkg/scheduler/plugins/rescheduling/rescheduling.go, ``Configs.parseArguments``): an
unparsable ``interval`` silently becomes 5 minutes, a non-string one crashes, strategy
entries that fail to decode are skipped, unknown strategy names are ignored, a float
threshold crashes (low_node_utilization.go, ``parseArgToConfig``), and a malformed map
falls back to the defaults. Here each of those stops startup with a
:class:`~controller.policy.framework.errors.ConfigError` naming the key and the value.

Keys (under the plugin's ``arguments``):

* ``interval``: Go duration, strictly positive; default ``5m``;
* ``metricsPeriod``: Go duration, strictly positive; default ``5m`` (empty string: the
  default, as upstream);
* ``strategies``: a list of ``{name, params}``; default one ``lowNodeUtilization`` with
  default params; a non-empty list replaces the default. Only ``lowNodeUtilization``
  exists; another name is an error;
* ``params.thresholds`` / ``params.targetThresholds``: percent per resource (``cpu``,
  ``memory``; numbers in ``[0, 100]``, integers or not); a missing resource keeps 100,
  which never makes a node low-on-everything nor high. ``pods`` / ``pod`` are accepted
  and ignored: upstream never measures a pod-count usage, so its entries are dead there
  too. Other params upstream declares but never reads (``thresholdPriorityClassName``,
  ``thresholdPriority``, ``numberOfNodes``, ``nodeFit``) are accepted and ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from controller.policy.framework.durations import DurationError, parse_duration
from controller.policy.framework.errors import ConfigError

LOW_NODE_UTILIZATION = "lowNodeUtilization"
DEFAULT_INTERVAL = timedelta(minutes=5)
DEFAULT_METRICS_PERIOD = timedelta(minutes=5)
DEFAULT_PERCENT = 100.0
#: the resources a threshold may name that tide measures
RESOURCES: tuple[str, ...] = ("cpu", "memory")
#: accepted and ignored (upstream never measures them)
IGNORED_RESOURCES = frozenset({"pods", "pod"})
#: params upstream declares and never reads
IGNORED_PARAMS = frozenset(
    {"thresholdPriorityClassName", "thresholdPriority", "numberOfNodes", "nodeFit"}
)


def _full() -> dict[str, float]:
    return {resource: DEFAULT_PERCENT for resource in RESOURCES}


@dataclass(frozen=True, slots=True)
class LnuParams:
    """``lowNodeUtilization`` thresholds: percent of allocatable per resource."""

    thresholds: Mapping[str, float] = field(default_factory=_full)
    target_thresholds: Mapping[str, float] = field(default_factory=_full)


@dataclass(frozen=True, slots=True)
class ReschedulingArgs:
    """Validated rescheduling arguments."""

    interval: timedelta = DEFAULT_INTERVAL
    metrics_period: timedelta = DEFAULT_METRICS_PERIOD
    #: the configured ``lowNodeUtilization`` entries, in order (the default: one)
    strategies: tuple[LnuParams, ...] = (LnuParams(),)


def _duration(key: str, value: Any, default: timedelta) -> timedelta:
    if value is None or value == "":
        return default
    try:
        period = parse_duration(value)
    except DurationError as exc:
        raise ConfigError(key, value, "not a Go duration such as 5m or 90s") from exc
    if period <= timedelta(0):
        raise ConfigError(key, value, "must be positive")
    return period


def _percents(key: str, value: Any) -> dict[str, float]:
    out = _full()
    if value is None:
        return out
    if not isinstance(value, Mapping):
        raise ConfigError(key, value, "must be a map of resource to percent")
    for resource, raw in value.items():
        name = str(resource)
        if name in IGNORED_RESOURCES:
            continue
        if name not in RESOURCES:
            raise ConfigError(f"{key}.{name}", raw, "unknown resource (cpu, memory, pods)")
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise ConfigError(f"{key}.{name}", raw, "must be a number of percent")
        if not 0 <= raw <= 100:
            raise ConfigError(f"{key}.{name}", raw, "must be between 0 and 100")
        out[name] = float(raw)
    return out


def _strategy(key: str, entry: Any) -> LnuParams:
    if not isinstance(entry, Mapping):
        raise ConfigError(key, entry, "must be a map with name and params")
    name = entry.get("name")
    if name != LOW_NODE_UTILIZATION:
        raise ConfigError(f"{key}.name", name, f"unknown strategy (only {LOW_NODE_UTILIZATION})")
    params = entry.get("params") or {}
    if not isinstance(params, Mapping):
        raise ConfigError(f"{key}.params", params, "must be a map")
    for param in params:
        if param not in ("thresholds", "targetThresholds") and param not in IGNORED_PARAMS:
            raise ConfigError(f"{key}.params.{param}", params[param], "unknown parameter")
    return LnuParams(
        thresholds=_percents(f"{key}.params.thresholds", params.get("thresholds")),
        target_thresholds=_percents(
            f"{key}.params.targetThresholds", params.get("targetThresholds")
        ),
    )


def parse_args(raw: Mapping[str, Any]) -> ReschedulingArgs:
    """Validate the plugin's ``arguments`` (see the module docstring).

    Raises:
        ConfigError: a value is invalid; the message names the key and the value.
    """
    interval = _duration("interval", raw.get("interval"), DEFAULT_INTERVAL)
    period = _duration("metricsPeriod", raw.get("metricsPeriod"), DEFAULT_METRICS_PERIOD)
    entries = raw.get("strategies")
    if entries is None or entries == []:
        strategies: tuple[LnuParams, ...] = (LnuParams(),)
    elif not isinstance(entries, list):
        raise ConfigError("strategies", entries, "must be a list of {name, params}")
    else:
        strategies = tuple(_strategy(f"strategies[{i}]", e) for i, e in enumerate(entries))
    return ReschedulingArgs(interval=interval, metrics_period=period, strategies=strategies)
