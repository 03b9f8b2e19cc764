"""Pressure eviction: Koordinator's koordlet eviction, as tide implements it.

Upstream: koordinator-sh/koordinator pkg/koordlet/qosmanager/plugins/cpuevict and
memoryevict (the evictor loops, ``cpuEvictor`` and ``memoryEvictor``) and
pkg/koordlet/qosmanager/plugins/util (the eviction executor).

Entry points the loop wires in (all pure: the World folded so far, a record, the
configuration; no clock, no I/O):

* :func:`check_node` — for every ``metrics.node`` record, after it is folded: CPU,
  memory, OOM-risk, faulty-pod and predictive eviction and the eviction taint;
* :func:`due_followups` / :func:`on_trigger` — later graceful batches and taint removal
  as ``trigger.fired`` kinds :data:`PRESSURE_TRIGGER_KINDS`;
* :func:`reserved_for_ls` — resources held for LS pods on a node after an eviction,
  which allocate must not give to BE pods; :func:`evicted_owners` — owners whose pods
  were just evicted from a node (their replacements should prefer other nodes).

All policy state (cooldowns, streaks, rate windows, rounds, taints, reservations) is the
``pressure`` projection (:mod:`projections.pressure`) plus the ``usage`` and ``oom``
projections: the World must hold all three.

Differences from Koordinator: the koordlet has no faulty-pod, predictive, per-batch /
per-minute limits, eviction taint, LS reservation, graceful batching or latency metrics
(its only rate control is a cool-time: 20 s for CPU, 4 s for memory); these are tide's
design (beyond upstream koordlet). tide's triggers are pressure strictly above a
percentage of capacity, stable over ``pressureStableThreshold`` checks, not the koordlet's
(BE satisfaction, time-window averages, ≥ threshold, lower = threshold − 2); victims are BE
pods only (by the QoS label, or Kubernetes BestEffort without one — the koordlet's BE
paths read the label only); the victim order adds running-time and OOM-count keys that
the koordlet does not have.
"""

from __future__ import annotations

from datetime import datetime

from controller.policy.pressure.config import EvictionConfig, parse_eviction_config
from controller.policy.pressure.followups import PRESSURE_TRIGGER_KINDS, due_followups, on_trigger
from controller.policy.pressure.policy import check_node
from projections.model import Resource
from projections.world import PolicyInputs

__all__ = [
    "PRESSURE_TRIGGER_KINDS",
    "EvictionConfig",
    "check_node",
    "due_followups",
    "evicted_owners",
    "on_trigger",
    "parse_eviction_config",
    "reserved_for_ls",
]


def reserved_for_ls(world: PolicyInputs, node_name: str, now: datetime) -> Resource:
    """Resources held for LS pods on ``node_name`` at ``now`` (``resourceReservation``).

    The sum, over pressure evictions from the node within ``reservationDuration`` of
    ``now``, of each victim's larger of usage and request (cpu milli, memory bytes).
    Allocate subtracts it from the node's idle resources when placing a BE pod.
    """
    return world.pressure.reserved(node_name, now)


def evicted_owners(world: PolicyInputs, node_name: str, now: datetime) -> frozenset[str]:
    """``Kind/name`` of the owners of pods evicted from the node within the reservation."""
    return world.pressure.evicted_owners(node_name, now)
