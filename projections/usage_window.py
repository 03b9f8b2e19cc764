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
bytes parsed from Kubernetes quantities nearly always are), and the sums of the exact
points are Python integers. When every point of the window is exact and each sum is below
``2**53``, every partial sum of the float left-to-right addition is an integer below
``2**53`` and so exact: the float sum equals ``float(int sum)`` and so does the mean. A
window holding an inexact point, or whose sum reaches ``2**53``, or a read whose end falls
before the series' newest point, is averaged by the slice sum as before.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Protocol

#: below this every integral float and every sum of them adds exactly
EXACT_LIMIT = 2**53


class Points(Protocol):
    """The parallel lists of a series (oldest first)."""

    times: list[float]
    cpu: list[float]
    memory: list[float]


def exact(cpu: float, memory: float) -> bool:
    """Both values are integral floats in ``[0, 2**53)`` (see the module docstring)."""
    return (
        cpu.is_integer()
        and memory.is_integer()
        and 0.0 <= cpu < EXACT_LIMIT
        and (0.0 <= memory < EXACT_LIMIT)
    )


def slice_mean(points: Points, lo: int, hi: int) -> tuple[float, float, int]:
    """``(cpu, memory, n)``: the plain mean of the points ``[lo, hi)`` (``n`` 0: none)."""
    n = hi - lo
    if n <= 0:
        return 0.0, 0.0, 0
    return sum(points.cpu[lo:hi]) / n, sum(points.memory[lo:hi]) / n, n


class RunningWindow:
    """Sums over the points ``[lo, len)`` of one series, for windows of ``seconds``."""

    __slots__ = ("cpu", "inexact", "lo", "memory", "seconds")

    def __init__(self, seconds: float, lo: int) -> None:
        self.seconds = seconds
        self.lo = lo  # the window starts at this index; it always runs to the newest point
        self.cpu = 0  # sums of the exact points, as integers
        self.memory = 0
        self.inexact = 0  # inexact points held

    def _take(self, points: Points, lo: int, hi: int, sign: int) -> None:
        cpu, memory = points.cpu, points.memory
        for i in range(lo, hi):
            c, m = cpu[i], memory[i]
            if exact(c, m):
                self.cpu += sign * int(c)
                self.memory += sign * int(m)
            else:
                self.inexact += sign

    def inserted(self, points: Points, i: int) -> None:
        """The point now at index ``i`` was just added to the series. A newest point also
        expires the points the window anchored on it no longer holds, so that a read soon
        after the last sample finds almost nothing left to take off."""
        if i < self.lo:
            self.lo += 1
            return
        c, m = points.cpu[i], points.memory[i]
        if exact(c, m):
            self.cpu += int(c)
            self.memory += int(m)
        else:
            self.inexact += 1
        times = points.times
        if i == len(times) - 1:
            start = times[i] - self.seconds
            lo = self.lo
            while lo <= i and times[lo] <= start:
                lo += 1
            if lo > self.lo:
                self._take(points, self.lo, lo, -1)
                self.lo = lo

    def trimming(self, points: Points, cut: int) -> None:
        """The series is about to drop its first ``cut`` points."""
        if cut > self.lo:
            self._take(points, self.lo, cut, -1)
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
        if lo > self.lo:
            self._take(points, self.lo, lo, -1)
        elif lo < self.lo:
            self._take(points, lo, self.lo, 1)
        self.lo = lo
        n = size - lo
        if n <= 0:
            return 0.0, 0.0, 0
        if self.inexact or self.cpu >= EXACT_LIMIT or self.memory >= EXACT_LIMIT:
            return slice_mean(points, lo, size)
        return float(self.cpu) / n, float(self.memory) / n, n
