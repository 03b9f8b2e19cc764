"""The preempt action's arguments (``configurations: [{name: preempt, arguments: ...}]``).

Upstream: volcano-sh/volcano pkg/scheduler/actions/preempt/preempt.go, ``parseArguments``.
Defaults: the predicate error cache on, topology-aware preemption off, 16 dry-run
workers, candidate nodes ``clamp(n × 10 / 100, 1, 100)``.

Difference from Volcano: an integer argument given as a float, a string or a boolean is
refused with a one-line error naming the key (Volcano logs a warning and keeps the
default); a configuration that says ``topologyAwarePreemptWorkerNum: "4"`` means
something, and silently ignoring it would hide that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.policy.framework.errors import ConfigError

NAME = "preempt"


@dataclass(frozen=True)
class PreemptArgs:
    """The parsed arguments, with Volcano's defaults."""

    predicate_error_cache: bool = True
    topology_aware: bool = False
    worker_num: int = 16
    min_candidate_percentage: int = 10
    min_candidate_absolute: int = 1
    max_candidate_absolute: int = 100

    def num_candidates(self, n: int) -> int:
        """How many candidate nodes a topology-aware search collects among ``n`` nodes.

        Volcano's ``calculateNumCandidates``: ``n × percentage // 100`` clamped to
        ``[minAbsolute, maxAbsolute]``, and never more than ``n``.
        """
        c = n * self.min_candidate_percentage // 100
        c = max(c, self.min_candidate_absolute)
        c = min(c, self.max_candidate_absolute)
        return min(c, n)


def _bool(raw: Mapping[str, Any], key: str, default: bool) -> bool:
    value = raw.get(key, default)
    if isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"
    if not isinstance(value, bool):
        raise ConfigError(f"{NAME}.{key}", value, "must be true or false")
    return value


def _int(raw: Mapping[str, Any], key: str, default: int, *, minimum: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{NAME}.{key}", value, "must be an integer")
    if value < minimum:
        raise ConfigError(f"{NAME}.{key}", value, f"must be at least {minimum}")
    return value


def parse_args(raw: Mapping[str, Any]) -> PreemptArgs:
    """Read and validate the action's arguments.

    Raises:
        ConfigError: A value of the wrong type or out of range (the key is named).
    """
    args = PreemptArgs(
        predicate_error_cache=_bool(raw, "predicateErrorCacheEnable", True),
        topology_aware=_bool(raw, "enableTopologyAwarePreemption", False),
        worker_num=_int(raw, "topologyAwarePreemptWorkerNum", 16, minimum=1),
        min_candidate_percentage=_int(raw, "minCandidateNodesPercentage", 10, minimum=0),
        min_candidate_absolute=_int(raw, "minCandidateNodesAbsolute", 1, minimum=1),
        max_candidate_absolute=_int(raw, "maxCandidateNodesAbsolute", 100, minimum=1),
    )
    if args.max_candidate_absolute < args.min_candidate_absolute:
        raise ConfigError(
            f"{NAME}.maxCandidateNodesAbsolute",
            args.max_candidate_absolute,
            "must not be below minCandidateNodesAbsolute",
        )
    return args
