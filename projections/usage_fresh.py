"""Whether a ``metrics.k8s.io`` sample is still evidence: its own time against the log's.

Why this module exists: tide stamps every record with its own clock (``at``), but a
NodeMetrics / PodMetrics sample carries the time it was measured (``timestamp``) and the
span it averages (``window``). metrics-server serves, for each node, the last point it
scraped (``pkg/storage``: it keeps the last two points and answers ``timestamp`` = the
newer one's time, ``window`` = the time between the two, i.e. one scrape interval, its
``--metric-resolution``); a kubelet whose stats stop advancing leaves it serving the same
point, and a tide that starts late (or restarts) may first read a point taken minutes
ago. Such a sample is a value *of the past*: counted as current it keeps driving pressure
eviction on a node nobody measures any more.

The rule (:func:`freshness`): a sample is **stale** when its age at ``at`` exceeds
:data:`STALE_RESOLUTIONS` (3) resolutions, a resolution being the sample's own ``window``
(at least :data:`MIN_RESOLUTION`, metrics-server's smallest ``--metric-resolution``; its
default :data:`DEFAULT_RESOLUTION` when the sample has no readable window). Three, as
Koordinator: the koord-scheduler and koord-descheduler treat a NodeMetric as expired after
``nodeMetricExpirationSeconds`` = 180 s, three of the koordlet's 60 s report intervals,
and reject an expiration below one interval. One missed scrape (2 resolutions) is still
evidence; a third is not. A sample whose time cannot be read, or lies in the future (a
kubelet clock ahead of tide's), is judged fresh: there is nothing to hold against it.

Pure: the rule reads only the record (its ``at`` and payload), so replay judges every
sample as the run did. Whether the rule is *applied* is a behaviour change
(:data:`projections.behaviour.STALE_METRICS`), asked by the policy, not here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple

__all__ = [
    "DEFAULT_RESOLUTION",
    "MIN_RESOLUTION",
    "STALE_RESOLUTIONS",
    "Freshness",
    "freshness",
    "parse_window",
]

#: resolutions a sample may be old and still count (Koordinator: 180 s = 3 x 60 s)
STALE_RESOLUTIONS = 3
#: seconds: metrics-server's default ``--metric-resolution``, for a sample without a window
DEFAULT_RESOLUTION = 60.0
#: seconds: metrics-server's smallest ``--metric-resolution``
MIN_RESOLUTION = 10.0

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class Freshness(NamedTuple):
    """A sample's own time: ``stamp`` (POSIX seconds of its ``timestamp``) and ``limit``
    (the age in seconds beyond which it is stale)."""

    stamp: float
    limit: float

    def age(self, at: float) -> float:
        """Seconds between the sample's ``timestamp`` and ``at`` (POSIX seconds)."""
        return at - self.stamp

    def stale(self, at: float) -> bool:
        """Whether the sample is no evidence any more at ``at`` (POSIX seconds)."""
        return self.age(at) > self.limit


def parse_window(value: object) -> float | None:
    """Seconds of a Go duration as metrics-server writes ``window`` (``"15s"``,
    ``"1m0.5s"``, ``"20.001s"``); None when it is not one."""
    if not isinstance(value, str) or not value:
        return None
    total, end = 0.0, 0
    for match in _PART.finditer(value):
        if match.start() != end:
            return None
        total += float(match.group(1)) * _UNIT[match.group(2)]
        end = match.end()
    return total if end == len(value) else None


def freshness(sample: Mapping[str, Any]) -> Freshness | None:
    """The own time of a NodeMetrics / PodMetrics payload (see the module docstring).

    Args:
        sample: the payload as the API returned it.

    Returns:
        Its :class:`Freshness`, or None when its ``timestamp`` is missing or unreadable.
    """
    stamp = sample.get("timestamp")
    if not isinstance(stamp, str) or not stamp.isascii():
        return None
    try:  # RFC 3339 as metrics-server writes it (Python 3.11 reads the "Z")
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    if when.tzinfo is None:
        return None  # a time without zone: tide never guesses zones
    window = sample.get("window")
    return Freshness(when.timestamp(), _limit(window if isinstance(window, str) else None))


@lru_cache(maxsize=256)
def _limit(window: str | None) -> float:
    """Seconds a sample of ``window`` may be old (windows repeat: one parse for each)."""
    seconds = parse_window(window)
    resolution = DEFAULT_RESOLUTION if seconds is None else max(seconds, MIN_RESOLUTION)
    return STALE_RESOLUTIONS * resolution


def is_stale(sample: Mapping[str, Any], at: datetime) -> bool:
    """Whether ``sample`` is stale at ``at`` (False when its time cannot be read)."""
    fresh = freshness(sample)
    return fresh is not None and fresh.stale(at.timestamp())
