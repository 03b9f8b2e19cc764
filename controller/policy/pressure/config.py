"""The ``eviction:`` part of the tide configuration.

The section is tide's design (beyond upstream koordlet): koordinator-sh/koordinator's
koordlet reads only thresholds, from the NodeSLO CRD ``spec.resourceUsedThresholdWithBE``
(apis/slo/v1alpha1/nodeslo_types.go), and has no per-batch or per-minute limits, no
faulty-pod, predictive or graceful eviction and no eviction taint. Keys are camelCase, as
Koordinator's ConfigMaps write them; tide's defaults::

    eviction:
      enabled: true                       # tide's master switch for pressure eviction
      cpuEvict:       {enabled: true, evictThreshold: 90, cooldownPeriod: 60s,
                       maxEvictionPerBatch: 3, maxEvictionPerMinute: 5}
      memoryEvict:    {enabled: true, evictThreshold: 85, oomRiskThreshold: 90,
                       cooldownPeriod: 120s, maxEvictionPerBatch: 2, maxEvictionPerMinute: 5}
      faultyEvict:    {enabled: true, oomCountThreshold: 3, memoryLeakDuration: 3600s}
      predictiveEvict: {enabled: true, predictionWindow: 600s, advanceEvictThreshold: 90,
                        trendWindow: 600s, targetPercent: 80}
      gracefulEviction: {enabled: true, preStopDelaySeconds: 10, batchSize: 3,
                         batchInterval: 10s, verifyAfterEviction: true}
      schedulingOptimization: {evictionTaint: true, taintDuration: 300s,
                               resourceReservation: true, reservationDuration: 600s}
      pressureStableThreshold: 3
      adaptiveCooldown: true
      releaseMargin: 5

``cooldownPeriod``, ``maxEvictionPerMinute`` and ``maxEvictionPerBatch`` may also be
written at the top level of ``eviction:``; written there they are the defaults of both
``cpuEvict`` and ``memoryEvict`` (a per-resource key wins). Durations are Go durations
(``60s``, ``1m30s``, ``500ms``) or plain numbers of seconds; the intervals that schedule
later work (``cooldownPeriod``, ``batchInterval``, ``taintDuration``,
``reservationDuration``) are 0 or at least 100ms. Thresholds are percentages in
(0, 100]; ``releaseMargin`` must stay below every eviction threshold. An invalid value
raises :class:`~controller.policy.framework.errors.ConfigError` naming the key and value
(``eviction.cpuEvict.evictThreshold: 0: must be in (0, 100]``). Unknown keys are not
errors: they are listed in :attr:`EvictionConfig.warnings` for the caller to print once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from controller.policy.framework.durations import parse_duration as go_duration
from controller.policy.framework.errors import ConfigError
from controller.policy.pressure.koordinator import is_koordinator, translate

_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")


@dataclass(frozen=True, slots=True)
class ResourceEvict:
    """Eviction of one resource (``cpuEvict`` / ``memoryEvict``)."""

    enabled: bool = True
    evict_threshold: float = 90.0
    """Pressure (% of capacity) above which the resource triggers (strictly greater)."""
    cooldown: timedelta = timedelta(seconds=60)
    """No new round of this resource on the node for this long after a round."""
    max_per_batch: int = 3
    """At most this many victims per round."""
    max_per_minute: int = 5
    """At most this many pressure evictions on the node in any 60 s window."""
    oom_risk_threshold: float | None = None
    """Memory only: usage as % of allocatable above which the reason is ``oom-risk``."""


@dataclass(frozen=True, slots=True)
class FaultyEvict:
    enabled: bool = True
    oom_count_threshold: int = 3
    """Evict a pod whose last this-many terminations were all OOMKilled."""
    memory_leak_duration: timedelta = timedelta(seconds=3600)
    """Evict a pod whose memory grew over this long (see ``UsageState`` leak rule)."""


@dataclass(frozen=True, slots=True)
class PredictiveEvict:
    enabled: bool = True
    prediction_window: timedelta = timedelta(seconds=600)
    advance_threshold: float = 90.0
    """Predicted pressure above which BE pods are evicted ahead of time."""
    trend_window: timedelta = timedelta(seconds=600)
    target_percent: float = 80.0
    """Free (predicted - targetPercent) % of capacity."""


@dataclass(frozen=True, slots=True)
class GracefulEviction:
    enabled: bool = True
    pre_stop_delay: timedelta = timedelta(seconds=10)
    """The notice a victim gets before its eviction (``evict_at = at + delay``)."""
    batch_size: int = 3
    batch_interval: timedelta = timedelta(seconds=10)
    verify_after_eviction: bool = True


@dataclass(frozen=True, slots=True)
class SchedulingOptimization:
    eviction_taint: bool = True
    taint_duration: timedelta = timedelta(seconds=300)
    resource_reservation: bool = True
    reservation_duration: timedelta = timedelta(seconds=600)


@dataclass(frozen=True, slots=True)
class EvictionConfig:
    """The whole pressure-eviction configuration, validated."""

    enabled: bool = True
    cpu: ResourceEvict = field(default_factory=ResourceEvict)
    memory: ResourceEvict = field(
        default_factory=lambda: ResourceEvict(
            evict_threshold=85.0,
            cooldown=timedelta(seconds=120),
            max_per_batch=2,
            max_per_minute=5,
            oom_risk_threshold=90.0,
        )
    )
    faulty: FaultyEvict = field(default_factory=FaultyEvict)
    predictive: PredictiveEvict = field(default_factory=PredictiveEvict)
    graceful: GracefulEviction = field(default_factory=GracefulEviction)
    scheduling: SchedulingOptimization = field(default_factory=SchedulingOptimization)
    stable_checks: int = 3
    """``pressureStableThreshold``: checks in a row above the threshold before a round."""
    adaptive_cooldown: bool = True
    release_margin: float = 5.0
    """Rounds free down to (threshold - margin) % of capacity."""
    warnings: tuple[str, ...] = ()

    def resource(self, name: str) -> ResourceEvict:
        """``cpu`` or ``memory``."""
        return self.cpu if name == "cpu" else self.memory

    @property
    def pre_stop_delay(self) -> timedelta:
        """The notice delay in force (zero when graceful eviction is off)."""
        return self.graceful.pre_stop_delay if self.graceful.enabled else timedelta(0)


# ---- parsing ---------------------------------------------------------------------------


#: the longest duration a pressure setting may take (a year): anything longer is a typo
MAX_SECONDS = 366 * 24 * 3600
#: the shortest non-zero interval that schedules later work (a follow-up batch, an
#: untaint, a reservation's end, a cooldown): a microsecond would drive the clock in steps
#: no metrics source can follow
MIN_INTERVAL = timedelta(milliseconds=100)


def parse_duration(value: Any, key: str) -> timedelta:
    """A Go duration (``90s``, ``1m30s``, ``250ms``) or a number of seconds; ≥ 0."""
    if isinstance(value, bool):
        raise ConfigError(key, value, "is not a duration")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            if _NUMBER.fullmatch(text.lstrip("+-")):
                seconds = float(text)
            else:
                seconds = go_duration(text).total_seconds()
        except ValueError:
            raise ConfigError(key, value, 'is not a duration (e.g. "60s", "1m30s")') from None
    else:
        raise ConfigError(key, value, "is not a duration")
    if not math.isfinite(seconds) or seconds > MAX_SECONDS:
        raise ConfigError(key, value, f"must be a finite duration of at most {MAX_SECONDS}s")
    if seconds < 0:
        raise ConfigError(key, value, "must not be negative")
    return timedelta(seconds=seconds)


class _Section:
    """Reads one mapping, remembering which keys were used."""

    def __init__(self, raw: Any, path: str, warnings: list[str]) -> None:
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(path, raw, "must be a mapping")
        self.raw = raw
        self.path = path
        self.warnings = warnings
        self.used: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}"

    def get(self, name: str, default: Any = None) -> Any:
        self.used.add(name)
        return self.raw.get(name, default)

    def has(self, name: str) -> bool:
        return name in self.raw

    def flag(self, name: str, default: bool) -> bool:
        if name == "enabled" and "enable" in self.raw and name not in self.raw:
            name = "enable"  # Koordinator's spelling: an explicit false is never read as on
        value = self.get(name, default)
        if not isinstance(value, bool):
            raise ConfigError(self.key(name), value, "must be true or false")
        return value

    def percent(self, name: str, default: float) -> float:
        value = self.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(self.key(name), value, "must be a number in (0, 100]")
        if not 0 < value <= 100:
            raise ConfigError(self.key(name), value, "must be in (0, 100]")
        if value < 1 and name in self.raw:
            self.warnings.append(
                f"{self.key(name)}: {value} looks like a fraction; thresholds are percentages "
                f"({value} is {value}%, not {value * 100:g}%)"
            )
        return float(value)

    def count(self, name: str, default: int) -> int:
        value = self.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(self.key(name), value, "must be a whole number ≥ 1")
        return value

    def duration(
        self, name: str, default: timedelta, *, positive: bool = False, interval: bool = False
    ) -> timedelta:
        """The duration ``name`` (``interval``: one that schedules later work, so either 0
        or at least :data:`MIN_INTERVAL`, as ``sessionTick`` has a minimum)."""
        if not self.has(name):
            self.used.add(name)
            return default
        value = parse_duration(self.get(name), self.key(name))
        if positive and value <= timedelta(0):
            raise ConfigError(self.key(name), self.raw[name], "must be positive")
        if interval and timedelta(0) < value < MIN_INTERVAL:
            least = MIN_INTERVAL.total_seconds()
            raise ConfigError(self.key(name), self.raw[name], f"must be 0 or at least {least}s")
        return value

    def finish(self) -> None:
        for name in sorted(str(k) for k in self.raw):
            if name not in self.used:
                self.warnings.append(f"{self.key(name)}: unknown key, ignored")


def _resource(
    top: _Section, name: str, default: ResourceEvict, warnings: list[str]
) -> ResourceEvict:
    section = _Section(top.get(name), top.key(name), warnings)
    for key in _SHARED:  # written at the top level: defaults for both resources
        value = top.get(key)
        if value is not None and not section.has(key):
            section.raw = {**section.raw, key: value}
    oom_risk = default.oom_risk_threshold
    if oom_risk is not None:
        oom_risk = section.percent("oomRiskThreshold", oom_risk)
    parsed = ResourceEvict(
        enabled=section.flag("enabled", default.enabled),
        evict_threshold=section.percent("evictThreshold", default.evict_threshold),
        cooldown=section.duration("cooldownPeriod", default.cooldown, interval=True),
        max_per_batch=section.count("maxEvictionPerBatch", default.max_per_batch),
        max_per_minute=section.count("maxEvictionPerMinute", default.max_per_minute),
        oom_risk_threshold=oom_risk,
    )
    section.finish()
    return parsed


_SHARED = ("cooldownPeriod", "maxEvictionPerBatch", "maxEvictionPerMinute")


#: the keys of ``eviction:`` itself
KNOWN_KEYS = frozenset(
    {
        "enabled",
        "enable",
        "cpuEvict",
        "memoryEvict",
        "faultyEvict",
        "predictiveEvict",
        "gracefulEviction",
        "schedulingOptimization",
        "pressureStableThreshold",
        "adaptiveCooldown",
        "releaseMargin",
        *_SHARED,
    }
)


def parse_eviction_config(raw: Mapping[str, Any] | None, path: str = "eviction") -> EvictionConfig:
    """Validate the ``eviction:`` mapping; raises ``ConfigError`` naming the key.

    Koordinator's own shapes are translated first (:mod:`controller.policy.pressure.koordinator`);
    a non-empty section with no key tide knows is an error, not every eviction at its
    defaults.
    """
    warnings: list[str] = []
    if isinstance(raw, Mapping) and raw and is_koordinator(raw):
        raw, notes = translate(raw, path)
        warnings.extend(notes)
    elif isinstance(raw, Mapping) and raw and KNOWN_KEYS.isdisjoint(str(k) for k in raw):
        raise ConfigError(
            path,
            ", ".join(sorted(str(k) for k in raw)),
            "no key tide knows (expected cpuEvict, memoryEvict, faultyEvict, predictiveEvict, "
            "gracefulEviction, schedulingOptimization, ...)",
        )
    top = _Section(raw, path, warnings)
    base = EvictionConfig()
    cpu = _resource(top, "cpuEvict", base.cpu, warnings)
    memory = _resource(top, "memoryEvict", base.memory, warnings)

    faulty_s = _Section(top.get("faultyEvict"), top.key("faultyEvict"), warnings)
    faulty = FaultyEvict(
        enabled=faulty_s.flag("enabled", True),
        oom_count_threshold=faulty_s.count("oomCountThreshold", 3),
        memory_leak_duration=faulty_s.duration(
            "memoryLeakDuration", base.faulty.memory_leak_duration, positive=True
        ),
    )
    pred_s = _Section(top.get("predictiveEvict"), top.key("predictiveEvict"), warnings)
    predictive = PredictiveEvict(
        enabled=pred_s.flag("enabled", True),
        prediction_window=pred_s.duration(
            "predictionWindow", base.predictive.prediction_window, positive=True
        ),
        advance_threshold=pred_s.percent("advanceEvictThreshold", 90.0),
        trend_window=pred_s.duration("trendWindow", base.predictive.trend_window, positive=True),
        target_percent=pred_s.percent("targetPercent", 80.0),
    )
    if predictive.target_percent >= predictive.advance_threshold:
        raise ConfigError(
            pred_s.key("targetPercent"),
            predictive.target_percent,
            "must be below advanceEvictThreshold",
        )
    grace_s = _Section(top.get("gracefulEviction"), top.key("gracefulEviction"), warnings)
    graceful = GracefulEviction(
        enabled=grace_s.flag("enabled", True),
        pre_stop_delay=grace_s.duration("preStopDelaySeconds", base.graceful.pre_stop_delay),
        batch_size=grace_s.count("batchSize", 3),
        batch_interval=grace_s.duration(
            "batchInterval", base.graceful.batch_interval, interval=True
        ),
        verify_after_eviction=grace_s.flag("verifyAfterEviction", True),
    )
    sched_s = _Section(
        top.get("schedulingOptimization"), top.key("schedulingOptimization"), warnings
    )
    scheduling = SchedulingOptimization(
        eviction_taint=sched_s.flag("evictionTaint", True),
        taint_duration=sched_s.duration(
            "taintDuration", base.scheduling.taint_duration, interval=True
        ),
        resource_reservation=sched_s.flag("resourceReservation", True),
        reservation_duration=sched_s.duration(
            "reservationDuration", base.scheduling.reservation_duration, interval=True
        ),
    )
    margin = top.get("releaseMargin", 5)
    if isinstance(margin, bool) or not isinstance(margin, int | float) or not 0 <= margin < 100:
        raise ConfigError(top.key("releaseMargin"), margin, "must be a number in [0, 100)")
    for section_name, res in (("cpuEvict", cpu), ("memoryEvict", memory)):
        if margin >= res.evict_threshold:
            raise ConfigError(
                top.key("releaseMargin"),
                margin,
                f"must be below {path}.{section_name}.evictThreshold ({res.evict_threshold:g})"
                + (
                    f"; {res.evict_threshold:g} looks like a fraction: thresholds are "
                    f"percentages (write {res.evict_threshold * 100:g}, "
                    f"not {res.evict_threshold:g})"
                    if res.evict_threshold < 1
                    else ""
                ),
            )
    config = EvictionConfig(
        enabled=top.flag("enabled", True),
        cpu=cpu,
        memory=memory,
        faulty=faulty,
        predictive=predictive,
        graceful=graceful,
        scheduling=scheduling,
        stable_checks=top.count("pressureStableThreshold", 3),
        adaptive_cooldown=top.flag("adaptiveCooldown", True),
        release_margin=float(margin),
        warnings=(),
    )
    for section in (faulty_s, pred_s, grace_s, sched_s, top):
        section.finish()
    return replace(config, warnings=tuple(warnings))
