"""``trigger.fired`` records: the one shape both the virtual and the live clock write.

The record's ``at`` *and* ``data.scheduled`` are the scheduled fire time, never the time
the callback happened to run: a decision is a function of the log prefix before its
trigger, and the scheduled time is what replay can re-derive.
"""

from __future__ import annotations

from datetime import datetime

from streams.events import Event, format_time, make_event
from streams.payloads import TriggerPayload, as_json, trigger_kind


def trigger_data(
    at: datetime,
    name: str,
    kind: str,
    zone: str | None = None,
    *,
    nodes: list[str] | None = None,
) -> TriggerPayload:
    """``{"trigger", "kind", "zone"?, "nodes"?, "scheduled"}``.

    ``zone`` only for a TDM zone's triggers, ``nodes`` only for a pressure follow-up (the
    nodes it is due on). ``kind`` must be a :data:`~streams.payloads.TriggerKind`.
    """
    data: TriggerPayload = {
        "trigger": name,
        "kind": trigger_kind(kind),
        "scheduled": format_time(at),
    }
    if zone is not None:
        data["zone"] = zone
    if nodes is not None:
        data["nodes"] = nodes
    return data


def trigger_event(
    at: datetime,
    name: str,
    kind: str,
    zone: str | None = None,
    *,
    nodes: list[str] | None = None,
) -> Event:
    """The ``trigger.fired`` event of a firing at ``at`` (id derived from the content)."""
    return make_event("trigger.fired", at, as_json(trigger_data(at, name, kind, zone, nodes=nodes)))
