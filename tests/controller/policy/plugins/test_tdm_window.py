"""TDM windows: the grammar (spec §6.2) and activity in a named timezone (seed 000 §8)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest

from controller.policy.plugins.tdm.window import (
    DurationError,
    WindowError,
    format_go_duration,
    parse_go_duration,
    parse_window,
)

BERLIN = ZoneInfo("Europe/Berlin")
DAY = datetime(2026, 11, 21, tzinfo=UTC)


def utc(hh: int, mm: int = 0, ss: int = 0, us: int = 0, *, day: int = 21) -> datetime:
    return datetime(2026, 11, day, hh, mm, ss, us, tzinfo=UTC)


@pytest.mark.parametrize(
    ("raw", "start", "end"),
    [
        pytest.param("10:00-21:00", time(10), time(21), id="plain"),
        pytest.param("1:00-4:00", time(1), time(4), id="one-digit hours (design note)"),
        pytest.param("0:00-0:01", time(0), time(0, 1), id="one minute"),
        pytest.param("   1:00-0:00    ", time(1), time(0), id="outer whitespace trimmed"),
        pytest.param("\t08:00-21:00\n", time(8), time(21), id="tabs and newline trimmed"),
        pytest.param("22:00-06:00", time(22), time(6), id="cross-midnight"),
        pytest.param("23:59-23:59", time(23, 59), time(23, 59), id="equal"),
        pytest.param("00:00-23:59", time(0), time(23, 59), id="two-digit zero hour"),
    ],
)
def test_valid_windows(raw: str, start: time, end: time) -> None:
    window = parse_window(raw)
    assert (window.start, window.end, window.raw) == (start, end, raw)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("1:00 - 2:00", id="inner whitespace"),
        pytest.param("00:00_01:00", id="wrong separator"),
        pytest.param("0:00", id="missing part"),
        pytest.param("0:00-1:00-2:00", id="three parts"),
        pytest.param("1:0-0:0", id="one-digit minutes"),
        pytest.param("63:59-23:59", id="hour out of range"),
        pytest.param("24:00-01:00", id="hour 24"),
        pytest.param("25:00-26:00", id="both out of range"),
        pytest.param("10:60-11:00", id="minute 60"),
        pytest.param("100:00-1:00", id="three-digit hour"),
        pytest.param("10:00:00-11:00:00", id="seconds"),
        pytest.param("-10:00", id="empty start"),
        pytest.param("", id="empty"),
        pytest.param("１0:00-11:00", id="non-ASCII digit"),
        pytest.param("+1:00-2:00", id="sign"),
    ],
)
def test_invalid_windows(raw: str) -> None:
    with pytest.raises(WindowError):
        parse_window(raw)


@pytest.mark.parametrize("raw", [None, 8, 8.5, ["10:00-21:00"], {"a": 1}])
def test_non_string_window_is_an_error(raw: object) -> None:
    with pytest.raises(WindowError, match="must be a string"):
        parse_window(raw)


@pytest.mark.parametrize(
    ("raw", "now", "active"),
    [
        # plain window, half-open [start, end): the start is open, the end is closed
        pytest.param("10:00-21:00", utc(9, 59, 59, 999_999), False, id="just before start"),
        pytest.param("10:00-21:00", utc(10), True, id="at start"),
        pytest.param("10:00-21:00", utc(15), True, id="inside"),
        pytest.param("10:00-21:00", utc(21), False, id="at end (exclusive)"),
        pytest.param("10:00-21:00", utc(20, 59, 59, 999_999), True, id="just before end"),
        pytest.param("10:00-21:00", utc(21, 0, 1), False, id="one second after end"),
        pytest.param("0:00-0:01", utc(0, 0, 59, 999_999), True, id="0:00-0:01 at 00:00:59.999999"),
        pytest.param("0:00-0:01", utc(0, 1), False, id="0:00-0:01 at 00:01:00"),
        pytest.param("0:00-0:01", utc(0, 1, 1), False, id="0:00-0:01 at 00:01:01"),
        # cross-midnight: active after midnight too (upstream loses this part)
        pytest.param("22:00-06:00", utc(21, 59, 59), False, id="x-midnight before start"),
        pytest.param("22:00-06:00", utc(22), True, id="x-midnight at start"),
        pytest.param("22:00-06:00", utc(23, 59, 59), True, id="x-midnight before midnight"),
        pytest.param("22:00-06:00", utc(0), True, id="x-midnight at midnight"),
        pytest.param("22:00-06:00", utc(3), True, id="x-midnight after midnight"),
        pytest.param("22:00-06:00", utc(5, 59, 59, 999_999), True, id="x-midnight just before end"),
        pytest.param("22:00-06:00", utc(6), False, id="x-midnight end exclusive"),
        pytest.param("22:00-06:00", utc(6, 0, 1), False, id="x-midnight after end"),
        pytest.param("22:00-06:00", utc(12), False, id="x-midnight midday"),
        pytest.param("22:00-02:00", utc(1), True, id="seed example 22:00-02:00 at 01:00"),
        # equal start and end: always active (seed: a 24-hour window)
        pytest.param("23:59-23:59", utc(12), True, id="23:59-23:59 midday"),
        pytest.param("23:59-23:59", utc(23, 58, 59), True, id="23:59-23:59 before 23:59"),
        pytest.param("0:00-0:00", utc(0, 0, 0), True, id="0:00-0:00 midnight"),
        pytest.param("10:30-10:30", utc(10, 29), True, id="10:30-10:30 before"),
    ],
)
def test_activity_in_utc(raw: str, now: datetime, active: bool) -> None:
    assert parse_window(raw).active(now, ZoneInfo("UTC")) is active


def test_windows_are_read_in_the_configured_zone() -> None:
    window = parse_window("08:00-21:00")
    tokyo = ZoneInfo("Asia/Tokyo")  # UTC+9, no DST
    assert window.active(utc(0), tokyo)  # 09:00 JST
    assert not window.active(utc(12, 0, 1), tokyo)  # 21:00:01 JST
    assert not window.active(utc(12), tokyo)  # 21:00:00 JST, end exclusive
    assert window.active(utc(11, 59, 59, 999_999), tokyo)  # 20:59:59.999999 JST
    assert not window.active(utc(0), ZoneInfo("UTC"))


def test_activity_needs_an_aware_time() -> None:
    with pytest.raises(ValueError, match="aware"):
        parse_window("08:00-21:00").active(datetime(2026, 1, 1, 9), ZoneInfo("UTC"))


# -- DST (Europe/Berlin: 2024-03-31 02:00 CET → 03:00 CEST; 2024-10-27 03:00 CEST → 02:00 CET)


def b(month: int, day: int, hh: int, mm: int = 0, ss: int = 0) -> datetime:
    """A UTC instant."""
    return datetime(2024, month, day, hh, mm, ss, tzinfo=UTC)


def test_dst_spring_window_follows_local_time() -> None:
    window = parse_window("08:00-21:00")
    # Before the switch 08:00 CET = 07:00Z, after it 08:00 CEST = 06:00Z.
    assert window.interval_on(datetime(2024, 3, 30).date(), BERLIN) == (
        b(3, 30, 7),
        b(3, 30, 20),
    )
    assert window.interval_on(datetime(2024, 3, 31).date(), BERLIN) == (
        b(3, 31, 6),
        b(3, 31, 19),
    )
    assert window.active(b(3, 31, 6), BERLIN)
    assert not window.active(b(3, 31, 5, 59, 59), BERLIN)


def test_dst_spring_skipped_start_maps_with_the_pre_transition_offset() -> None:
    # 02:30 does not exist on 2024-03-31 in Berlin; zoneinfo (fold=0) reads it as
    # 02:30+01:00 = 01:30Z, the instant APScheduler's CronTrigger fires at.
    window = parse_window("02:30-05:00")
    start, end = window.interval_on(datetime(2024, 3, 31).date(), BERLIN)
    assert (start, end) == (b(3, 31, 1, 30), b(3, 31, 3))
    assert not window.active(b(3, 31, 1, 29, 59), BERLIN)
    assert window.active(b(3, 31, 1, 30), BERLIN)


def test_dst_autumn_repeated_end_means_the_first_occurrence() -> None:
    # 02:30 occurs twice on 2024-10-27 (00:30Z CEST and 01:30Z CET); the window ends at
    # the first (closed from 00:30:00Z, end exclusive) and does not reopen at the second.
    window = parse_window("22:00-02:30")
    assert window.active(b(10, 27, 0, 30) - timedelta(microseconds=1), BERLIN)
    assert not window.active(b(10, 27, 0, 30), BERLIN)
    assert not window.active(b(10, 27, 0, 30, 1), BERLIN)
    assert not window.active(b(10, 27, 1, 0), BERLIN)  # 02:00 CET, second pass
    assert not window.active(b(10, 27, 1, 30), BERLIN)  # second 02:30
    # the 22:00 start of that night was CEST (20:00Z)
    assert window.active(b(10, 26, 20), BERLIN)
    assert not window.active(b(10, 26, 19, 59, 59), BERLIN)


def test_dst_cross_midnight_window_spans_the_short_night() -> None:
    window = parse_window("22:00-06:00")
    # night of 2024-03-30: 22:00 CET = 21:00Z until 06:00 CEST = 04:00Z (a 7-hour night)
    assert window.interval_on(datetime(2024, 3, 30).date(), BERLIN) == (
        b(3, 30, 21),
        b(3, 31, 4),
    )
    assert window.active(b(3, 31, 4) - timedelta(microseconds=1), BERLIN)
    assert not window.active(b(3, 31, 4), BERLIN)  # 06:00:00 CEST, end exclusive
    assert not window.active(b(3, 31, 4, 0, 1), BERLIN)


def test_always_window_is_active_across_dst() -> None:
    window = parse_window("02:30-02:30")
    for hours in range(0, 72):
        assert window.active(b(3, 30, 0) + timedelta(hours=hours), BERLIN)


# -- Go durations --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1m", timedelta(minutes=1)),
        ("100ms", timedelta(milliseconds=100)),
        ("1s", timedelta(seconds=1)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1.5h", timedelta(hours=1, minutes=30)),
        (".5s", timedelta(milliseconds=500)),
        ("5.s", timedelta(seconds=5)),
        ("300us", timedelta(microseconds=300)),
        ("300µs", timedelta(microseconds=300)),
        ("300μs", timedelta(microseconds=300)),
        ("1500ns", timedelta(microseconds=1)),
        ("0", timedelta(0)),
        ("-1m", timedelta(minutes=-1)),
        ("+2s", timedelta(seconds=2)),
        ("1h0m0s", timedelta(hours=1)),
    ],
)
def test_go_durations(raw: str, expected: timedelta) -> None:
    assert parse_go_duration(raw) == expected


@pytest.mark.parametrize("raw", ["", "1", "1d", "m", "1 m", " 1m", "1m ", ".s", "-", "1mm", "abc"])
def test_invalid_go_durations(raw: str) -> None:
    with pytest.raises(DurationError):
        parse_go_duration(raw)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(minutes=1), "1m0s"),
        (timedelta(hours=1, minutes=30), "1h30m0s"),
        (timedelta(seconds=30), "30s"),
        (timedelta(milliseconds=1500), "1.5s"),
        (timedelta(milliseconds=100), "100ms"),
        (timedelta(0), "0s"),
    ],
)
def test_go_duration_text(value: timedelta, text: str) -> None:
    assert format_go_duration(value) == text
