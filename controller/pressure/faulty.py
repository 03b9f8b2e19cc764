"""Faulty-pod eviction (seed §9.1, §9.2 problem 3): repeated OOM kills and memory leaks.

* ``faulty-oom``: the pod's last ``oomCountThreshold`` container terminations were all
  ``OOMKilled`` (:class:`projections.oom.OOMState`). Read through the OOM projection's
  per-node index, so a node without such pods costs one dictionary lookup.
* ``faulty-memory-leak``: the pod's memory grew over the last ``memoryLeakDuration`` —
  samples spanning at least 90 % of it, none more than 1 % below the one before, the last
  at least 1.1 × the first (:meth:`projections.usage.Series.leak`; a first sample of 0 is
  no baseline). A leak develops over an hour, so it is looked for at the first check of
  each minute of log time per node (the minute of the node's sample differs from its
  previous sample's), not at every check.

Both apply to ``BE`` and ``LS`` pods, never ``LSR``, ``LSE`` or ``SYSTEM``. A pod that
is both is evicted once, as ``faulty-oom``. Faulty evictions are independent of node
pressure: no stability, no cooldown; they count against the memory limits (at most
``maxEvictionPerBatch`` per check and ``maxEvictionPerMinute`` per node).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from controller.pressure.candidates import FAULTY_QOS, Candidate, evictable
from controller.pressure.config import EvictionConfig
from controller.pressure.view import WorldLike, oom_of, started, usage_of
from projections.model import NodeInfo
from projections.pressure import PressureState
from projections.usage import Series
from streams.events import format_time

LEAK_CHECK_SECONDS = 60


@dataclass(frozen=True, slots=True)
class Faulty:
    candidate: Candidate
    reason: str
    evidence: dict[str, Any]


def leak_check_due(series: Series) -> bool:
    """Whether this check is the node's first of a minute (or its first at all)."""
    times = series.times
    if len(times) < 2:
        return True
    return int(times[-1] // LEAK_CHECK_SECONDS) != int(times[-2] // LEAK_CHECK_SECONDS)


def faulty_pods(
    world: WorldLike,
    node: NodeInfo,
    series: Series,
    now: datetime,
    state: PressureState,
    config: EvictionConfig,
    *,
    exclude: set[str],
) -> list[Faulty]:
    """Faulty pods on ``node``: repeated OOM kills first, then leaks, each by key."""
    found: list[Faulty] = []
    faulty = config.faulty
    oom = oom_of(world)
    threshold = faulty.oom_count_threshold
    for key in oom.repeated_oom_on(node.name, threshold):
        task = node.tasks.get(key)
        if task is None or task.qos not in FAULTY_QOS or key in exclude:
            continue
        if not evictable(task, node.name, state):
            continue
        candidate = Candidate(task, 0.0, started(task), oom.kills(key))
        evidence = {
            "oom_count_threshold": threshold,
            "oom_kills": oom.kills(key),
            "last_terminations": list(oom.last_reasons(key)[-threshold:]),
        }
        found.append(Faulty(candidate, "faulty-oom", evidence))
    if not leak_check_due(series):
        return found
    chosen = {f.candidate.key for f in found}
    usage = usage_of(world)
    duration = faulty.memory_leak_duration
    for key in sorted(node.tasks):
        task = node.tasks[key]
        if key in chosen or key in exclude or task.qos not in FAULTY_QOS:
            continue
        pod_series = usage.pods.get(key)
        if pod_series is None or not evictable(task, node.name, state):
            continue
        leak = pod_series.leak(now, duration)
        if leak is None:
            continue
        first, last = leak
        candidate = Candidate(task, last.memory, started(task), oom.kills(key))
        evidence = {
            "memory_leak_duration": duration.total_seconds(),
            "first": {"at": format_time(first.at), "memory": first.memory},
            "last": {"at": format_time(last.at), "memory": last.memory},
            "growth": round(last.memory / first.memory, 4),
        }
        found.append(Faulty(candidate, "faulty-memory-leak", evidence))
    return found
