"""The ``usage`` plugin: keep new pods off nodes whose measured usage is high.

Why: allocate places by requests, which say little about how busy a node really is; after
a rescheduling round the replacements must go to the nodes that are cold by measurement.
Upstream: volcano-sh/volcano pkg/scheduler/plugins/usage/usage.go (``New``,
``OnSessionOpen``: ``predicateFn`` and ``nodeOrderFn``).

A node's usage is the mean of its ``metrics.node`` samples over ``metricsPeriod``
(default 5m) in percent of allocatable. A node whose newest sample is older than
:data:`METRICS_ACTIVE` (5 minutes), or that has none, is not judged: it passes the
predicate and scores 0, as upstream.

* **predicate** (``enablePredicate``): a node above ``thresholds.cpu`` (default 80) or
  ``thresholds.mem`` (default 80; ``memory`` is accepted too) is rejected as
  unschedulable and unresolvable;
* **node order**: ``((100 − cpu%) × cpu.weight + (100 − mem%) × memory.weight) /
  (cpu.weight + memory.weight) × usage.weight`` (defaults 1, 1, 5), on the 0..100 scale.

Differences from Volcano: thresholds may be any number in [0, 100] (upstream reads
integers and silently takes 0 for a float); usage is averaged from the log's samples
over ``metricsPeriod`` (upstream reads the metrics client's ``10m`` average).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from controller.policy.framework.durations import DurationError, parse_duration
from controller.policy.framework.errors import ConfigError
from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.points import FitError, FitStatus
from controller.policy.framework.session import Session
from projections.model import NodeInfo, TaskInfo
from projections.usage import to_seconds

NAME = "usage"
METRICS_ACTIVE = timedelta(minutes=5)
MAX_NODE_SCORE = 100
CPU_EXCEEDED = "the CPU load of the node exceeds the upper limit."
MEMORY_EXCEEDED = "the memory load of the node exceeds the upper limit."


@dataclass(frozen=True, slots=True)
class UsageArgs:
    """Validated arguments."""

    usage_weight: int = 5
    cpu_weight: int = 1
    memory_weight: int = 1
    cpu_threshold: float = 80.0
    memory_threshold: float = 80.0
    metrics_period: timedelta = timedelta(minutes=5)


def _weight(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{NAME}.{key}", value, "must be a non-negative integer")
    return value


def _percent(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise ConfigError(f"{NAME}.thresholds.{key}", value, "must be a percent in [0, 100]")
    return float(value)


def parse_args(raw: Mapping[str, Any]) -> UsageArgs:
    """Validate ``usage.weight``, ``cpu.weight``, ``memory.weight``, ``thresholds`` and
    ``metricsPeriod``.

    Raises:
        ConfigError: names the key and the value.
    """
    thresholds = raw.get("thresholds") or {}
    if not isinstance(thresholds, Mapping):
        raise ConfigError(f"{NAME}.thresholds", thresholds, "must be a map of resource to percent")
    cpu, memory = 80.0, 80.0
    for key, value in thresholds.items():
        if key == "cpu":
            cpu = _percent(key, value)
        elif key in ("mem", "memory"):
            memory = _percent(str(key), value)
        else:
            raise ConfigError(f"{NAME}.thresholds.{key}", value, "unknown resource (cpu, mem)")
    period_raw = raw.get("metricsPeriod", "5m")
    try:
        period = parse_duration(period_raw)
    except DurationError as exc:
        raise ConfigError(f"{NAME}.metricsPeriod", period_raw, "not a Go duration") from exc
    if period <= timedelta(0):
        raise ConfigError(f"{NAME}.metricsPeriod", period_raw, "must be positive")
    cpu_weight = _weight(raw, "cpu.weight", 1)
    memory_weight = _weight(raw, "memory.weight", 1)
    if cpu_weight + memory_weight == 0:
        raise ConfigError(f"{NAME}.cpu.weight", 0, "cpu.weight and memory.weight are both 0")
    return UsageArgs(
        usage_weight=_weight(raw, "usage.weight", 5),
        cpu_weight=cpu_weight,
        memory_weight=memory_weight,
        cpu_threshold=cpu,
        memory_threshold=memory,
        metrics_period=period,
    )


def _any_task(task: TaskInfo) -> int:
    """The predicate and the score do not depend on the task."""
    del task
    return 0


class UsagePlugin:
    """Registers the usage predicate and node order on session open."""

    name = NAME

    def __init__(self, args: UsageArgs) -> None:
        self.args = args

    def on_session_open(self, ssn: Session) -> None:
        args = self.args
        memo: dict[str, tuple[float, float] | None] = {}
        series_of = ssn.usage.nodes
        end, seconds = to_seconds(ssn.now), args.metrics_period.total_seconds()
        # the newest sample is recent when it is not older than METRICS_ACTIVE: compared in
        # the series' seconds (exact for the log's microsecond times)
        active_since = to_seconds(ssn.now - METRICS_ACTIVE)

        def percent(node: NodeInfo) -> tuple[float, float] | None:
            if node.name in memo:
                return memo[node.name]
            found: tuple[float, float] | None = None
            series = series_of.get(node.name)
            if series is not None and series.times and series.times[-1] >= active_since:
                # the running window sums of projections.usage_window: O(change) per read
                cpu, memory, n = series.mean(end, seconds)
                alloc = node.allocatable
                if n and alloc.milli_cpu > 0 and alloc.memory > 0:
                    found = (100.0 * cpu / alloc.milli_cpu, 100.0 * memory / alloc.memory)
            memo[node.name] = found
            return found

        def predicate(task: TaskInfo, node: NodeInfo) -> None:
            del task
            used = percent(node)
            if used is None:
                return
            status = FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE
            if used[0] > args.cpu_threshold:
                raise FitError(status, CPU_EXCEEDED, plugin=NAME)
            if used[1] > args.memory_threshold:
                raise FitError(status, MEMORY_EXCEEDED, plugin=NAME)

        def score(task: TaskInfo, node: NodeInfo) -> float:
            del task
            used = percent(node)
            if used is None:
                return 0.0
            cpu = (100.0 - used[0]) / 100.0 * args.cpu_weight
            memory = (100.0 - used[1]) / 100.0 * args.memory_weight
            blended = (cpu + memory) / (args.cpu_weight + args.memory_weight)
            return blended * MAX_NODE_SCORE * args.usage_weight

        pool = ssn.view.node_list
        scores: dict[int, float] = {}

        def batch(task: TaskInfo, indices: Sequence[int]) -> list[float]:
            # the score reads the node's name, allocatable and samples, none of which a
            # statement changes: one answer per node index for the whole session
            out: list[float] = []
            for i in indices:
                value = scores.get(i)
                if value is None:
                    value = scores[i] = score(task, pool[i])
                out.append(value)
            return out

        # both read only the node: one answer per node serves every task
        ssn.add_predicate_fn(NAME, predicate, key=_any_task)
        ssn.add_node_order_fn(NAME, score, key=_any_task, batch=batch)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def build(args: UsageArgs, ctx: PluginContext) -> UsagePlugin:
    """The plugin for validated ``args``."""
    del ctx
    return UsagePlugin(args)
