"""The axes of ``tide report``'s charts: a continuous time axis, numbered value axes and
the hour slots the bar charts count in.

Every chart of the page shares these so that time reads the same everywhere: ticks sit
on whole minutes, hours or days of the log's own time zone (as many as fit, at most a
dozen), an hour with nothing in it is an empty slot rather than a missing one, and a
value axis is numbered in steps of 1, 2 or 5 times a power of ten.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

WIDTH = 960
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 12, 44

#: time-axis steps (seconds) a chart may tick at, finest first
_STEPS = (60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)
#: hours a bar may count, finest first (beyond 72 one-hour slots the bars widen)
_SLOT_HOURS = (1, 2, 3, 6, 12, 24, 48, 168, 720, 8760)
MAX_SLOTS = 72


@dataclass(frozen=True)
class Frame:
    """The plot area of a ``WIDTH`` × ``height`` chart (the axes' labels sit outside it)."""

    height: int

    @property
    def left(self) -> float:
        """The x of the value axis."""
        return float(LEFT)

    @property
    def right(self) -> float:
        """The x of the plot's right edge."""
        return float(WIDTH - RIGHT)

    @property
    def top(self) -> float:
        """The y of the plot's top edge."""
        return float(TOP)

    @property
    def bottom(self) -> float:
        """The y of the time axis."""
        return float(self.height - BOTTOM)


def _offset(at: datetime) -> float:
    shift = at.utcoffset()
    return shift.total_seconds() if shift is not None else 0.0


def zone_name(at: datetime) -> str:
    """The name the time axis gives ``at``'s time zone (``UTC`` for offset zero)."""
    shift = _offset(at)
    if shift == 0:
        return "UTC"
    return at.strftime("UTC%z")


def _label(at: datetime, *, step: float, first: bool, previous: datetime | None) -> str:
    if step >= 86400:
        return at.strftime("%m-%d")
    new_day = previous is None or previous.date() != at.date()
    return at.strftime("%m-%d %H:%M") if first or new_day else at.strftime("%H:%M")


def time_ticks(start: datetime, end: datetime) -> list[tuple[datetime, str]]:
    """Ticks on whole steps of ``start``'s time zone from ``start`` to ``end``: at most a
    dozen, the first and each new day's labelled with the date."""
    span = max((end - start).total_seconds(), 1.0)
    step = next((s for s in _STEPS if span / s <= 12), _STEPS[-1])
    while span / step > 12:
        step *= 2
    shift = _offset(start)
    first = math.ceil((start.timestamp() + shift) / step) * step - shift
    out: list[tuple[datetime, str]] = []
    at = datetime.fromtimestamp(first, start.tzinfo)
    previous = None
    while at <= end:
        out.append((at, _label(at, step=step, first=not out, previous=previous)))
        previous = at
        at = at + timedelta(seconds=step)
    return out


def value_ticks(top: float) -> list[int]:
    """0 and whole steps of 1, 2 or 5 × 10ⁿ up to the first at or above ``top`` (at most
    six ticks)."""
    top = max(top, 1.0)
    magnitude = 10 ** math.floor(math.log10(top))
    step = next(m * magnitude for m in (0.1, 0.2, 0.5, 1, 2, 5, 10) if top / (m * magnitude) <= 5)
    step = max(int(step), 1)
    count = math.ceil(top / step)
    return [i * step for i in range(count + 1)]


@dataclass(frozen=True)
class Slots:
    """The bar charts' continuous slots from ``start``'s to ``end``'s (``hours`` wide)."""

    starts: list[datetime]
    hours: int

    def index(self, at: datetime) -> int:
        """The slot ``at`` falls in."""
        first = self.starts[0]
        return min(int((at - first).total_seconds() // (3600 * self.hours)), len(self.starts) - 1)

    def label(self, i: int) -> str:
        """Slot ``i`` as ``HH:MM–HH:MM`` (with the date when it is not the first's day)."""
        begin = self.starts[i]
        stop = begin + timedelta(hours=self.hours)
        day = "" if begin.date() == self.starts[0].date() else begin.strftime("%m-%d ")
        return f"{day}{begin:%H:%M}–{stop:%H:%M}"

    def heading(self) -> str:
        """``hour`` or ``N hours``: what one slot counts."""
        return "hour" if self.hours == 1 else f"{self.hours} hours"


def slots(start: datetime, end: datetime) -> Slots:
    """Every slot from ``start``'s to ``end``'s, empty ones included: one-hour slots, or
    wider ones when more than :data:`MAX_SLOTS` hours would not fit."""
    shift = _offset(start)
    for hours in _SLOT_HOURS:
        width = 3600 * hours
        first = math.floor((start.timestamp() + shift) / width) * width - shift
        last = math.floor((end.timestamp() + shift) / width) * width - shift
        count = int((last - first) // width) + 1
        if count <= MAX_SLOTS or hours == _SLOT_HOURS[-1]:
            begin = datetime.fromtimestamp(first, start.tzinfo)
            starts = [begin + timedelta(hours=hours * i) for i in range(min(count, MAX_SLOTS))]
            return Slots(starts, hours)
    raise AssertionError("unreachable")  # pragma: no cover


def slot_ticks(found: Slots) -> list[tuple[int, str]]:
    """The slots to label (at most a dozen) with their start, dated at each new day."""
    every = max(1, math.ceil(len(found.starts) / 12))
    out: list[tuple[int, str]] = []
    previous: datetime | None = None
    for i in range(0, len(found.starts), every):
        at = found.starts[i]
        if found.hours >= 24:
            text = at.strftime("%m-%d")
        elif previous is None or previous.date() != at.date():
            text = at.strftime("%m-%d %H:%M")
        else:
            text = at.strftime("%H:%M")
        out.append((i, text))
        previous = at
    return out


def bar_axes(
    frame: Frame, found: Slots, *, ticks: Sequence[int], unit: str, zone: str
) -> list[str]:
    """The grid, the numbered value axis and the slot labels of a bar chart."""
    top = ticks[-1]
    parts: list[str] = []
    for value in ticks:
        y = frame.bottom - (frame.bottom - frame.top) * value / top
        parts.append(
            f'<line x1="{frame.left}" x2="{frame.right}" y1="{y:.1f}" y2="{y:.1f}" '
            f'class="grid"/><text x="{frame.left - 6}" y="{y + 4:.1f}" class="tick y">'
            f"{value}</text>"
        )
    width = (frame.right - frame.left) / len(found.starts)
    for i, text in slot_ticks(found):
        x = frame.left + width * (i + 0.5)
        parts.append(f'<text x="{x:.1f}" y="{frame.bottom + 16}" class="tick x">{text}</text>')
    parts.append(
        f'<line x1="{frame.left}" x2="{frame.left}" y1="{frame.top}" y2="{frame.bottom}" '
        f'class="axis"/><line x1="{frame.left}" x2="{frame.right}" y1="{frame.bottom}" '
        f'y2="{frame.bottom}" class="axis"/>'
        f'<text x="{(frame.left + frame.right) / 2:.0f}" y="{frame.bottom + 34}" '
        f'class="axis-title">{found.heading()} starting ({zone})</text>'
        f'<text x="14" y="{(frame.top + frame.bottom) / 2:.0f}" class="axis-title" '
        f'transform="rotate(-90 14 {(frame.top + frame.bottom) / 2:.0f})">{unit}</text>'
    )
    return parts
