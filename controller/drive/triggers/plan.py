"""Which triggers a configuration asks for, as APScheduler 3.11 trigger objects.

Why APScheduler objects at all when replay runs on a virtual clock: the same trigger
objects then drive both modes. Replay and simulation step them through
:class:`~controller.drive.triggers.cursor.TriggerCursor` with event times; ``tide run`` hands them
to an ``AsyncIOScheduler`` (:mod:`controller.drive.triggers.live`). Both therefore produce the
same ``trigger.fired`` sequence.

The plan is the session tick plus whatever the configured plugins declare: a plugin spec's
``schedules(args, ctx)`` returns :class:`~controller.policy.framework.plugin.Schedule` values
(plain data: policy code may not import a scheduler), and :func:`to_trigger` turns each
into a scheduler object. This module names no plugin (TDM's window boundaries and evict
periods are declared in :mod:`controller.policy.plugins.tdm.schedule`).

* ``session-tick`` [``tick``]: ``IntervalTrigger`` every ``sessionTick`` (default 1 s) from
  the start, in UTC;
* a :class:`~controller.policy.framework.plugin.Cron` → ``CronTrigger(hour, minute, second)`` in
  its zone, from the start;
* an :class:`~controller.policy.framework.plugin.Interval` → ``IntervalTrigger(period)`` in its
  zone, from its anchor before the start (or from the start itself).

Every trigger gets an explicit ``timezone=`` and ``start_date=`` and never ``jitter``
(APScheduler would otherwise read the machine's zone, the wall clock and ``random``).
Pitfalls pinned by the tests: a repeated local time (autumn) fires a cron trigger twice; a
skipped one (spring) fires at the pre-transition offset; an interval is in absolute time,
so its alignment with a wall-clock anchor shifts by the DST offset for half the year.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from controller.policy.builtins import BUILTIN_PLUGINS
from controller.policy.framework.config import TideConfig, plugin_context, plugin_entries
from controller.policy.framework.plugin import (
    TICK_RANK,
    Cron,
    Interval,
    PluginSpec,
    Schedule,
)
from streams.events import JSON

TICK = "tick"
TICK_NAME = "session-tick"
DEFAULT_TICK = timedelta(seconds=1)
_UTC = ZoneInfo("UTC")


@dataclass(frozen=True, slots=True)
class TriggerConfig:
    """What the triggers depend on: the session tick, the timezone and the plugins' schedules."""

    tick: timedelta = DEFAULT_TICK
    timezone: ZoneInfo = _UTC
    schedules: tuple[Schedule, ...] = ()

    @classmethod
    def from_tide(
        cls, config: TideConfig, *, plugins: Mapping[str, PluginSpec] = BUILTIN_PLUGINS
    ) -> TriggerConfig:
        """Read ``sessionTick``, ``timezone`` and the schedules every configured plugin declares.

        Every plugin entry of every tier is asked (a plugin named twice may declare
        different triggers for each entry's arguments); the first declaration of a trigger
        name wins.
        """
        ctx = plugin_context(config)
        schedules: dict[str, Schedule] = {}
        for _, spec, args in plugin_entries(config, plugins):
            if spec.schedules is not None:
                for schedule in spec.schedules(args, ctx):
                    schedules.setdefault(schedule.name, schedule)
        return cls(
            tick=config.tick,
            timezone=ctx.timezone,
            schedules=tuple(schedules[name] for name in sorted(schedules)),
        )


@dataclass(frozen=True, slots=True)
class TriggerSpec:
    """A named trigger: its kind, its zone, the APScheduler object and its tie-break rank."""

    name: str
    kind: str
    zone: str | None
    trigger: BaseTrigger
    rank: int = TICK_RANK

    def describe(self) -> JSON:
        """For audit / ``config.applied``: name, kind, zone and ``repr`` of the trigger."""
        out: JSON = {"name": self.name, "kind": self.kind, "trigger": repr(self.trigger)}
        if self.zone is not None:
            out["zone"] = self.zone
        return out


def to_trigger(when: Cron | Interval, *, start: datetime) -> BaseTrigger:
    """The APScheduler trigger of a declared schedule registered at ``start`` (aware)."""
    if isinstance(when, Cron):
        return CronTrigger(
            hour=when.hour,
            minute=when.minute,
            second=when.second,
            timezone=when.tz,
            start_date=start,
        )
    if when.period <= timedelta(0):
        raise ValueError(f"an interval must be positive, got {when.period}")
    anchor = start.astimezone(when.tz) if when.anchor is None else when.anchor.before(start)
    return IntervalTrigger(seconds=when.period.total_seconds(), start_date=anchor, timezone=when.tz)


def schedule_trigger(schedule: Schedule, *, start: datetime) -> TriggerSpec:
    """The :class:`TriggerSpec` of one declared schedule."""
    trigger = to_trigger(schedule.when, start=start)
    return TriggerSpec(schedule.name, schedule.kind, schedule.zone, trigger, schedule.rank)


def build_triggers(config: TriggerConfig, *, start: datetime) -> list[TriggerSpec]:
    """Every trigger ``config`` asks for, registered at ``start`` (aware), sorted by name."""
    if start.tzinfo is None:
        raise ValueError("triggers need an aware start time")
    if config.tick <= timedelta(0):
        raise ValueError(f"session tick must be positive, got {config.tick}")
    specs = [
        TriggerSpec(
            TICK_NAME,
            TICK,
            None,
            IntervalTrigger(
                seconds=config.tick.total_seconds(), start_date=start.astimezone(UTC), timezone=UTC
            ),
            TICK_RANK,
        )
    ]
    names = {TICK_NAME}
    for schedule in config.schedules:
        if schedule.name in names:
            raise ValueError(f"two triggers are named {schedule.name!r}")
        names.add(schedule.name)
        specs.append(schedule_trigger(schedule, start=start))
    return sorted(specs, key=lambda spec: spec.name)


def describe(specs: Iterable[TriggerSpec]) -> list[JSON]:
    """:meth:`TriggerSpec.describe` of each spec."""
    return [spec.describe() for spec in specs]
