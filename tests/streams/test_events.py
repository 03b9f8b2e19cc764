"""The record: canonical time text, content ids, offsets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from streams.events import Event, format_time, make_event, parse_time
from tests.builders import T0


@pytest.mark.parametrize(
    "at",
    [
        datetime(2026, 11, 21, 20, 59, 1, tzinfo=UTC),
        datetime(2026, 11, 21, 20, 59, 1, 7, tzinfo=UTC),
        datetime(2026, 1, 1, 1, 0, tzinfo=timezone(timedelta(hours=2))),
        datetime(2026, 3, 29, 3, 0, 0, 500000, tzinfo=ZoneInfo("Europe/Berlin")),
        datetime(2026, 1, 1, tzinfo=ZoneInfo("UTC")),
    ],
)
def test_format_time_is_utc_with_z_and_micros_only_when_set(at: datetime) -> None:
    utc = at.astimezone(UTC)
    expected = utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if utc.microsecond else "%Y-%m-%dT%H:%M:%SZ")
    assert format_time(at) == expected
    assert parse_time(format_time(at)) == at


def test_parse_time_needs_a_zone() -> None:
    assert parse_time("2026-11-21T21:00:00+01:00") == T0.replace(hour=20)
    with pytest.raises(ValueError, match="no timezone"):
        parse_time("2026-11-21T20:00:00")


def test_make_event_derives_the_id_from_the_content() -> None:
    a = make_event("metrics.node", T0, {"x": 1, "y": 2})
    assert (
        a.id
        == make_event("metrics.node", T0.astimezone(ZoneInfo("Asia/Tokyo")), {"y": 2, "x": 1}).id
    )
    assert a.id != make_event("metrics.node", T0, {"x": 1, "y": 2}, cause="c").id
    assert a.id != make_event("metrics.pod", T0, {"x": 1, "y": 2}).id
    assert make_event("metrics.node", T0, {}, id="given").id == "given"
    with pytest.raises(ValueError, match="unknown event type"):
        make_event("metrics.gpu", T0, {})
    with pytest.raises(ValueError, match="timezone-aware"):
        make_event("metrics.node", datetime(2026, 1, 1), {})


def test_with_offset_changes_only_the_offset() -> None:
    event = Event("config.applied", T0, "i", {"a": 1}, cause="c", v=2)
    placed = event.with_offset(7)
    assert placed == Event("config.applied", T0, "i", {"a": 1}, cause="c", offset=7, v=2)
    assert event.offset == -1
