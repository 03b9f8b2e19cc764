"""The clock: the one place tide reads the wall clock.

Why a protocol: the same loop runs on two clocks. Replay and simulation move a
:class:`VirtualClock` to each record's time; ``tide run`` reads :class:`SystemClock`. Policy
code never asks either: a decision's only time is its trigger's ``at`` (``ssn.now``), which
the loop stamped from the clock when the trigger fired. Anything else that needs "now"
(registering the live triggers, say) is handed a ``Clock``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Tells the time (aware, UTC)."""

    def now(self) -> datetime:
        """The current time."""


class SystemClock:
    """The wall clock; the only wall-clock read in tide."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class VirtualClock:
    """A clock that only moves when told to (replay, simulation, tests).

    Args:
        start: the initial time (aware).
    """

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("a virtual clock needs an aware time")
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, to: datetime) -> None:
        """Move to ``to``; a clock never goes back."""
        if to < self._now:
            raise ValueError(f"the clock cannot go back from {self._now} to {to}")
        self._now = to


class ShiftedClock:
    """Another clock moved by a fixed ``offset`` (``tide run``'s ``triggers.clock_offset``).

    Args:
        inner: the clock to read.
        offset: added to every reading.
    """

    def __init__(self, inner: Clock, offset: timedelta) -> None:
        self.inner = inner
        self.offset = offset

    def now(self) -> datetime:
        return self.inner.now() + self.offset
