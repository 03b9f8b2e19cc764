"""TDM time windows: ``HH:MM-HH:MM`` read in a named timezone, and Go duration text.

Why a module of its own: the window is the one piece of TDM that both the policy (is the
zone active at ``ssn.now``?) and the triggers (when do the window boundaries fire?) must
agree on, so both import it from here.

Parsing follows upstream's ``parseRevocableZone`` exactly (volcano-sh/volcano
pkg/scheduler/plugins/tdm/tdm.go; Go's ``time.Parse`` with layout ``15:04``): whitespace is
trimmed only at the ends of the whole string, the two parts are split on ``-``, the hour
has one or two digits in 0..23, the minute exactly two digits in 00..59, nothing else.

Activity differs from upstream on purpose (see ``controller.policy.plugins.tdm.DIFFERENCES``):

* A window is a set of *instants*, not of wall-clock readings. Each local day ``d``
  contributes ``[d at start, e at end)`` where ``e`` is ``d`` if ``start < end`` and
  ``d + 1`` otherwise, so ``22:00-06:00`` is active from 22:00 until 06:00 the next
  morning, including after midnight (upstream anchors the start to *today*, losing the
  after-midnight part).
* ``start == end`` is always active, the 24-hour window it is meant to be (upstream puts
  the end a day after the start, but anchors the start to today, so only ``0:00-0:00`` is
  always active there).
* Windows are half-open ``[start, end)``: ``0:00-0:01`` is active from 00:00:00 through
  00:00:59.999999 and closed from 00:01:00 sharp. Upstream compares whole Unix seconds, so
  its end bound is inclusive to the second (``21:00`` is still open at 21:00:00.999); tide
  closes at the configured time, so the close and the first eviction coincide with it.
* Times are read in the configured IANA zone (default UTC), never the process's zone.
  Local times are turned into instants by ``zoneinfo`` with ``fold=0``: a wall time that
  occurs twice (autumn) means its first occurrence; a wall time that does not exist
  (spring) maps to the instant with the pre-transition offset, e.g. Europe/Berlin
  ``02:30`` on 2024-03-31 is 01:30Z. APScheduler's ``CronTrigger`` fires at the same
  instants, so the window-boundary triggers and the policy agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from controller.policy.framework.durations import DurationError as DurationError
from controller.policy.framework.durations import parse_duration

_HHMM = re.compile(r"([0-9]{1,2}):([0-9]{2})")
#: A window stays open until ``end + END_INCLUSIVE`` (exclusive). Upstream compares whole
#: Unix seconds, so ``21:00`` is still open at 21:00:00.999; tide closes the window at
#: ``21:00:00`` sharp (half-open ``[start, end)``), so the window-end trigger at 21:00 evicts
#: at 21:00. The trigger fires at ``end + END_INCLUSIVE``.
END_INCLUSIVE = timedelta(0)


class WindowError(ValueError):
    """A window string that upstream's parser would reject too."""


@dataclass(frozen=True, slots=True)
class Window:
    """A daily window ``start-end`` in local time; ``raw`` is the text as configured."""

    start: time
    end: time
    raw: str

    @property
    def always(self) -> bool:
        """``start == end``: a 24-hour window, i.e. always active."""
        return self.start == self.end

    @property
    def crosses_midnight(self) -> bool:
        return self.start > self.end

    def text(self) -> str:
        """The canonical text: ``HH:MM-HH:MM`` with two-digit hours."""
        return f"{self.start:%H:%M}-{self.end:%H:%M}"

    def interval_on(self, day: date, tz: ZoneInfo) -> tuple[datetime, datetime]:
        """The window that opens on local ``day``: ``(start, end)`` as UTC instants.

        ``end`` is the first instant at which the window is closed (exclusive bound).
        """
        start = datetime.combine(day, self.start, tzinfo=tz)
        end_day = day if self.start < self.end else day + timedelta(days=1)
        end = datetime.combine(end_day, self.end, tzinfo=tz)
        return start.astimezone(UTC), end.astimezone(UTC)

    def active(self, now: datetime, tz: ZoneInfo) -> bool:
        """Whether ``now`` (aware) lies in the window, read in ``tz``."""
        if self.always:
            return True
        if now.tzinfo is None:
            raise ValueError("window activity needs an aware time")
        local_day = now.astimezone(tz).date()
        for day in (local_day - timedelta(days=1), local_day):
            start, end = self.interval_on(day, tz)
            if start <= now < end + END_INCLUSIVE:
                return True
        return False


def _parse_hhmm(part: str, raw: str) -> time:
    match = _HHMM.fullmatch(part)
    if match is None:
        raise WindowError(f"revocable zone window {raw!r}: {part!r} is not HH:MM")
    hour, minute = int(match.group(1)), int(match.group(2))
    if hour > 23 or minute > 59:
        raise WindowError(f"revocable zone window {raw!r}: {part!r} is out of range")
    return time(hour, minute)


def parse_window(raw: object) -> Window:
    """Parse ``"HH:MM-HH:MM"`` (upstream's ``parseRevocableZone`` grammar).

    Raises:
        WindowError: the text is not a window.
    """
    if not isinstance(raw, str):
        raise WindowError(f"revocable zone window {raw!r} must be a string like '08:00-21:00'")
    parts = raw.strip().split("-")
    if len(parts) != 2:
        raise WindowError(f"revocable zone window {raw!r} format error (want HH:MM-HH:MM)")
    return Window(_parse_hhmm(parts[0], raw), _parse_hhmm(parts[1], raw), raw)


# --- Go durations (``time.ParseDuration``) -------------------------------------------------

#: Go durations are parsed by the framework's one parser (exact, decimal).
parse_go_duration = parse_duration


def format_go_duration(value: timedelta) -> str:
    """Go's ``Duration.String`` for whole seconds and above (``"1m0s"``, ``"1h30m0s"``)."""
    micros = value // timedelta(microseconds=1)
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    if micros == 0:
        return "0s"
    if micros < 1_000_000:
        return f"{sign}{micros / 1000:g}ms" if micros >= 1000 else f"{sign}{micros}µs"
    seconds, frac = divmod(micros, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    sec_text = f"{secs}" if not frac else f"{secs}.{frac:06d}".rstrip("0")
    out = f"{sec_text}s"
    if hours or minutes:
        out = f"{minutes}m" + out
    if hours:
        out = f"{hours}h" + out
    return sign + out
