"""Triggers: *when* the controller thinks (session tick, TDM window boundaries, evict
periods), as APScheduler 3.11 triggers stepped on a virtual clock (:mod:`.cursor`) or run
live (:mod:`.live`). See :mod:`.plan` for the list of triggers and their pitfalls.

``controller.triggers.live`` is not imported here: it pulls in the asyncio scheduler,
which replay and simulation never need.
"""

from __future__ import annotations

from controller.triggers.cursor import Firing, TriggerCursor, TriggerSet
from controller.triggers.events import firing_event, trigger_data, trigger_event
from controller.triggers.plan import (
    DEFAULT_TICK,
    EVICT_PERIOD,
    KIND_RANK,
    TICK,
    TICK_NAME,
    WINDOW_END,
    WINDOW_START,
    TriggerConfig,
    TriggerSpec,
    ZoneSchedule,
    build_triggers,
    describe,
)

__all__ = [
    "DEFAULT_TICK",
    "EVICT_PERIOD",
    "KIND_RANK",
    "TICK",
    "TICK_NAME",
    "WINDOW_END",
    "WINDOW_START",
    "Firing",
    "TriggerConfig",
    "TriggerCursor",
    "TriggerSet",
    "TriggerSpec",
    "ZoneSchedule",
    "build_triggers",
    "describe",
    "firing_event",
    "trigger_data",
    "trigger_event",
]
