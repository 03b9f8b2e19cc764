"""Predictive eviction: a linear trend of node pressure, extrapolated.

This is tide's design (beyond upstream koordlet): koordinator-sh/koordinator's
pkg/koordlet/prediction predicts peaks for resource overcommit, never for eviction.

For a check at time *t* with pressure *p(t)*::

    trend     = (p(t) - p(t - trendWindow)) / elapsed          # % per second
    predicted = p(t) + trend × predictionWindow
    eta       = (advanceEvictThreshold - p(t)) / trend          # when the threshold is hit

``p(t - trendWindow)`` is the newest sample not later than ``t - trendWindow`` and
``elapsed`` the time between the two samples (exactly ``trendWindow`` with regular
sampling; the real gap otherwise, so a missing sample does not inflate the trend). With no
such sample, or one older than twice ``trendWindow`` (a hole in the history), there is no
prediction.

A prediction triggers when the trend is rising and the predicted pressure is above
``advanceEvictThreshold`` — at each of the node's last ``pressureStableThreshold`` checks,
as reactive pressure must be stable (a single spike would otherwise extrapolate to a
large, needless eviction). The amount to free is (predicted − ``targetPercent``) % of
capacity, from the latest check.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from controller.policy.pressure.config import EvictionConfig
from projections.usage import Series, from_seconds
from streams.events import format_time
from streams.payloads import PredictionEvidence

#: a point older than this many trend windows is a hole in the history, not a baseline
MAX_BASELINE_AGE = 2.0


@dataclass(frozen=True, slots=True)
class Prediction:
    """One extrapolation of a node's pressure for one resource (percentages)."""

    resource: str
    current: float
    baseline: float
    elapsed: float  # seconds between the baseline and the current sample
    trend: float  # % per second
    predicted: float
    t: float  # the current sample's time (POSIX seconds)

    @property
    def rising(self) -> bool:
        return self.trend > 0

    def eta(self, threshold: float) -> float | None:
        """Seconds until ``threshold`` is reached at this trend (None when not rising)."""
        if not self.rising:
            return None
        return max(0.0, (threshold - self.current) / self.trend)

    def evidence(self, config: EvictionConfig) -> PredictionEvidence:
        eta = self.eta(config.predictive.advance_threshold)
        return {
            "current": round(self.current, 3),
            "baseline": round(self.baseline, 3),
            "baseline_at": format_time(from_seconds(self.t - self.elapsed)),
            "trend_per_minute": round(self.trend * 60, 4),
            "predicted": round(self.predicted, 3),
            "prediction_window": config.predictive.prediction_window.total_seconds(),
            "trend_window": config.predictive.trend_window.total_seconds(),
            "advance_threshold": config.predictive.advance_threshold,
            "target_percent": config.predictive.target_percent,
            "eta_seconds": round(eta, 1) if eta is not None else None,
        }


def predict_at(
    series: Series, index: int, capacity: float, resource: str, config: EvictionConfig
) -> Prediction | None:
    """The prediction made at the series' point ``index`` (None without a baseline)."""
    if capacity <= 0 or not 0 <= index < len(series.times):
        return None
    window = config.predictive.trend_window.total_seconds()
    times = series.times
    values = series.cpu if resource == "cpu" else series.memory
    t = times[index]
    j = bisect_right(times, t - window, 0, index) - 1
    if j < 0:
        return None
    elapsed = t - times[j]
    if elapsed <= 0 or elapsed > MAX_BASELINE_AGE * window:
        return None
    current = 100.0 * values[index] / capacity
    baseline = 100.0 * values[j] / capacity
    trend = (current - baseline) / elapsed
    predicted = current + trend * config.predictive.prediction_window.total_seconds()
    return Prediction(resource, current, baseline, elapsed, trend, predicted, t)


def predicted_at(
    times: list[float],
    values: list[float],
    index: int,
    capacity: float,
    window: float,
    horizon: float,
) -> float | None:
    """The predicted pressure at point ``index`` when the trend rises, else None (fast
    path of :func:`predict_at`, same arithmetic; ``window`` and ``horizon`` are the trend
    and prediction windows in seconds)."""
    t = times[index]
    j = bisect_right(times, t - window, 0, index) - 1
    if j < 0:
        return None
    elapsed = t - times[j]
    rise = values[index] - values[j]
    if rise <= 0 or elapsed <= 0 or elapsed > MAX_BASELINE_AGE * window:
        return None
    current = 100.0 * values[index] / capacity
    trend = 100.0 * rise / capacity / elapsed
    return current + trend * horizon


def stable_prediction(
    series: Series, capacity: float, resource: str, config: EvictionConfig
) -> Prediction | None:
    """The latest prediction if it and the previous ``stable_checks - 1`` all trigger."""
    times = series.times
    last = len(times) - 1
    checks = config.stable_checks
    if capacity <= 0 or last + 1 < checks:
        return None
    values = series.cpu if resource == "cpu" else series.memory
    predictive = config.predictive
    window = predictive.trend_window.total_seconds()
    horizon = predictive.prediction_window.total_seconds()
    advance = predictive.advance_threshold
    for index in range(last, last - checks, -1):  # newest first: cheap exit
        predicted = predicted_at(times, values, index, capacity, window, horizon)
        if predicted is None or predicted <= advance:
            return None
    return predict_at(series, last, capacity, resource, config)


def amount_to_free(prediction: Prediction, capacity: float, config: EvictionConfig) -> float:
    """(predicted − targetPercent) % of capacity, in the resource's unit."""
    return (prediction.predicted - config.predictive.target_percent) * capacity / 100.0
