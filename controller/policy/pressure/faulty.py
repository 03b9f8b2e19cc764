"""Faulty-pod eviction: repeated OOM kills and memory leaks.

This is tide's design (beyond upstream koordlet): the koordlet has no OOM-count or
memory-leak eviction (the nearest upstream analogue is kubernetes-sigs/descheduler's
``RemovePodsHavingTooManyRestarts`` plugin).

* ``faulty-oom``: the pod's last ``oomCountThreshold`` container terminations were all
  ``OOMKilled`` (:class:`projections.oom.OOMState`). Read through the OOM projection's
  per-node index, so a node without such pods costs one dictionary lookup.
* ``faulty-memory-leak``: the pod's memory grew over the last ``memoryLeakDuration`` —
  samples spanning at least 90 % of it, none more than 1 % below the one before, the last
  at least 1.1 × the first (:meth:`projections.usage.Series.leak`; a first sample of 0 is
  no baseline). A leak develops over an hour, so it is looked for at the node's first
  check in each five minutes of log time (:data:`LEAK_CHECK_SECONDS`; the block of the
  node's sample differs from its previous sample's), not at every check: the cost of
  looking at every pod of the node is paid once per node per five minutes.

Both apply to ``BE`` and ``LS`` pods, never ``LSR``, ``LSE`` or ``SYSTEM``. A pod that
is both is evicted once, as ``faulty-oom``. Faulty evictions are independent of node
pressure: no stability, no cooldown; they count against the memory limits (at most
``maxEvictionPerBatch`` per check and ``maxEvictionPerMinute`` per node).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from controller.policy.pressure.candidates import FAULTY_QOS, Candidate, evictable
from controller.policy.pressure.config import EvictionConfig
from controller.policy.pressure.inputs import started
from projections.model import NodeInfo
from projections.pressure import PressureState
from projections.usage import Sample, Series
from projections.world import PolicyInputs
from streams.events import format_time
from streams.payloads import EvidenceDict

#: leaks are looked for at a node's first check in each block of this many seconds
LEAK_CHECK_SECONDS = 300


@dataclass(frozen=True, slots=True)
class Faulty:
    candidate: Candidate
    reason: str
    evidence: EvidenceDict


def leak_check_due(series: Series) -> bool:
    """Whether this check is the node's first in its block of time (or its first at all)."""
    times = series.times
    if len(times) < 2:
        return True
    return int(times[-1] // LEAK_CHECK_SECONDS) != int(times[-2] // LEAK_CHECK_SECONDS)


def faulty_pods(
    world: PolicyInputs,
    node: NodeInfo,
    series: Series,
    now: datetime,
    state: PressureState,
    config: EvictionConfig,
    *,
    exclude: Callable[[], set[str]],
) -> list[Faulty]:
    """Faulty pods on ``node``: repeated OOM kills first, then leaks, each by key.

    ``exclude`` gives the keys that are not candidates; it is asked (once) only when a pod
    passes the cheaper tests: most checks find no faulty pod and never need it."""
    found: list[Faulty] = []
    excluded: set[str] | None = None
    faulty = config.faulty
    oom = world.oom
    threshold = faulty.oom_count_threshold
    for key in oom.repeated_oom_on(node.name, threshold):
        task = node.tasks.get(key)
        if task is None or task.qos not in FAULTY_QOS:
            continue
        if excluded is None:
            excluded = exclude()
        if key in excluded:
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
    usage = world.usage
    duration = faulty.memory_leak_duration
    young = now.timestamp() - 0.9 * duration.total_seconds()
    leaking: list[tuple[str, tuple[Sample, Sample]]] = []
    if usage.pods_since is None or usage.pods_since > young:
        return found  # no pod has been watched long enough to show a leak
    get = usage.pods.get
    for key in node.tasks:
        pod_series = get(key)
        # cheap exit (Series.may_leak, inlined: this loop runs over every pod of the node)
        if (
            pod_series is None
            or pod_series.run_start > young
            or pod_series.memory[-1] < 1.1 * pod_series.run_min
        ):
            continue
        task = node.tasks[key]
        if key in chosen or task.qos not in FAULTY_QOS:
            continue
        if excluded is None:
            excluded = exclude()
        if key in excluded:
            continue
        leak = pod_series.leak(now, duration)
        if leak is not None and evictable(task, node.name, state):
            leaking.append((key, leak))
    leaking.sort(key=lambda item: item[0])
    for key, (first, last) in leaking:
        task = node.tasks[key]
        candidate = Candidate(task, last.memory, started(task), oom.kills(key))
        evidence = {
            "memory_leak_duration": duration.total_seconds(),
            "first": {"at": format_time(first.at), "memory": first.memory},
            "last": {"at": format_time(last.at), "memory": last.memory},
            "growth": round(last.memory / first.memory, 4),
        }
        found.append(Faulty(candidate, "faulty-memory-leak", evidence))
    return found
