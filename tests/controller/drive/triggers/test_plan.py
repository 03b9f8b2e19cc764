"""Trigger plan and virtual-clock cursors: cron windows in a named zone (DST, midnight),
evict-period intervals anchored at the window close, deterministic merge order."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from controller.drive.triggers import (
    Firing,
    TriggerConfig,
    TriggerCursor,
    TriggerSet,
    build_triggers,
    describe,
)
from controller.policy.framework.plugin import PluginSpec
from controller.policy.loader import load_config
from controller.policy.plugins import tdm
from controller.policy.plugins.tdm import ZoneSchedule, parse_window

BERLIN = ZoneInfo("Europe/Berlin")
UTC_ZONE = ZoneInfo("UTC")
T0 = datetime(2026, 11, 21, 20, 58, tzinfo=UTC)


def z(name: str, window: str, period: timedelta = timedelta(minutes=1)) -> ZoneSchedule:
    return ZoneSchedule(name, parse_window(window), period)


def plan_of(
    *,
    zones: tuple[ZoneSchedule, ...] = (),
    tick: timedelta = timedelta(seconds=1),
    timezone: ZoneInfo = UTC_ZONE,
) -> TriggerConfig:
    """The plan of a session tick and TDM zones, as TDM declares their schedules."""
    schedules = tuple(s for zone in zones for s in zone.schedules(timezone))
    return TriggerConfig(tick=tick, timezone=timezone, schedules=schedules)


def times(ts: TriggerSet, until: datetime, kind: str | None = None) -> list[datetime]:
    return [f.at for f in ts.due(until) if kind is None or f.kind == kind]


def test_plan_names_kinds_and_types() -> None:
    config = plan_of(zones=(z("rz1", "10:00-21:00"),))
    specs = build_triggers(config, start=T0)
    assert [(s.name, s.kind, s.zone) for s in specs] == [
        ("session-tick", "tick", None),
        ("tdm/rz1/evict-period", "evict-period", "rz1"),
        ("tdm/rz1/window-end", "window-end", "rz1"),
        ("tdm/rz1/window-start", "window-start", "rz1"),
    ]
    by_kind = {s.kind: s.trigger for s in specs}
    assert isinstance(by_kind["tick"], IntervalTrigger)
    assert isinstance(by_kind["window-start"], CronTrigger)
    assert isinstance(by_kind["evict-period"], IntervalTrigger)
    for spec in specs:  # explicit zone and start; no jitter anywhere
        assert spec.trigger.jitter is None
        assert spec.trigger.start_date is not None
    assert by_kind["window-end"].timezone == ZoneInfo("UTC")
    assert describe(specs)[0] == {
        "name": "session-tick",
        "kind": "tick",
        "trigger": repr(by_kind["tick"]),
    }


def test_always_open_zone_has_no_triggers() -> None:
    specs = build_triggers(plan_of(zones=(z("rz1", "23:59-23:59"),)), start=T0)
    assert [s.name for s in specs] == ["session-tick"]


def test_plan_rejects_naive_start_and_bad_tick() -> None:
    with pytest.raises(ValueError, match="aware"):
        build_triggers(plan_of(), start=datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="positive"):
        build_triggers(plan_of(tick=timedelta(0)), start=T0)


def test_tick_every_second_from_start() -> None:
    ts = TriggerSet.from_config(plan_of(), start=T0)
    assert ts.peek() == T0
    assert times(ts, T0 + timedelta(seconds=3)) == [T0 + timedelta(seconds=s) for s in range(4)]
    assert ts.peek() == T0 + timedelta(seconds=4)
    assert ts.due(T0 + timedelta(seconds=3)) == []  # nothing twice


def test_sub_second_tick_has_no_drift() -> None:
    start = datetime(2026, 11, 21, 20, 58, 0, 123_456, tzinfo=UTC)
    ts = TriggerSet.from_config(plan_of(tick=timedelta(milliseconds=100)), start=start)
    fired = times(ts, start + timedelta(hours=1))
    assert len(fired) == 36_001
    assert fired[-1] == start + timedelta(hours=1)
    assert all(b - a == timedelta(milliseconds=100) for a, b in itertools.pairwise(fired))


def test_window_close_fires_at_the_exclusive_end() -> None:
    # half-open [start, end): 10:00-21:00 is closed at 21:00:00 sharp, and so fires then
    ts = TriggerSet.from_config(plan_of(zones=(z("rz1", "10:00-21:00"),)), start=T0)
    close = datetime(2026, 11, 21, 21, 0, tzinfo=UTC)
    firings = ts.due(T0 + timedelta(minutes=5))
    zone_firings = [f for f in firings if f.kind != "tick" and f.at >= close]
    assert zone_firings == [
        Firing(close, "tdm/rz1/window-end", "window-end", "rz1"),
        Firing(close, "tdm/rz1/evict-period", "evict-period", "rz1"),
        Firing(close + timedelta(minutes=1), "tdm/rz1/evict-period", "evict-period", "rz1"),
        Firing(close + timedelta(minutes=2), "tdm/rz1/evict-period", "evict-period", "rz1"),
        Firing(close + timedelta(minutes=3), "tdm/rz1/evict-period", "evict-period", "rz1"),
    ]


def test_ties_are_ordered_by_kind_then_name() -> None:
    start = datetime(2026, 11, 21, 20, 59, 59, tzinfo=UTC)
    config = plan_of(
        zones=(
            z("b", "21:00-21:00"),
            z("b2", "10:00-21:00"),
            z("a", "21:00-06:00"),
            z("c", "10:00-21:00"),
        )
    )
    ts = TriggerSet.from_config(config, start=start)
    got = [
        (f.at.strftime("%H:%M:%S"), f.kind, f.name) for f in ts.due(start + timedelta(seconds=2))
    ]
    assert got == [
        ("20:59:59", "tick", "session-tick"),
        ("21:00:00", "window-end", "tdm/b2/window-end"),  # closes before opens
        ("21:00:00", "window-end", "tdm/c/window-end"),
        ("21:00:00", "window-start", "tdm/a/window-start"),
        ("21:00:00", "evict-period", "tdm/a/evict-period"),  # fires all day, every minute
        ("21:00:00", "evict-period", "tdm/b2/evict-period"),
        ("21:00:00", "evict-period", "tdm/c/evict-period"),
        ("21:00:00", "tick", "session-tick"),
        ("21:00:01", "tick", "session-tick"),
    ]


def test_pop_due_is_due() -> None:
    a = TriggerSet.from_config(plan_of(zones=(z("rz1", "10:00-21:00"),)), start=T0)
    b = TriggerSet.from_config(plan_of(zones=(z("rz1", "10:00-21:00"),)), start=T0)
    until = T0 + timedelta(minutes=10)
    assert a.pop_due(until) == b.due(until)


def test_same_sequence_however_the_clock_is_stepped() -> None:
    config = plan_of(tick=timedelta(seconds=7), zones=(z("rz1", "22:00-06:00"),), timezone=BERLIN)
    start = datetime(2024, 3, 30, 12, tzinfo=UTC)
    whole = TriggerSet.from_config(config, start=start).due(start + timedelta(days=2))
    stepped = TriggerSet.from_config(config, start=start)
    pieces: list[Firing] = []
    now = start
    while now < start + timedelta(days=2):
        now += timedelta(minutes=17, seconds=3)
        pieces.extend(stepped.due(min(now, start + timedelta(days=2))))
    assert pieces == whole


# -- cron semantics in a named zone, pinned ------------------------------------------------


def cron_times(hour: int, minute: int, start: datetime, days: int, second: int = 0) -> list[str]:
    trigger = CronTrigger(
        hour=hour, minute=minute, second=second, timezone=BERLIN, start_date=start
    )
    cursor = TriggerCursor(trigger, start)
    return [t.isoformat() for t in cursor.advance(start + timedelta(days=days))]


def test_cron_in_winter_and_summer() -> None:
    assert cron_times(8, 0, datetime(2024, 1, 10, tzinfo=UTC), 1) == ["2024-01-10T07:00:00+00:00"]
    assert cron_times(8, 0, datetime(2024, 7, 10, tzinfo=UTC), 1) == ["2024-07-10T06:00:00+00:00"]


def test_cron_across_spring_forward() -> None:
    start = datetime(2024, 3, 30, 12, tzinfo=UTC)
    # 22:00 local: 21:00Z (CET) then 20:00Z (CEST)
    assert cron_times(22, 0, start, 2) == ["2024-03-30T21:00:00+00:00", "2024-03-31T20:00:00+00:00"]
    # 02:30 does not exist on 2024-03-31: fires at 02:30+01:00 = 01:30Z (non-canonical)
    assert cron_times(2, 30, start, 2) == ["2024-03-31T01:30:00+00:00", "2024-04-01T00:30:00+00:00"]


def test_cron_across_fall_back_fires_a_repeated_time_twice() -> None:
    start = datetime(2024, 10, 26, 12, tzinfo=UTC)
    assert cron_times(2, 30, start, 1) == ["2024-10-27T00:30:00+00:00", "2024-10-27T01:30:00+00:00"]
    assert cron_times(22, 0, start, 2) == ["2024-10-26T20:00:00+00:00", "2024-10-27T21:00:00+00:00"]


def test_cross_midnight_window_triggers_in_berlin() -> None:
    config = plan_of(zones=(z("night", "22:00-06:00"),), timezone=BERLIN)
    start = datetime(2024, 3, 30, 12, tzinfo=UTC)
    ts = TriggerSet.from_config(config, start=start)
    until = start + timedelta(days=2)
    assert [t.isoformat() for t in times(ts, until, "window-start")] == [
        "2024-03-30T21:00:00+00:00",  # 22:00 CET
        "2024-03-31T20:00:00+00:00",  # 22:00 CEST
    ]
    ts = TriggerSet.from_config(config, start=start)
    assert [t.isoformat() for t in times(ts, until, "window-end")] == [
        "2024-03-31T04:00:00+00:00",  # 06:00:00 CEST, the morning after the short night
        "2024-04-01T04:00:00+00:00",
    ]


def test_window_end_trigger_matches_the_first_closed_instant() -> None:
    # the policy and the trigger agree on when a window closes, in a DST week too
    window = parse_window("22:00-02:30")
    config = plan_of(zones=(ZoneSchedule("rz", window, timedelta(minutes=1)),), timezone=BERLIN)
    start = datetime(2024, 10, 25, 12, tzinfo=UTC)
    ts = TriggerSet.from_config(config, start=start)
    ends = times(ts, start + timedelta(days=3), "window-end")
    for end in ends:
        assert not window.active(end, BERLIN)
    first_closes = [e for e in ends if window.active(e - timedelta(microseconds=1), BERLIN)]
    assert [e.isoformat() for e in first_closes] == [
        "2024-10-26T00:30:00+00:00",
        # the first 02:30 (CEST); the repeated one fires again at 01:30:00Z
        "2024-10-27T00:30:00+00:00",
        "2024-10-28T01:30:00+00:00",
    ]
    assert len(ends) == 4


def test_evict_period_is_anchored_at_the_latest_window_close() -> None:
    config = plan_of(zones=(z("rz1", "10:00-21:00", timedelta(minutes=7)),))
    close = datetime(2026, 11, 21, 21, 0, tzinfo=UTC)
    ts = TriggerSet.from_config(config, start=close + timedelta(minutes=30))
    fired = times(ts, close + timedelta(minutes=50), "evict-period")
    assert fired == [close + timedelta(minutes=m) for m in (35, 42, 49)]


def test_evict_period_anchor_before_the_first_close() -> None:
    # started at 12:00:30: anchored at yesterday's 21:00:00 close, not at the start; a
    # period dividing a day stays aligned
    config = plan_of(zones=(z("rz1", "10:00-21:00", timedelta(minutes=2)),))
    ts = TriggerSet.from_config(config, start=datetime(2026, 11, 21, 12, 0, 30, tzinfo=UTC))
    close = datetime(2026, 11, 21, 21, 0, tzinfo=UTC)
    fired = times(ts, close + timedelta(minutes=4), "evict-period")
    assert fired[0] == datetime(2026, 11, 21, 12, 2, tzinfo=UTC)
    assert fired[-3:] == [close, close + timedelta(minutes=2), close + timedelta(minutes=4)]


def test_evict_period_anchor_for_a_cross_midnight_window() -> None:
    # 22:00-06:00 closes at 06:00:00; started at 07:00 it is anchored at today's close
    config = plan_of(zones=(z("rz1", "22:00-06:00", timedelta(minutes=25)),))
    start = datetime(2026, 11, 21, 7, tzinfo=UTC)
    ts = TriggerSet.from_config(config, start=start)
    assert times(ts, start + timedelta(minutes=30), "evict-period") == [
        datetime(2026, 11, 21, 7, 15, tzinfo=UTC)
    ]


def test_from_tide_config() -> None:
    config = load_config(
        {
            "actions": "allocate",
            "timezone": "Europe/Berlin",
            "sessionTick": "5s",
            "tiers": [
                {
                    "plugins": [
                        {
                            "name": "tdm",
                            "arguments": {
                                "tdm.revocable-zone.rz2": "10:00-18:00",
                                "tdm.revocable-zone.rz1": "08:00-21:00",
                                "tdm.evict.period": "2m",
                            },
                        }
                    ]
                }
            ],
        },
        plugins={"tdm": PluginSpec("tdm", tdm.parse_args, tdm.build)},
    )
    plan = TriggerConfig.from_tide(config)
    assert plan.tick == timedelta(seconds=5)
    assert plan.timezone == BERLIN
    zones = [
        (zs.name, zs.window.raw, zs.evict_period)
        for zs in tdm.zone_schedules(tdm.parse_args(config.tiers[0].plugins[0].arguments))
    ]
    assert zones == [
        ("rz1", "08:00-21:00", timedelta(minutes=2)),
        ("rz2", "10:00-18:00", timedelta(minutes=2)),
    ]
    expected = plan_of(
        zones=(
            z("rz1", "08:00-21:00", timedelta(minutes=2)),
            z("rz2", "10:00-18:00", timedelta(minutes=2)),
        ),
        timezone=BERLIN,
    )
    assert plan.schedules == tuple(sorted(expected.schedules, key=lambda s: s.name))
    ts = TriggerSet.from_config(config, start=T0)
    assert len(ts.specs) == 7
