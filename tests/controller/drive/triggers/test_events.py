"""``trigger.fired`` records: scheduled time in ``at`` and ``data.scheduled``; valid payloads."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from controller.drive.triggers import Firing, firing_event, trigger_data, trigger_event
from streams.validation import validate

AT = datetime(2026, 11, 21, 21, 0, 1, tzinfo=UTC)


def test_zone_trigger_event() -> None:
    event = trigger_event(AT, "tdm/rz1/window-end", "window-end", "rz1")
    assert event.type == "trigger.fired"
    assert event.at == AT
    assert event.cause is None
    assert event.data == {
        "trigger": "tdm/rz1/window-end",
        "kind": "window-end",
        "zone": "rz1",
        "scheduled": "2026-11-21T21:00:01Z",
    }
    validate(event.type, event.data)


def test_tick_event_has_no_zone_and_a_stable_id() -> None:
    event = trigger_event(AT, "session-tick", "tick")
    assert "zone" not in event.data
    assert event.id == trigger_event(AT, "session-tick", "tick").id
    assert event.id != trigger_event(AT + timedelta(seconds=1), "session-tick", "tick").id
    validate(event.type, event.data)


def test_times_are_stored_in_utc() -> None:
    local = AT.astimezone(timezone(timedelta(hours=2)))
    assert trigger_data(local, "t", "tick")["scheduled"] == "2026-11-21T21:00:01Z"
    assert trigger_event(local, "t", "tick").at.tzinfo == UTC


def test_firing_event() -> None:
    firing = Firing(AT, "tdm/rz1/evict-period", "evict-period", "rz1")
    assert firing_event(firing) == trigger_event(AT, *firing[1:])
