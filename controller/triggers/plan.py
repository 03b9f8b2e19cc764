"""Which triggers a configuration asks for, as APScheduler 3.11 trigger objects.

Why APScheduler objects at all when replay runs on a virtual clock: the same trigger
objects then drive both modes. Replay and simulation step them through
:class:`~controller.triggers.cursor.TriggerCursor` with event times; ``tide run`` hands them
to an ``AsyncIOScheduler`` (:mod:`controller.triggers.live`). Both therefore produce the
same ``trigger.fired`` sequence.

The triggers (``kind`` in brackets):

* ``session-tick`` [``tick``]: ``IntervalTrigger`` every ``sessionTick`` (default 1 s) from
  the start, in UTC;
* ``tdm/<zone>/window-start`` [``window-start``]: ``CronTrigger(hour, minute, second=0)``
  in the configured zone;
* ``tdm/<zone>/window-end`` [``window-end``]: ``CronTrigger(hour, minute, second=0)``, at
  the configured end itself: the window is half-open ``[start, end)`` (``21:00`` is closed
  at 21:00:00 sharp; upstream keeps it open through 21:00:00.999, spec §6.2), so the
  session at 21:00:00 sees the zone closed and the first eviction happens at 21:00, as the
  seed's timeline says. Both this trigger and the policy add
  :data:`~controller.plugins.tdm.window.END_INCLUSIVE` (zero) to the end;
* ``tdm/<zone>/evict-period`` [``evict-period``]: ``IntervalTrigger(evict period)``
  anchored at the zone's latest window close (its end) before the start, so that after
  an eviction at the close the next round fires exactly when the zone's timer allows it.
  It fires all day (a session in an open zone decides nothing; the loop writes nothing).
  An interval has one anchor: with a period that does not divide 24 h (or 1 h across a
  DST change) the rounds after later closes drift off the close and may come up to one
  period late (the close itself is always caught by the window-end trigger).

A zone whose window is always open (start == end) gets no triggers. Every trigger gets an
explicit ``timezone=`` and ``start_date=`` and never ``jitter`` (APScheduler would otherwise
read the machine's zone, the wall clock and ``random``; ``ecosystem.md`` §5). Pitfalls pinned
by the tests: a repeated local time (autumn) fires a cron trigger twice; a skipped one
(spring) fires at the pre-transition offset; an evict-period interval is in absolute time,
so its alignment with the window close shifts by the DST offset for half the year.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from controller.framework.config import TideConfig
from controller.plugins.tdm import NAME as TDM_NAME
from controller.plugins.tdm import TdmArgs, Window
from controller.plugins.tdm import parse_args as parse_tdm_args
from controller.plugins.tdm.window import END_INCLUSIVE

TICK = "tick"
WINDOW_START = "window-start"
WINDOW_END = "window-end"
EVICT_PERIOD = "evict-period"
#: tie-break among triggers due at the same instant: closes first, the tick last
KIND_RANK: dict[str, int] = {WINDOW_END: 0, WINDOW_START: 1, EVICT_PERIOD: 2, TICK: 3}
TICK_NAME = "session-tick"
DEFAULT_TICK = timedelta(seconds=1)
_UTC = ZoneInfo("UTC")


@dataclass(frozen=True, slots=True)
class ZoneSchedule:
    """One TDM zone's window and evict period."""

    name: str
    window: Window
    evict_period: timedelta


@dataclass(frozen=True, slots=True)
class TriggerConfig:
    """What the triggers depend on: the session tick, the timezone and the TDM zones."""

    tick: timedelta = DEFAULT_TICK
    timezone: ZoneInfo = _UTC
    zones: tuple[ZoneSchedule, ...] = ()

    @classmethod
    def from_tide(cls, config: TideConfig) -> TriggerConfig:
        """Read ``sessionTick``, ``timezone`` and every ``tdm`` plugin entry's zones."""
        zones: dict[str, ZoneSchedule] = {}
        for tier in config.tiers:
            for conf in tier.plugins:
                if conf.name != TDM_NAME:
                    continue
                args = conf.args if isinstance(conf.args, TdmArgs) else None
                if args is None:
                    args = parse_tdm_args(conf.arguments)
                for zone in args.zones:
                    zones.setdefault(
                        zone.name, ZoneSchedule(zone.name, zone.window, args.evict_period)
                    )
        return cls(
            tick=config.tick,
            timezone=ZoneInfo(config.timezone),
            zones=tuple(zones[name] for name in sorted(zones)),
        )


@dataclass(frozen=True, slots=True)
class TriggerSpec:
    """A named trigger: its kind, its zone (TDM triggers) and the APScheduler object."""

    name: str
    kind: str
    zone: str | None
    trigger: BaseTrigger

    def describe(self) -> dict[str, Any]:
        """For audit / ``config.applied``: name, kind, zone and ``repr`` of the trigger."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "trigger": repr(self.trigger)}
        if self.zone is not None:
            out["zone"] = self.zone
        return out


def last_close(window: Window, tz: ZoneInfo, at: datetime) -> datetime:
    """The latest instant ``<= at`` at which the window closed (its end: ``[start, end)``)."""
    today = at.astimezone(tz).date()
    closes = [
        window.interval_on(today - timedelta(days=back), tz)[1] + END_INCLUSIVE
        for back in (2, 1, 0)
    ]
    return max(close for close in closes if close <= at)


def zone_triggers(zone: ZoneSchedule, tz: ZoneInfo, start: datetime) -> list[TriggerSpec]:
    """Window start, window end and evict period of one zone (none if always open)."""
    window = zone.window
    if window.always:
        return []
    base = f"tdm/{zone.name}"
    opening = CronTrigger(
        hour=window.start.hour, minute=window.start.minute, second=0, timezone=tz, start_date=start
    )
    closing = CronTrigger(
        hour=window.end.hour,
        minute=window.end.minute,
        second=int(END_INCLUSIVE.total_seconds()),
        timezone=tz,
        start_date=start,
    )
    period = IntervalTrigger(
        seconds=zone.evict_period.total_seconds(),
        start_date=last_close(window, tz, start),
        timezone=tz,
    )
    return [
        TriggerSpec(f"{base}/{WINDOW_START}", WINDOW_START, zone.name, opening),
        TriggerSpec(f"{base}/{WINDOW_END}", WINDOW_END, zone.name, closing),
        TriggerSpec(f"{base}/{EVICT_PERIOD}", EVICT_PERIOD, zone.name, period),
    ]


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
        )
    ]
    for zone in config.zones:
        specs.extend(zone_triggers(zone, config.timezone, start))
    return sorted(specs, key=lambda spec: spec.name)


def describe(specs: Iterable[TriggerSpec]) -> list[dict[str, Any]]:
    return [spec.describe() for spec in specs]
