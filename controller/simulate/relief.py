"""Usage freed by pressure evictions, shown in the simulated node samples.

A scenario's node usage profile is a script written before the run: it cannot know that
tide will evict pods from the node. Without help, the samples after a pressure eviction
show no relief and the metrics say the eviction freed nothing. With relief on (the
scenario's ``evictionFreesUsage: true``; the demo sets it), the simulator keeps, per
node, what the pods evicted for pressure used, and subtracts it from every later node
sample of that node (never below zero):

* a pod's usage is its last ``metrics.pod`` sample before it was gone (the sum of its
  containers), else its requests;
* it is freed when the pod is gone (the simulated cluster's ``DELETED`` watch answering
  the eviction), not when the eviction is decided (a graceful pod still runs);
* only pressure evictions (``cpu-pressure``, ``memory-pressure``, ``oom-risk``,
  ``predicted-pressure``) free usage: the profile is the node's load as scripted, and a
  revocable-zone or rebalancing eviction of a pod the script may never have counted
  would subtract load that was never there;
* ``metrics.pod`` samples of a pod that is gone are dropped (a metrics server reports
  only running pods).

Node samples keep their time; a changed sample is a new record (its id is the content
hash of the new data). Deterministic: a pure function of the records written so far.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from projections.parsing import milli, milli_uncached, units, units_uncached
from streams.events import Event, make_event
from streams.payloads import ObjectMeta, as_evict, as_node_sample, as_pod_sample, as_watch

PRESSURE_REASONS = frozenset({"cpu-pressure", "memory-pressure", "oom-risk", "predicted-pressure"})


def _key(meta: ObjectMeta | Mapping[str, Any]) -> str:
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '')}"


def _pod_requests(pod: Mapping[str, Any]) -> tuple[float, float]:
    cpu = mem = 0.0
    for container in (pod.get("spec") or {}).get("containers") or []:
        requests = (container.get("resources") or {}).get("requests") or {}
        cpu += milli(requests.get("cpu", "0"))
        mem += units(requests.get("memory", "0"))
    return cpu, mem


class UsageRelief:
    """Watches what a run writes; rewrites the node samples still to come."""

    def __init__(self) -> None:
        self.freed: dict[str, tuple[float, float]] = {}  # node -> (milli-cores, bytes)
        self.used: dict[str, tuple[float, float]] = {}  # pod key -> last sampled usage
        self.pending: dict[str, str] = {}  # pressure eviction id -> node
        self.gone: set[str] = set()

    def observe(self, record: Event) -> None:
        """See one written record (in log order)."""
        # the payloads typed without a call per record (a TypedDict is the dict itself)
        if record.type == "metrics.pod":
            if TYPE_CHECKING:
                sample = as_pod_sample(record)
            else:
                sample = record.data
            cpu = mem = 0.0
            for container in sample.get("containers") or []:
                usage = container.get("usage") or {}
                cpu += milli_uncached(usage.get("cpu", "0"))
                mem += units_uncached(usage.get("memory", "0"))
            self.used[_key(sample.get("metadata") or {})] = (cpu, mem)
        elif record.type == "decision.evict":
            decision = as_evict(record)
            if decision.get("reason") in PRESSURE_REASONS:
                self.pending[record.id] = str(decision.get("node") or "")
        elif record.type == "k8s.watch":
            if TYPE_CHECKING:
                watch = as_watch(record)
            else:
                watch = record.data
            if watch.get("event") != "DELETED":
                return
            node = self.pending.pop(record.cause or "", None)
            pod = watch.get("object") or {}
            if node is None or watch.get("resource") != "pods":
                return
            key = _key(pod.get("metadata") or {})
            self.gone.add(key)
            cpu, mem = self.used.get(key) or _pod_requests(pod)
            before = self.freed.get(node, (0.0, 0.0))
            self.freed[node] = (before[0] + cpu, before[1] + mem)

    def prepare(self, record: Event) -> Event | None:
        """The input to write instead of ``record`` (None: drop it)."""
        if record.type == "metrics.pod":
            if TYPE_CHECKING:
                pod = as_pod_sample(record)
            else:
                pod = record.data
            return None if _key(pod.get("metadata") or {}) in self.gone else record
        if record.type != "metrics.node":
            return record
        if TYPE_CHECKING:
            sample = as_node_sample(record)
        else:
            sample = record.data
        name = str((sample.get("metadata") or {}).get("name") or "")
        freed = self.freed.get(name)
        if freed is None:
            return record
        usage = dict(sample.get("usage") or {})
        cpu = max(0.0, milli_uncached(usage.get("cpu", "0")) - freed[0])
        mem = max(0.0, units_uncached(usage.get("memory", "0")) - freed[1])
        usage["cpu"] = f"{round(cpu)}m"
        usage["memory"] = f"{round(mem / 1024)}Ki"
        return make_event("metrics.node", record.at, {**record.data, "usage": usage})
