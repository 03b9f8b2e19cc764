"""Pressure follow-ups: later graceful batches and taint removal, as ``trigger.fired`` kinds.

The loop asks :func:`due_followups` for the moments it must fire (derived from the
pressure projection only) and passes each firing to :func:`on_trigger`:

* ``eviction-batch``: the next batch of every pending round due by the trigger's time.
  Before each later batch the latest pressure is checked; with ``verifyAfterEviction`` the
  rest of the round is dropped once the effective pressure (usage minus what terminating
  pods, earlier victims included, will free) is back to threshold − ``releaseMargin`` or
  below (to ``targetPercent`` for a predictive round, or its prediction no longer rises
  above ``advanceEvictThreshold``). The batch takes the round's planned victims that are
  still evictable, in plan order, at most ``batchSize`` and within the per-minute limit,
  stopping once the target is met. A batch that evicts nobody ends the round. From
  behaviour level 4 (:data:`~projections.behaviour.STALE_METRICS`) no batch is decided
  while the node's newest sample is stale at the trigger's time (older than three
  resolutions, :mod:`projections.usage_fresh`): a frozen value is no evidence, and the
  rest of the round is dropped as when pressure is back.
* ``untaint``: every eviction taint whose ``taintDuration`` has passed (counted from the
  last eviction's ``evict_at``) is removed.

Follow-ups due at the same time are merged into one firing (``data.nodes`` lists the
nodes); a firing handles everything due by its time, so a loop that fires each distinct
``(time, kind)`` once loses nothing. A batch whose time has passed on the log (a later
record was folded) without its trigger is not offered any more: the round lapsed. An
overdue untaint is offered at the log's current time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from controller.policy.pressure.candidates import Candidate, evictable, take, terminating_usage
from controller.policy.pressure.config import EvictionConfig
from controller.policy.pressure.decisions import (
    evict_event,
    taint_event,
    taint_start,
    untaint_event,
    victim_evidence,
)
from controller.policy.pressure.inputs import node_numbers, started, usage_value
from controller.policy.pressure.predictive import amount_to_free, predict_at
from controller.policy.pressure.ratecontrol import cooldown_evidence, minute_budget
from projections.behaviour import STALE_METRICS
from projections.pressure import BATCH_KIND, RATE_WINDOW, UNTAINT_KIND, Round
from projections.world import PolicyInputs
from streams.events import Event, format_time
from streams.payloads import (
    EvidenceDict,
    FollowupData,
    LimitsEvidence,
    RoundEvidence,
    TriggerKind,
    as_trigger,
)

PRESSURE_TRIGGER_KINDS = frozenset({BATCH_KIND, UNTAINT_KIND})


class Followup(NamedTuple):
    """A follow-up to fire: at ``at``, a ``trigger.fired`` of ``kind`` (also its name)
    whose payload adds ``data`` (the nodes it is due on)."""

    at: datetime
    kind: TriggerKind
    data: FollowupData


def pending_followups(world: PolicyInputs) -> list[Followup]:
    """Every follow-up still to fire, in time order (then kind)."""
    state = world.pressure
    due: dict[tuple[datetime, TriggerKind], set[str]] = {}
    for held in state.pending_rounds():
        if held.next_due is not None:
            due.setdefault((held.next_due, BATCH_KIND), set()).add(held.node)
    clock = state.clock
    for node, taint in state.taints.items():
        when = taint.until if clock is None or taint.until >= clock else clock
        due.setdefault((when, UNTAINT_KIND), set()).add(node)
    return [
        Followup(when, kind, {"nodes": sorted(due[(when, kind)])}) for when, kind in sorted(due)
    ]


class FollowupCache:
    """:func:`pending_followups` of a world, recomputed only when its answer may differ.

    The answer depends on the pressure projection's rounds and taints (which bump its
    ``changes`` counter whenever they may change) and on its clock only through
    comparisons with the follow-ups' own times: a batch is offered while its time is not
    past, an untaint at its time or, once overdue, at the clock. So the answer computed
    at clock ``c`` holds at any later clock up to its earliest follow-up's time (``c``
    itself when an untaint is overdue). The loop asks at every step; this answers in O(1)
    while nothing changed.
    """

    __slots__ = ("_changes", "_clock", "_followups", "_state", "_until")

    def __init__(self) -> None:
        self._state: object = None
        self._changes = -1
        self._clock: datetime | None = None
        self._until: datetime | None = None  # the answer holds for clocks up to here
        self._followups: list[Followup] = []

    def get(self, world: PolicyInputs) -> list[Followup]:
        """The same list as ``pending_followups(world)`` (do not change it)."""
        state = world.pressure
        clock = state.clock
        if state is self._state and state.changes == self._changes:
            held, until = self._clock, self._until
            if clock == held:
                return self._followups
            if (
                clock is not None
                and held is not None
                and until is not None
                and held <= clock <= until
            ):
                return self._followups
        followups = pending_followups(world)
        self._state, self._changes, self._clock = state, state.changes, clock
        if clock is None:
            self._until = None
        else:  # an overdue untaint is offered at the clock: then the answer holds there only
            self._until = followups[0].at if followups else datetime.max.replace(tzinfo=UTC)
        self._followups = followups
        return followups


def due_followups(
    world: PolicyInputs, config: EvictionConfig | None = None
) -> list[tuple[datetime, str, FollowupData]]:
    """``(when, kind, data)`` of every follow-up still to fire, in time order.

    The untyped shape of :func:`pending_followups`, for callers that splice ``data`` into
    a trigger payload themselves.
    """
    return [(f.at, f.kind, f.data.copy()) for f in pending_followups(world)]


def on_trigger(world: PolicyInputs, trigger: Event, config: EvictionConfig) -> list[Event]:
    """The decisions a pressure follow-up firing causes (``cause`` = the trigger)."""
    kind = as_trigger(trigger).get("kind")
    if kind == UNTAINT_KIND:
        return _untaint(world, trigger)
    if kind == BATCH_KIND:
        return _Batches(world, trigger, config).run()
    return []


def _untaint(world: PolicyInputs, trigger: Event) -> list[Event]:
    state = world.pressure
    return [
        untaint_event(
            node=node, at=trigger.at, since=taint.since, until=taint.until, cause=trigger.id
        )
        for node, taint in sorted(state.taints.items())
        if taint.until <= trigger.at
    ]


class _Batches:
    """The later batches one ``eviction-batch`` firing decides."""

    def __init__(self, world: PolicyInputs, trigger: Event, config: EvictionConfig) -> None:
        self.world, self.config = world, config
        self.state = world.pressure
        self.now = trigger.at
        self.cause = trigger.id
        self.evict_at = trigger.at + config.pre_stop_delay
        self.events: list[Event] = []
        self.per_node: dict[str, list[str]] = {}
        self.tainted: set[str] = set()

    def run(self) -> list[Event]:
        for held in self.state.pending_rounds():
            if held.next_due is not None and held.next_due <= self.now:
                self.batch(held)
        return self.events

    def batch(self, held: Round) -> None:
        world, config, state = self.world, self.config, self.state
        node = world.cluster.nodes.get(held.node)
        series = world.usage.nodes.get(held.node)
        numbers = node_numbers(node, series) if node and series else None
        if node is None or series is None or numbers is None:
            return
        rules = getattr(world.cluster, "rules", None)
        stale = rules is not None and rules.has(STALE_METRICS)
        if stale and world.usage.stale_node(held.node, self.now) is not None:
            return  # the newest sample is of the past: no batch is decided on it
        resource, limits = held.resource, config.resource(held.resource)
        usage, oom = world.usage, world.oom
        taken = self.per_node.setdefault(held.node, [])
        candidates = [
            Candidate(task, usage_value(usage, key, resource), started(task), oom.kills(key))
            for key in held.remaining()
            if (task := node.tasks.get(key)) is not None
            and key not in taken
            and evictable(task, held.node, state)
        ]
        if not candidates:
            return
        capacity = numbers.capacity(resource)
        pressure = numbers.pressure(resource)
        if held.reason == "predicted-pressure":
            prediction = predict_at(series, len(series.times) - 1, capacity, resource, config)
            advance = config.predictive.advance_threshold
            still = prediction is not None and prediction.rising
            still = still and prediction is not None and prediction.predicted > advance
            need = amount_to_free(prediction, capacity, config) if prediction else 0.0
            level, threshold = config.predictive.target_percent, advance
        else:
            level = limits.evict_threshold - config.release_margin
            need = numbers.used(resource) - level * capacity / 100.0
            still, threshold = True, limits.evict_threshold
        also = [t for k in taken if (t := node.tasks.get(k)) is not None]
        freed_before = terminating_usage(world, node, resource, also)
        verify = config.graceful.verify_after_eviction
        if verify and (not still or need - freed_before <= 0):
            return  # pressure is back: the rest of the round is dropped
        in_window = state.evictions_since(held.node, self.evict_at - RATE_WINDOW)
        budget = min(
            config.graceful.batch_size,
            limits.max_per_batch - len(held.done),
            minute_budget(state, held.node, self.evict_at, limits.max_per_minute, len(taken)),
        )
        if budget <= 0:
            return
        if verify:
            victims, freed = take(candidates, need=need, freed=freed_before, limit=budget)
        else:
            victims = candidates[:budget]
            freed = freed_before + sum(c.usage for c in victims)
        more = len(candidates) > len(victims) and (not verify or freed < need)
        held_cooldown = state.cooldown(held.node, resource)
        rate_limits: LimitsEvidence = {
            "max_per_batch": limits.max_per_batch,
            "max_per_minute": limits.max_per_minute,
            "in_window": in_window,
        }
        round_evidence: RoundEvidence = {
            "id": held.id,
            "resource": resource,
            "batch": held.batch + 1,
            "plan": held.plan,
            "next_at": format_time(self.now + config.graceful.batch_interval) if more else None,
        }
        evidence: EvidenceDict = {
            "pressure": round(pressure, 3),
            "threshold": threshold,
            "level": level,
            "resource": resource,
            "usage": numbers.used(resource),
            "capacity": capacity,
            "release_margin": config.release_margin,
            "target": need,
            "freed_before": freed_before,
            "freed": freed,
            "verified": verify,
            "limits": rate_limits,
            "round": round_evidence,
            "cooldown": cooldown_evidence(
                resource=resource,
                limits=limits,
                factor=held_cooldown.factor if held_cooldown else 1.0,
                now=self.now,
                capacity=capacity,
                config=config,
            ),
        }
        if config.scheduling.eviction_taint and held.node not in self.tainted:
            self.tainted.add(held.node)
            if state.active_taint(held.node) is None:
                self.events.append(
                    taint_event(
                        node=held.node,
                        at=self.now,
                        until=taint_start(world, at=self.now, evict_at=self.evict_at)
                        + config.scheduling.taint_duration,
                        cause=self.cause,
                        evictions=[c.key for c in victims],
                    )
                )
        for candidate in victims:
            key = candidate.key
            extra = victim_evidence(
                world,
                candidate,
                cpu=usage.pod_cpu(key),
                memory=usage.pod_memory(key),
                at=self.now,
                evict_at=self.evict_at,
                config=config,
            )
            self.events.append(
                evict_event(
                    candidate,
                    node=held.node,
                    reason=held.reason,
                    at=self.now,
                    evict_at=self.evict_at,
                    cause=self.cause,
                    evidence={**evidence, **extra},
                )
            )
            taken.append(key)
