"""The live wrapper: real AsyncIOScheduler, events stamped with the scheduled time."""

from __future__ import annotations

import asyncio
import itertools
from datetime import UTC, datetime, timedelta

from controller.drive.triggers import TriggerConfig, TriggerSet
from controller.drive.triggers.live import LiveTriggers
from streams.events import Event


async def test_live_ticks_carry_scheduled_times() -> None:
    got: list[Event] = []

    async def append(event: Event) -> None:
        got.append(event)

    start = datetime.now(UTC) + timedelta(milliseconds=100)
    config = TriggerConfig(tick=timedelta(milliseconds=200))
    live = LiveTriggers(config, append, start=start)
    live.run()
    try:
        await asyncio.sleep(0.75)
    finally:
        live.shutdown()
    assert len(got) >= 2
    expected = TriggerSet.from_config(config, start=start).due(got[-1].at)
    fired = [e.at for e in got]
    assert fired == sorted(set(fired))  # each scheduled time once, in order
    # Scheduled times, not callback times (a stalled loop may coalesce, never invent).
    assert set(fired) <= {f.at for f in expected}
    assert all(e.data["scheduled"] and e.data["kind"] == "tick" for e in got)


async def test_live_accepts_a_plain_callable() -> None:
    got: list[Event] = []
    live = LiveTriggers(TriggerConfig(tick=timedelta(milliseconds=100)), got.append)
    live.run()
    try:
        await asyncio.sleep(0.35)
    finally:
        live.shutdown()
    live.shutdown()  # idempotent
    assert got and all(e.type == "trigger.fired" for e in got)
    steps = [b.at - a.at for a, b in itertools.pairwise(got)]
    assert all(step > timedelta(0) for step in steps)
    assert all(step % timedelta(milliseconds=100) == timedelta(0) for step in steps)
