"""One pressure check: a ``metrics.node`` sample in, eviction and taint decisions out.

:func:`check_node` runs for every ``metrics.node`` record once it is folded into the World.
The sample is the check: decisions have ``cause`` = the sample's id and ``at`` = its ``at``.
In one check, in this order:

1. **faulty pods** (``faulty-oom``, ``faulty-memory-leak``; :mod:`.faulty`);
2. **memory**: ``oom-risk`` when the last ``pressureStableThreshold`` checks all had
   memory usage above ``oomRiskThreshold`` % of allocatable, else ``memory-pressure`` when
   they all had memory pressure above ``evictThreshold`` (strictly greater, both);
3. **cpu**: ``cpu-pressure`` likewise;
4. **predictive** (memory, then cpu; :mod:`.predictive`) for a resource with no round in
   this check, reason ``predicted-pressure``.

A resource round frees usage − (evictThreshold − releaseMargin) % of capacity (an
``oom-risk`` round at least usage − (oomRiskThreshold − releaseMargin) % of allocatable,
so that a node whose allocatable is well below its capacity gets out of OOM risk too),
or (predicted − targetPercent) % for a predictive round; victims chosen earlier in the
same check and pods already terminating count as freed (:mod:`.candidates`). A resource
in cooldown starts no round (:mod:`.ratecontrol`). Victims planned for a later batch of a
pending round are not candidates of another round. The first eviction on an untainted
node is preceded by the node's eviction taint (``schedulingOptimization.evictionTaint``).

Documented choices: stability applies to OOM risk as to pressure (each check is one sample; the
"``pressureStableThreshold`` checks" rule holds for every trigger); a round that finds nothing to
evict (no BE pod, or terminating pods already cover the target) records nothing and starts no
cooldown; a NotReady node is not checked (the eviction API cannot reach its pods' kubelet).

Stale samples (behaviour level 4, :data:`~projections.behaviour.STALE_METRICS`): a sample
older than three resolutions when recorded (:mod:`projections.usage_fresh`) is no
evidence. Its check decides nothing (no faulty, reactive or predictive round: the node's
numbers are of the past), and the streak of a later check is made of the last
``pressureStableThreshold`` fresh points, the stale ones in between named in the
evidence (``stale_skipped``, their times). The predictive trend still reads every point of
its window (a frozen value flattens a trend; it does not start one).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from controller.policy.pressure.candidates import (
    Candidate,
    protected,
    ranked,
    take,
    terminating_usage,
)
from controller.policy.pressure.config import EvictionConfig, ResourceEvict
from controller.policy.pressure.decisions import (
    evict_event,
    taint_event,
    taint_start,
    victim_evidence,
)
from controller.policy.pressure.faulty import faulty_pods, leak_check_due
from controller.policy.pressure.inputs import NodeNumbers, node_numbers
from controller.policy.pressure.predictive import amount_to_free, stable_prediction
from controller.policy.pressure.ratecontrol import (
    cooldown_evidence,
    minute_budget,
    next_factor,
    split,
)
from projections.behaviour import STALE_METRICS
from projections.model import NodeInfo, TaskInfo
from projections.oom import OOMState
from projections.pressure import RATE_WINDOW, PressureState
from projections.usage import Series, UsageState, from_seconds, to_seconds
from projections.world import PolicyInputs
from streams.events import Event, format_time
from streams.payloads import EvidenceDict, as_node_sample


def check_node(world: PolicyInputs, sample: Event, config: EvictionConfig) -> list[Event]:
    """The decisions one ``metrics.node`` sample causes (see the module docstring)."""
    if not config.enabled:
        return []
    # the payload typed without a call per sample (a TypedDict is the dict itself)
    if TYPE_CHECKING:
        data = as_node_sample(sample)
    else:
        data = sample.data
    name = (data.get("metadata") or {}).get("name")
    node = world.cluster.nodes.get(name) if isinstance(name, str) else None
    if node is None or node.placeholder or not node.ready:
        return []
    usage = world.usage
    series = usage.nodes.get(node.name)
    numbers = node_numbers(node, series) if series is not None else None
    if series is None or numbers is None:
        return []
    rules = getattr(world.cluster, "rules", None)
    skips_stale = rules is not None and rules.has(STALE_METRICS)
    if skips_stale and _recorded_stale(usage, node.name, sample):
        return []  # a value of the past is no evidence: nothing is decided on it
    check = _Check(
        world,
        state=world.pressure,
        usage=usage,
        oom=world.oom,
        node=node,
        numbers=numbers,
        series=series,
        sample=sample,
        config=config,
        stale=usage.stale_points(node.name) if skips_stale else (),
    )
    if config.faulty.enabled:
        check.faulty()
    if config.memory.enabled:
        check.memory()
    if config.cpu.enabled:
        check.cpu()
    if config.predictive.enabled:
        check.predictive()
    return check.finish()


class _Check:
    """The state of one check while its rounds are decided."""

    # one is built per metrics.node sample: slots make its many attributes cheaper to set
    __slots__ = (
        "_planned",
        "cause",
        "config",
        "events",
        "evict_at",
        "node",
        "now",
        "numbers",
        "oom",
        "rounds",
        "series",
        "stale",
        "state",
        "taken",
        "usage",
        "world",
    )

    def __init__(
        self,
        world: PolicyInputs,
        *,
        state: PressureState,
        usage: UsageState,
        oom: OOMState,
        node: NodeInfo,
        numbers: NodeNumbers,
        series: Series,
        sample: Event,
        config: EvictionConfig,
        stale: Sequence[float] = (),
    ) -> None:
        self.world, self.state, self.usage, self.oom = world, state, usage, oom
        #: ``at`` of the series' points that are no evidence (stale when recorded)
        self.stale = stale
        self.node = node
        self.numbers, self.series, self.config = numbers, series, config
        self.now: datetime = sample.at
        self.cause = sample.id
        self.evict_at = sample.at + config.pre_stop_delay
        self.events: list[Event] = []
        self.taken: list[TaskInfo] = []
        self.rounds: set[str] = set()
        self._planned: set[str] | None = None

    # ---- helpers ---------------------------------------------------------------------

    def excluded(self) -> set[str]:
        if self._planned is None:
            self._planned = self.state.planned(self.node.name)
        return self._planned | {t.key for t in self.taken}

    def streak(
        self, resource: str, threshold: float, *, of_allocatable: bool = False
    ) -> list[float] | None:
        """The last ``stable_checks`` pressures if all are above ``threshold``, else None."""
        n = self.config.stable_checks
        values = self.series.cpu if resource == "cpu" else self.series.memory
        if self.stale:
            values = self._fresh_tail(values, n)
        if len(values) < n:
            return None
        cap = self.numbers.alloc_memory if of_allocatable else self.numbers.capacity(resource)
        streak = [100.0 * v / cap for v in values[-n:]]
        if all(p > threshold for p in streak):
            return [round(p, 3) for p in streak]
        return None

    def _fresh_tail(self, values: list[float], n: int) -> list[float]:
        """The last ``n`` values (fewer when the series is shorter) of the points that are
        evidence, oldest first, skipping those in :attr:`stale`."""
        times, stale = self.series.times, set(self.stale)
        picked: list[float] = []
        for i in range(len(times) - 1, -1, -1):
            if times[i] not in stale:
                picked.append(values[i])
                if len(picked) == n:
                    break
        picked.reverse()
        return picked

    def skipped(self, evidence: EvidenceDict) -> EvidenceDict:
        """``evidence`` naming the stale points the streak passed over (when any did)."""
        n, times, stale = self.config.stable_checks, self.series.times, set(self.stale)
        if not stale:
            return evidence
        passed: list[str] = []
        fresh = 0
        for i in range(len(times) - 1, -1, -1):
            if times[i] in stale:
                passed.append(format_time(from_seconds(times[i])))
            else:
                fresh += 1
                if fresh == n:
                    break
        if not passed:
            return evidence
        passed.reverse()
        return {**evidence, "stale_skipped": passed}

    def emit(self, candidate: Candidate, reason: str, evidence: EvidenceDict) -> None:
        usage = self.usage
        key = candidate.key
        extra = victim_evidence(
            self.world,
            candidate,
            cpu=usage.pod_cpu(key),
            memory=usage.pod_memory(key),
            at=self.now,
            evict_at=self.evict_at,
            config=self.config,
        )
        self.events.append(
            evict_event(
                candidate,
                node=self.node.name,
                reason=reason,
                at=self.now,
                evict_at=self.evict_at,
                cause=self.cause,
                evidence={**evidence, **extra},
            )
        )
        self.taken.append(candidate.task)

    # ---- the rules -------------------------------------------------------------------

    def faulty(self) -> None:
        if not self.oom.streaking.get(self.node.name) and not leak_check_due(self.series):
            return  # the cheap answer for almost every check
        found = faulty_pods(
            self.world,
            self.node,
            self.series,
            self.now,
            self.state,
            self.config,
            exclude=self.excluded,
        )
        if not found:
            return
        limits = self.config.memory
        in_window = self.state.evictions_since(self.node.name, self.evict_at - RATE_WINDOW)
        budget = min(
            limits.max_per_batch,
            minute_budget(
                self.state, self.node.name, self.evict_at, limits.max_per_minute, len(self.events)
            ),
        )
        chosen = found[: max(budget, 0)]
        plan = [f.candidate.key for f in chosen]
        for item in chosen:
            evidence = {
                **item.evidence,
                "found": [f.candidate.key for f in found],
                "limits": _limits(limits, in_window),
                "round": {
                    "id": f"{self.cause}/faulty",
                    "resource": "faulty",
                    "batch": 0,
                    "plan": plan,
                    "next_at": None,
                },
            }
            self.emit(item.candidate, item.reason, evidence)

    def memory(self) -> None:
        limits = self.config.memory
        numbers = self.numbers
        risk_threshold = limits.oom_risk_threshold
        if risk_threshold is not None and numbers.oom_risk > risk_threshold:
            streak = self.streak("memory", risk_threshold, of_allocatable=True)
            if streak is not None:
                evidence = {
                    "pressure": round(numbers.oom_risk, 3),
                    "threshold": risk_threshold,
                    "memory_pressure": round(numbers.pressure("memory"), 3),
                    "allocatable": numbers.alloc_memory,
                    "streak": streak,
                }
                self.reactive("memory", "oom-risk", self.skipped(evidence))
                return
        if numbers.pressure("memory") > limits.evict_threshold:
            streak = self.streak("memory", limits.evict_threshold)
            if streak is not None:
                evidence = {
                    "pressure": round(numbers.pressure("memory"), 3),
                    "threshold": limits.evict_threshold,
                    "streak": streak,
                }
                self.reactive("memory", "memory-pressure", self.skipped(evidence))

    def cpu(self) -> None:
        threshold = self.config.cpu.evict_threshold
        if self.numbers.pressure("cpu") > threshold:
            streak = self.streak("cpu", threshold)
            if streak is not None:
                evidence = {
                    "pressure": round(self.numbers.pressure("cpu"), 3),
                    "threshold": threshold,
                    "streak": streak,
                }
                self.reactive("cpu", "cpu-pressure", self.skipped(evidence))

    def reactive(self, resource: str, reason: str, evidence: EvidenceDict) -> None:
        limits = self.config.resource(resource)
        margin = self.config.release_margin
        level = limits.evict_threshold - margin
        capacity = self.numbers.capacity(resource)
        need = self.numbers.used(resource) - level * capacity / 100.0
        if reason == "oom-risk" and limits.oom_risk_threshold is not None:
            # also back under the risk threshold - margin of allocatable (a node with a
            # small allocatable can be at OOM risk with memory pressure below the level)
            risk_level = limits.oom_risk_threshold - margin
            need = max(need, self.numbers.memory - risk_level * self.numbers.alloc_memory / 100)
        self.start_round(resource, reason, need, {**evidence, "level": level})

    def predictive(self) -> None:
        for resource in ("memory", "cpu"):
            if resource in self.rounds or not self.config.resource(resource).enabled:
                continue
            if self.state.cooling(self.node.name, resource, self.now):
                continue
            capacity = self.numbers.capacity(resource)
            prediction = stable_prediction(self.series, capacity, resource, self.config)
            if prediction is None:
                continue
            need = amount_to_free(prediction, capacity, self.config)
            evidence = {
                "pressure": round(prediction.current, 3),
                "threshold": self.config.predictive.advance_threshold,
                "level": self.config.predictive.target_percent,
                "prediction": prediction.evidence(self.config),
            }
            self.start_round(resource, "predicted-pressure", need, evidence)

    def start_round(self, resource: str, reason: str, need: float, evidence: EvidenceDict) -> None:
        """Choose a round's victims and decide its first batch."""
        node, state, config = self.node.name, self.state, self.config
        limits = config.resource(resource)
        if need <= 0 or state.cooling(node, resource, self.now):
            return
        freed_before = terminating_usage(self.world, self.node, resource, self.taken)
        if freed_before >= need:
            return
        in_window = state.evictions_since(node, self.evict_at - RATE_WINDOW)
        budget = min(
            limits.max_per_batch,
            minute_budget(state, node, self.evict_at, limits.max_per_minute, len(self.events)),
        )
        if budget <= 0:
            return
        candidates = ranked(self.world, self.node, resource, state, exclude=self.excluded())
        victims, freed = take(candidates, need=need, freed=freed_before, limit=budget)
        if not victims:
            return
        self.rounds.add(resource)
        batches = split(victims, config)
        next_at = (
            format_time(self.now + config.graceful.batch_interval) if len(batches) > 1 else None
        )
        factor = next_factor(state.cooldown(node, resource), limits, config, self.now)
        capacity = self.numbers.capacity(resource)
        common = {
            **evidence,
            "resource": resource,
            "usage": self.numbers.used(resource),
            "capacity": capacity,
            "release_margin": config.release_margin,
            "target": need,
            "freed_before": freed_before,
            "freed": freed,
            "order": [c.key for c in candidates],
            "limits": _limits(limits, in_window),
            "round": {
                "id": f"{self.cause}/{resource}",
                "resource": resource,
                "batch": 0,
                "batches": len(batches),
                "plan": [c.key for c in victims],
                "next_at": next_at,
            },
            "cooldown": cooldown_evidence(
                resource=resource,
                limits=limits,
                factor=factor,
                now=self.now,
                capacity=capacity,
                config=config,
            ),
        }
        shielded = protected(self.node)
        if shielded:  # DaemonSet and mirror pods the round left alone
            common["protected"] = shielded
        for candidate in batches[0]:
            self.emit(candidate, reason, common)

    def finish(self) -> list[Event]:
        if not self.events:
            return []
        scheduling = self.config.scheduling
        if not scheduling.eviction_taint or self.state.active_taint(self.node.name):
            return self.events
        taint = taint_event(
            node=self.node.name,
            at=self.now,
            until=taint_start(self.world, at=self.now, evict_at=self.evict_at)
            + scheduling.taint_duration,
            cause=self.cause,
            evictions=[t.key for t in self.taken],
        )
        return [taint, *self.events]


def _recorded_stale(usage: UsageState, node: str, sample: Event) -> bool:
    """Whether ``sample`` (folded already) was stale when recorded: the fold noted its
    ``at`` among the node's stale points (:attr:`UsageState.node_stale`)."""
    stale = usage.stale_points(node)
    return bool(stale) and to_seconds(sample.at) in stale


def _limits(limits: ResourceEvict, in_window: int) -> EvidenceDict:
    return {
        "max_per_batch": limits.max_per_batch,
        "max_per_minute": limits.max_per_minute,
        "in_window": in_window,
    }
