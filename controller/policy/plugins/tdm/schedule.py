"""When TDM wants a session: its zones' window boundaries and evict periods, as data.

The plugin declares these triggers; ``controller.drive.triggers.plan`` turns every enabled
plugin's declarations into scheduler objects without naming any plugin. Per zone
(``kind`` in brackets):

* ``tdm/<zone>/window-start`` [``window-start``]: daily at the window's start, second 0, in
  the configured zone;
* ``tdm/<zone>/window-end`` [``window-end``]: daily at the window's end itself. The window
  is half-open ``[start, end)``: ``21:00`` is closed at 21:00:00 sharp (upstream keeps it
  open through 21:00:00.999, because volcano-sh/volcano pkg/scheduler/plugins/tdm/tdm.go,
  ``availableRevocableZone``, compares whole Unix seconds), so the session at 21:00:00
  sees the zone closed and the first eviction happens at the configured close. Both this
  trigger and the policy add :data:`~controller.policy.plugins.tdm.window.END_INCLUSIVE` (zero);
* ``tdm/<zone>/evict-period`` [``evict-period``]: every evict period, anchored at the
  zone's latest window close before registration (:func:`last_close`), so that after an
  eviction at the close the next round fires exactly when the zone's timer allows it. It
  fires all day (a session in an open zone decides nothing; the loop writes nothing). An
  interval has one anchor: with a period that does not divide 24 h (or 1 h across a DST
  change) the rounds after later closes drift off the close and may come up to one period
  late (the close itself is always caught by the window-end trigger).

A zone whose window is always open (start == end) needs no triggers. Several ``tdm``
entries may name the same zone: the plan keeps the first declaration of a trigger name.
Ties at one instant: closes first, then opens, then evict periods (then the tick).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from controller.policy.framework.plugin import Cron, Interval, PluginContext, Schedule
from controller.policy.plugins.tdm.args import TdmArgs
from controller.policy.plugins.tdm.window import END_INCLUSIVE, Window

WINDOW_START = "window-start"
WINDOW_END = "window-end"
EVICT_PERIOD_KIND = "evict-period"
#: tie-break among TDM triggers due at the same instant: closes first
RANKS: dict[str, int] = {WINDOW_END: 0, WINDOW_START: 1, EVICT_PERIOD_KIND: 2}


def last_close(window: Window, tz: ZoneInfo, at: datetime) -> datetime:
    """The latest instant ``<= at`` at which the window closed (its end: ``[start, end)``)."""
    today = at.astimezone(tz).date()
    closes = [
        window.interval_on(today - timedelta(days=back), tz)[1] + END_INCLUSIVE
        for back in (2, 1, 0)
    ]
    return max(close for close in closes if close <= at)


@dataclass(frozen=True, slots=True)
class LastClose:
    """An :class:`~controller.policy.framework.plugin.Anchor`: the window's latest close."""

    window: Window
    tz: ZoneInfo

    def before(self, at: datetime) -> datetime:
        """:func:`last_close` of the window at ``at``."""
        return last_close(self.window, self.tz, at)


@dataclass(frozen=True, slots=True)
class ZoneSchedule:
    """One TDM zone's window and evict period."""

    name: str
    window: Window
    evict_period: timedelta

    def schedules(self, tz: ZoneInfo) -> tuple[Schedule, ...]:
        """Window start, window end and evict period of the zone (none if always open)."""
        window = self.window
        if window.always:
            return ()
        base = f"tdm/{self.name}"
        end_second = int(END_INCLUSIVE.total_seconds())
        whens: dict[str, Cron | Interval] = {
            WINDOW_START: Cron(window.start.hour, window.start.minute, 0, tz),
            WINDOW_END: Cron(window.end.hour, window.end.minute, end_second, tz),
            EVICT_PERIOD_KIND: Interval(self.evict_period, LastClose(window, tz), tz),
        }
        return tuple(
            Schedule(f"{base}/{kind}", kind, when, zone=self.name, rank=RANKS[kind])
            for kind, when in whens.items()
        )


def zone_schedules(args: TdmArgs) -> tuple[ZoneSchedule, ...]:
    """The zones of ``args`` (sorted by name), each with the evict period."""
    return tuple(ZoneSchedule(zone.name, zone.window, args.evict_period) for zone in args.zones)


def schedules(args: TdmArgs, ctx: PluginContext) -> tuple[Schedule, ...]:
    """Every trigger TDM needs for ``args``, read in ``ctx.timezone``."""
    return tuple(
        schedule for zone in zone_schedules(args) for schedule in zone.schedules(ctx.timezone)
    )
