"""Rate control of pressure eviction, per node, over the pressure projection.

The koordlet's only rate control is a per-resource cool-time after a round that evicted
(koordinator-sh/koordinator pkg/koordlet/qosmanager/plugins/cpuevict and memoryevict);
the adaptive cooldown and the per-batch, per-minute and graceful-batch limits below are
tide's design (beyond upstream koordlet).

* **Cooldown**, per resource: no new round of a resource on a node before the previous
  round's cooldown has passed (``cooldownPeriod`` × the adaptive factor, counted from each
  batch of the round). Faulty-pod evictions have no cooldown.
* **Adaptive cooldown** (``adaptiveCooldown``): the factor starts at 1. The previous
  round's verification (the pressure at the node's first check at or after its cooldown
  ended, see :mod:`projections.pressure`) sets the next round's factor: back under
  threshold − ``releaseMargin`` → half (floor ¼); still above the threshold → double (cap
  4×); in between → unchanged. After ten configured cooldown periods without a round of
  that resource, the factor is back to 1.
* **Per batch**: at most ``maxEvictionPerBatch`` victims per round (all its graceful
  batches together).
* **Per minute**: at most ``maxEvictionPerMinute`` pressure evictions per node in any
  60 s window, counted across all reasons at their ``evict_at``. CPU and predictive-CPU
  rounds use the CPU limit; memory, OOM-risk, predictive-memory and faulty-pod evictions
  use the memory limit.
* **Graceful batches**: a round's victims go out ``batchSize`` at a time,
  ``batchInterval`` apart (all at once when graceful eviction is off or the interval is 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TypeVar

from controller.policy.pressure.config import EvictionConfig, ResourceEvict
from projections.pressure import RATE_WINDOW, RECOVERED, STILL_HIGH, Cooldown, PressureState
from streams.events import format_time
from streams.payloads import CooldownEvidence

MIN_FACTOR, MAX_FACTOR, QUIET_PERIODS = 0.25, 4.0, 10
T = TypeVar("T")


def next_factor(
    held: Cooldown | None, limits: ResourceEvict, config: EvictionConfig, now: datetime
) -> float:
    """The cooldown factor for a round starting at ``now``."""
    if not config.adaptive_cooldown or held is None:
        return 1.0
    if now - held.until >= QUIET_PERIODS * limits.cooldown:
        return 1.0
    if held.verdict == RECOVERED:
        return max(held.factor / 2, MIN_FACTOR)
    if held.verdict == STILL_HIGH:
        return min(held.factor * 2, MAX_FACTOR)
    return held.factor


def minute_budget(
    state: PressureState, node: str, evict_at: datetime, limit: int, pending: int
) -> int:
    """How many more evictions ``node`` may have at ``evict_at`` (``pending`` just chosen)."""
    return limit - state.evictions_since(node, evict_at - RATE_WINDOW) - pending


def split(victims: Sequence[T], config: EvictionConfig) -> list[list[T]]:
    """The graceful batches of a round."""
    graceful = config.graceful
    if not graceful.enabled or graceful.batch_interval <= timedelta(0):
        return [list(victims)] if victims else []
    size = graceful.batch_size
    return [list(victims[i : i + size]) for i in range(0, len(victims), size)]


def cooldown_evidence(
    *,
    resource: str,
    limits: ResourceEvict,
    factor: float,
    now: datetime,
    capacity: float,
    config: EvictionConfig,
) -> CooldownEvidence:
    """What the projection folds into the node's cooldown (see :mod:`projections.pressure`)."""
    seconds = limits.cooldown.total_seconds() * factor
    return {
        "resource": resource,
        "until": format_time(now + timedelta(seconds=seconds)),
        "seconds": seconds,
        "factor": factor,
        "configured": limits.cooldown.total_seconds(),
        "threshold": limits.evict_threshold,
        "margin": config.release_margin,
        "capacity": capacity,
    }
