"""The same triggers on the real clock, for ``tide run``: an ``AsyncIOScheduler`` wrapper.

It takes the registration time from a :class:`~controller.drive.clock.Clock` (the
system clock unless given), and APScheduler decides when a job
is due. The job callback does one thing: append a ``trigger.fired`` record stamped with the
*scheduled* fire time (taken from APScheduler's job-submission event), so a live log and a
replay of it carry identical trigger records; everything else reacts to that record.

A clock ``offset`` (``tide run``'s ``triggers.clock_offset`` setting, for trials and tests
of a window that closes in a few seconds) moves the whole controller's time: each trigger
is handed to the scheduler shifted back by it (:class:`Shifted`), and its firing is stamped
in the shifted time, which is the time every other record of the run carries too.

Jobs coalesce (a burst of missed runs after a stall becomes one record, at the latest
scheduled time), never misfire-skip (``misfire_grace_time=None``), and run one at a time.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from apscheduler.events import EVENT_JOB_SUBMITTED, JobSubmissionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger

from controller.drive.clock import Clock, SystemClock
from controller.drive.triggers.cursor import TriggerSet
from controller.drive.triggers.plan import TriggerConfig, TriggerSpec
from controller.policy.framework.config import TideConfig
from controller.policy.trigger_events import trigger_event
from streams.events import Event

Append = Callable[[Event], Awaitable[object] | object]


class Shifted(BaseTrigger):  # type: ignore[misc]
    """A trigger whose fire times are ``offset`` earlier on the scheduler's (real) clock."""

    def __init__(self, inner: BaseTrigger, offset: timedelta) -> None:
        self.inner = inner
        self.offset = offset

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        previous = None if previous_fire_time is None else previous_fire_time + self.offset
        fire = self.inner.get_next_fire_time(previous, now + self.offset)
        return None if fire is None else fire - self.offset


class LiveTriggers:
    """Run a configuration's triggers on an ``AsyncIOScheduler`` inside a running loop."""

    def __init__(
        self,
        config: TideConfig | TriggerConfig,
        append: Append,
        *,
        start: datetime | None = None,
        clock: Clock | None = None,
        offset: timedelta = timedelta(0),
    ) -> None:
        self.offset = offset
        self.start = start or (clock or SystemClock()).now()  # the live clock, read once
        self.triggers = TriggerSet.from_config(config, start=self.start)
        self._append = append
        self._scheduled: dict[str, deque[datetime]] = {}
        self.scheduler = AsyncIOScheduler(timezone=UTC)

    def run(self) -> None:
        """Register every trigger and start the scheduler (needs a running event loop)."""
        self.scheduler.add_listener(self._submitted, EVENT_JOB_SUBMITTED)
        for spec in self.triggers.specs:
            self.scheduler.add_job(
                self._fire,
                Shifted(spec.trigger, self.offset) if self.offset else spec.trigger,
                args=[spec],
                id=spec.name,
                coalesce=True,
                max_instances=1,
                misfire_grace_time=None,
            )
        self.scheduler.start()

    def shutdown(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    def _submitted(self, event: JobSubmissionEvent) -> None:
        # Dispatched right after the job is handed to the executor, before its coroutine
        # runs; with coalescing there is one run per submission, at the last time.
        self._scheduled.setdefault(event.job_id, deque()).append(event.scheduled_run_times[-1])

    async def _fire(self, spec: TriggerSpec) -> None:
        at = self._scheduled[spec.name].popleft() + self.offset
        result = self._append(trigger_event(at.astimezone(UTC), spec.name, spec.kind, spec.zone))
        if inspect.isawaitable(result):
            await result
