"""Running sums over one sliding window of a usage series: averages without re-summing.

Why it exists: the rescheduling round and the ``usage`` plugin average every node's
samples over ``metricsPeriod`` (:meth:`projections.usage.Series.mean`); re-summing every
window made a round cost as much as one pass over all the samples. A :class:`RunningWindow`
keeps, for the points of indices ``[lo, len)`` of its series, the sum of their CPU and
memory and how many of them are *inexact*; a point folded in is added to the sums, a point
that the series trims or that the window leaves as it slides is taken off. A read
bisects the window's bounds and moves ``lo`` over the points that came or went since the
last read, so its cost follows the change, not the window's length. A series gets a
window on its first read (so pods never asked about pay nothing when their samples are
folded); a read over another window length re-keys it.

Exactness (the averages are bit-identical to ``sum(points) / n`` over the slice): a point
is *exact* when both its values are integral floats in ``[0, 2**53)`` (milli-cores and
bytes parsed from Kubernetes quantities nearly always are). The sums of the exact points
are floats that hold integers: while a sum stays below ``2**53`` every addition and
subtraction is exact, and so is every partial sum of the slice's left-to-right addition,
so the two sums are the same integer and the means the same float. A window holding an
inexact point, or whose sum reached ``2**53`` (its sums are rebuilt at the next read), or a
read whose end falls before the series' newest point, is averaged by the slice sum as
before.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Protocol

#: below this every integral float and every sum of them adds exactly (a float: comparing
#: a float with a large int is slow)
EXACT_LIMIT = 2.0**53


class Points(Protocol):
    """The parallel lists of a series (oldest first)."""

    times: list[float]
    cpu: list[float]
    memory: list[float]


def exact(cpu: float, memory: float) -> bool:
    """Both values are integral floats in ``[0, 2**53)`` (see the module docstring)."""
    return (
        0.0 <= cpu < EXACT_LIMIT
        and 0.0 <= memory < EXACT_LIMIT
        and (cpu.is_integer() and memory.is_integer())
    )


def slice_mean(points: Points, lo: int, hi: int) -> tuple[float, float, int]:
    """``(cpu, memory, n)``: the plain mean of the points ``[lo, hi)`` (``n`` 0: none)."""
    n = hi - lo
    if n <= 0:
        return 0.0, 0.0, 0
    return sum(points.cpu[lo:hi]) / n, sum(points.memory[lo:hi]) / n, n


class RunningWindow:
    """Sums over the points ``[lo, len)`` of one series, for windows of ``seconds``.

    The sums are floats holding integers: while both stay below ``2**53`` every addition
    and subtraction of an exact point is exact; one that reaches it marks the sums
    ``spoilt``, and the next read rebuilds them from the points.
    """

    __slots__ = ("cpu", "inexact", "lo", "memory", "seconds", "spoilt")

    def __init__(self, seconds: float, lo: int) -> None:
        self.seconds = seconds
        self.lo = lo  # the window starts at this index; it always runs to the newest point
        self.cpu = 0.0  # sums of the exact points (integral floats)
        self.memory = 0.0
        self.inexact = 0  # inexact points held
        self.spoilt = False

    def _take(self, points: Points, lo: int, hi: int, sign: float) -> None:
        cpu, memory = points.cpu, points.memory
        for i in range(lo, hi):
            c, m = cpu[i], memory[i]
            if (
                0.0 <= c < EXACT_LIMIT
                and 0.0 <= m < EXACT_LIMIT
                and (c.is_integer() and m.is_integer())
            ):
                self.cpu += sign * c
                self.memory += sign * m
            else:
                self.inexact += 1 if sign > 0 else -1
        if self.cpu >= EXACT_LIMIT or self.memory >= EXACT_LIMIT:
            self.spoilt = True

    def appended(self, points: Points) -> None:
        """A point was just appended to the series (the fold's hot path: kept flat). It
        also expires the points the window anchored on it no longer holds, so that a read
        soon after the last sample finds almost nothing left to take off."""
        times, cpu, memory = points.times, points.cpu, points.memory
        last = len(times) - 1
        c, m = cpu[last], memory[last]
        if (
            0.0 <= c < EXACT_LIMIT
            and 0.0 <= m < EXACT_LIMIT
            and c.is_integer()
            and (m.is_integer())
        ):
            self.cpu += c
            self.memory += m
            if self.cpu >= EXACT_LIMIT or self.memory >= EXACT_LIMIT:
                self.spoilt = True
        else:
            self.inexact += 1
        start = times[last] - self.seconds
        lo = self.lo
        while lo <= last and times[lo] <= start:
            c, m = cpu[lo], memory[lo]
            if (
                0.0 <= c < EXACT_LIMIT
                and 0.0 <= m < EXACT_LIMIT
                and c.is_integer()
                and (m.is_integer())
            ):
                self.cpu -= c
                self.memory -= m
            else:
                self.inexact -= 1
            lo += 1
        self.lo = lo

    def inserted(self, points: Points, i: int) -> None:
        """A point arrived out of order and is now at index ``i``."""
        if i < self.lo:
            self.lo += 1
        else:
            self._take(points, i, i + 1, 1.0)

    def trimming(self, points: Points, cut: int) -> None:
        """The series is about to drop its first ``cut`` points."""
        if cut > self.lo:
            self._take(points, self.lo, cut, -1.0)
            self.lo = 0
        else:
            self.lo -= cut

    def mean(self, points: Points, end: float) -> tuple[float, float, int]:
        """``(cpu, memory, n)`` over the points in ``(end - seconds, end]``."""
        times = points.times
        size = len(times)
        lo = bisect_right(times, end - self.seconds)
        if size and times[-1] > end:  # the window ends before the newest point
            return slice_mean(points, lo, bisect_right(times, end))
        if self.spoilt:  # rebuild from the points
            self.cpu = self.memory = 0.0
            self.inexact, self.lo, self.spoilt = 0, size, False
        if lo > self.lo:
            self._take(points, self.lo, lo, -1.0)
        elif lo < self.lo:
            self._take(points, lo, self.lo, 1.0)
        self.lo = lo
        n = size - lo
        if n <= 0:
            return 0.0, 0.0, 0
        if self.inexact or self.spoilt:
            return slice_mean(points, lo, size)
        return self.cpu / n, self.memory / n, n
