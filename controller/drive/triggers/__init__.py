"""Triggers: *when* the controller thinks (the session tick and every schedule the
configured plugins declare, e.g. TDM's window boundaries and evict periods), as APScheduler
3.11 triggers stepped on a virtual clock (:mod:`.cursor`) or run live (:mod:`.live`). See
:mod:`.plan` for how declarations become triggers and their pitfalls.

``controller.drive.triggers.live`` is not imported here: it pulls in the asyncio scheduler,
which replay and simulation never need.
"""

from __future__ import annotations

from controller.drive.triggers.cursor import Firing, TriggerCursor, TriggerSet, firing_event
from controller.drive.triggers.plan import (
    DEFAULT_TICK,
    TICK,
    TICK_NAME,
    TriggerConfig,
    TriggerSpec,
    build_triggers,
    describe,
    schedule_trigger,
    to_trigger,
)
from controller.policy.trigger_events import trigger_data, trigger_event

__all__ = [
    "DEFAULT_TICK",
    "TICK",
    "TICK_NAME",
    "Firing",
    "TriggerConfig",
    "TriggerCursor",
    "TriggerSet",
    "TriggerSpec",
    "build_triggers",
    "describe",
    "firing_event",
    "schedule_trigger",
    "to_trigger",
    "trigger_data",
    "trigger_event",
]
