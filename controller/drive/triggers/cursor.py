"""Fire times on a virtual clock: APScheduler triggers stepped by event times.

Why: replay and simulation must produce the very ``trigger.fired`` records a live
scheduler would, without reading the wall clock. APScheduler 3.11's
``get_next_fire_time(previous, now)`` is a pure function of its arguments (given an
explicit ``start_date`` and ``timezone`` and no jitter), so a cursor that remembers the
previous fire time and asks for the next one is enough: start with
``get_next_fire_time(None, registered_at)``, then after each fire ``prev`` ask
``get_next_fire_time(prev, prev)`` (agronholm/apscheduler 3.11
apscheduler/triggers/cron/__init__.py, ``CronTrigger.get_next_fire_time``, and
apscheduler/triggers/interval.py, ``IntervalTrigger.get_next_fire_time``).

Fire times are returned in UTC (the log's zone). A cron trigger in a named zone may return
a non-canonical local time on a DST gap (``02:30+01:00`` for a skipped 02:30); converted to
UTC it is the same instant the scheduler would use.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import NamedTuple

from apscheduler.triggers.base import BaseTrigger

from controller.drive.triggers.plan import TriggerConfig, TriggerSpec, build_triggers
from controller.policy.builtins import BUILTIN_PLUGINS
from controller.policy.framework.config import TideConfig
from controller.policy.framework.plugin import PluginSpec
from controller.policy.trigger_events import trigger_event
from streams.events import Event


class TriggerCursor:
    """The fire times of one trigger from ``registered_at`` on, stepped forward by time."""

    __slots__ = ("_next", "prev", "trigger")

    def __init__(self, trigger: BaseTrigger, registered_at: datetime) -> None:
        if registered_at.tzinfo is None:
            raise ValueError("a cursor needs an aware registration time")
        self.trigger = trigger
        self.prev: datetime | None = None
        self._next: datetime | None = trigger.get_next_fire_time(None, registered_at)

    def peek(self) -> datetime | None:
        """The next fire time (UTC), or None when the trigger is exhausted."""
        return None if self._next is None else self._next.astimezone(UTC)

    def advance(self, now: datetime) -> list[datetime]:
        """Every fire time ``<= now`` not returned before, in order (UTC)."""
        due: list[datetime] = []
        while self._next is not None and self._next <= now:
            due.append(self._next.astimezone(UTC))
            self.prev = self._next
            self._next = self.trigger.get_next_fire_time(self.prev, self._next)
        return due


class Firing(NamedTuple):
    """One due fire time of a named trigger."""

    at: datetime
    name: str
    kind: str
    zone: str | None


class TriggerSet:
    """All of a configuration's triggers, merged into one time-ordered stream.

    Ties (the same instant) are ordered by the triggers' declared ranks (TDM: window end,
    window start, evict period; the session tick last) and then by name, so the stream is a
    pure function of the configuration and the registration time.
    """

    def __init__(self, specs: Iterable[TriggerSpec], *, start: datetime) -> None:
        self.specs: tuple[TriggerSpec, ...] = tuple(sorted(specs, key=lambda s: s.name))
        self.start = start
        self._rank = {spec.name: spec.rank for spec in self.specs}
        self._cursors = [(spec, TriggerCursor(spec.trigger, start)) for spec in self.specs]
        # the earliest next fire time, kept until :meth:`due` moves a cursor (the loop
        # peeks once per record)
        self._earliest = self._peek_all()

    @classmethod
    def from_config(
        cls,
        config: TideConfig | TriggerConfig,
        *,
        start: datetime,
        plugins: Mapping[str, PluginSpec] = BUILTIN_PLUGINS,
    ) -> TriggerSet:
        """The triggers of a :class:`TideConfig` (or a :class:`TriggerConfig`) from ``start``.

        ``plugins`` is the table whose specs declare the plugins' schedules.
        """
        if isinstance(config, TriggerConfig):
            plan = config
        else:
            plan = TriggerConfig.from_tide(config, plugins=plugins)
        return cls(build_triggers(plan, start=start), start=start)

    def peek(self) -> datetime | None:
        """The earliest next fire time over all triggers (UTC), or None."""
        return self._earliest

    def _peek_all(self) -> datetime | None:
        times = [t for _, cursor in self._cursors if (t := cursor.peek()) is not None]
        return min(times) if times else None

    def due(self, until: datetime) -> list[Firing]:
        """Every firing ``<= until`` not returned before, sorted by (at, kind rank, name)."""
        firings = [
            Firing(at, spec.name, spec.kind, spec.zone)
            for spec, cursor in self._cursors
            for at in cursor.advance(until)
        ]
        self._earliest = self._peek_all()
        return sorted(firings, key=lambda f: (f.at, self._rank[f.name], f.name))

    def pop_due(self, now: datetime) -> list[Firing]:
        """Alias of :meth:`due` (the simulation loop's name for it)."""
        return self.due(now)


def firing_event(firing: Firing) -> Event:
    """The ``trigger.fired`` record of a :class:`Firing`."""
    return trigger_event(firing.at, firing.name, firing.kind, firing.zone)
