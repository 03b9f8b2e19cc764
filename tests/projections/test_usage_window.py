"""Running window sums (projections.usage_window): every read equals the plain slice mean
to the bit, whatever came, went, was trimmed or arrived out of order between reads."""

from __future__ import annotations

import random

import pytest

from projections.usage import Series
from projections.usage_window import EXACT_LIMIT, exact, slice_mean


def plain(series: Series, end: float, seconds: float) -> tuple[float, float, int]:
    """Today's definition: the slice ``(end - seconds, end]`` summed left to right."""
    times = series.times
    lo = sum(1 for t in times if t <= end - seconds)
    hi = sum(1 for t in times if t <= end)
    return slice_mean(series, lo, hi)


def value(rng: random.Random, kind: str) -> float:
    if kind == "integral":
        return float(rng.randrange(0, 64 * 2**30))
    if kind == "fraction":
        return rng.randrange(0, 10**6) / 7.0
    if kind == "huge":
        return float(rng.randrange(2**52, 2**53))
    return float(rng.randrange(0, 4000)) if rng.random() < 0.8 else rng.random() * 1000


SCENARIOS = {
    # kind of values, seconds between samples, window, read lag, out-of-order share, limit
    "integral-in-order": ("integral", 5.0, 300.0, 0.0, 0.0, 1440),
    "integral-read-late": ("integral", 5.0, 300.0, 37.0, 0.0, 1440),
    "fractions-fall-back": ("fraction", 10.0, 300.0, 1.0, 0.0, 1440),
    "mixed-values": ("mixed", 7.0, 120.0, 3.0, 0.0, 1440),
    "sums-past-2**53": ("huge", 5.0, 300.0, 0.0, 0.0, 1440),
    "out-of-order": ("integral", 5.0, 300.0, 2.0, 0.2, 1440),
    "trimmed-by-limit": ("integral", 5.0, 300.0, 0.0, 0.0, 20),
    "window-longer-than-history": ("mixed", 30.0, 3600.0, 0.0, 0.1, 50),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS.values()), ids=list(SCENARIOS))
def test_running_mean_equals_the_slice_mean_to_the_bit(
    scenario: tuple[str, float, float, float, float, int],
) -> None:
    kind, step, window, lag, shuffled, limit = scenario
    rng = random.Random(7)
    series = Series()
    t = 1_000_000.0
    reads = 0
    for i in range(600):
        t += step
        at = t - rng.random() * 4 * step if rng.random() < shuffled else t
        series.add(at, value(rng, kind), value(rng, kind), keep_after=t - 7200.0, limit=limit)
        if i % 7 == 0:
            end = t + lag
            got = series.mean(end, window)
            assert got == plain(series, end, window)
            assert repr(got) == repr(plain(series, end, window))
            reads += 1
    assert reads > 50 and series.window is not None


@pytest.mark.parametrize(
    ("windows", "end_shift"),
    [([300.0, 600.0, 300.0], 0.0), ([300.0, 300.0], -60.0), ([60.0, 3600.0], 5.0)],
    ids=["re-keyed-window", "end-before-newest", "short-then-long"],
)
def test_reads_over_other_windows_and_ends(windows: list[float], end_shift: float) -> None:
    series = Series()
    for i in range(200):
        series.add(float(i * 5), float(i % 13 * 100), float(i * 1024), keep_after=-1, limit=999)
    end = series.times[-1] + end_shift
    for seconds in windows:
        assert series.mean(end, seconds) == plain(series, end, seconds)


def test_one_off_reads_keep_no_window() -> None:
    series = Series()
    for i in range(10):
        series.add(float(i), 1.5, 2.0, keep_after=-1, limit=99)
    assert series.mean(9.0, 5.0, keep=False) == plain(series, 9.0, 5.0)
    assert series.window is None


@pytest.mark.parametrize(
    ("cpu", "memory", "expected"),
    [
        (1.0, 2.0, True),
        (0.5, 2.0, False),
        (1.0, float(EXACT_LIMIT), False),
        (-1.0, 2.0, False),
        (float("inf"), 1.0, False),
        (float("nan"), 1.0, False),
    ],
    ids=["integral", "fraction", "at-limit", "negative", "infinite", "nan"],
)
def test_exact_points(cpu: float, memory: float, expected: bool) -> None:
    assert exact(cpu, memory) is expected
