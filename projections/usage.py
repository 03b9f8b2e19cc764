"""Resource usage over time: ``metrics.node`` / ``metrics.pod`` samples folded per object.

Every sample becomes one point ``(time, cpu milli, memory bytes)`` of a :class:`Series`
(pod usage is the sum over its containers). Times are the log's ``at`` (POSIX seconds,
float), not the metrics' own ``timestamp``: the log's clock is the one every policy uses.
A series keeps the points of the last ``horizon`` (default 2 h) and at most
``max_samples`` of them (default 1440, two hours at one sample per 5 s); with denser
sampling the history is shorter than the horizon, so size ``max_samples`` for the longest
window a policy reads (leak detection: ``memoryLeakDuration``; prediction:
``trendWindow``).

Queries used by the policies:

* :meth:`UsageState.latest_node` / :meth:`latest_pod`: the newest point;
* :meth:`Series.average` / :meth:`Series.mean` over a window ending now (Volcano's
  ``metricsPeriod``, 5 m), read from running sums kept up as points are folded
  (:mod:`projections.usage_window`), bit-identical to summing the window;
* :meth:`Series.at_or_before`: the value one ``trendWindow`` ago (the newest point not
  later than ``now - window``);
* :meth:`Series.tail`: the last *n* points (pressure streaks: one point is one check);
* :meth:`Series.leak`: the faulty-pod memory-leak rule, made cheap by ``run_start``, the
  time of the newest point that fell more than 1 % below the point before it (the memory
  series has not dropped since), and ``run_min``, the lowest point since then, both kept
  as points are added (:meth:`Series.may_leak` reads only those two).

A ``k8s.watch`` DELETED pod (or node) drops its series. Samples are expected in time
order; an out-of-order point is inserted in place (and ``run_start`` recomputed).

Each node sample's own time (its ``timestamp`` and ``window``, :mod:`projections.usage_fresh`)
is kept beside the series: :attr:`UsageState.node_fresh`, the newest sample's, and
:attr:`UsageState.node_stale`, the ``at`` of the points that were already stale when
recorded. Both are facts of the log; pressure eviction decides whether to read them
(:data:`projections.behaviour.STALE_METRICS`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from projections.base import BaseProjection, decode_state, encode_state, handles
from projections.parsing import sample_cpu, sample_memory
from projections.usage_fresh import Freshness, freshness
from projections.usage_window import RunningWindow
from streams.events import JSON, Event
from streams.payloads import (
    NodeSample,
    PodSample,
    as_node_sample,
    as_pod_sample,
    as_watch,
)

#: the checkpoint format: 2 since the nodes' own sample times are kept (a format-1
#: checkpoint lacks them, so it is refused and the projection refolded)
FORMAT = 2
DEFAULT_HORIZON = timedelta(hours=2)
DEFAULT_MAX_SAMPLES = 1440
DEFAULT_METRICS_PERIOD = timedelta(minutes=5)
#: a memory point more than this far below the one before ends a growth run
LEAK_DROP_TOLERANCE = 0.99


class Sample(NamedTuple):
    """One usage point: ``at`` (aware UTC), ``cpu`` in milli-cores, ``memory`` in bytes."""

    at: datetime
    cpu: float
    memory: float


def to_seconds(at: datetime) -> float:
    """POSIX seconds of an aware datetime (the series' time unit)."""
    return at.timestamp()


def from_seconds(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class Series:
    """The bounded history of one node or pod; parallel lists, oldest first."""

    __slots__ = ("cpu", "encoded", "memory", "run_min", "run_start", "times", "window")

    def __init__(self) -> None:
        self.times: list[float] = []
        self.cpu: list[float] = []
        self.memory: list[float] = []
        self.run_start = 0.0
        self.run_min = 0.0  # the lowest memory point since run_start
        #: running sums for :meth:`mean`, made by its first read (not checkpointed)
        self.window: RunningWindow | None = None
        #: :meth:`fragment`, kept until the next :meth:`add` (the only change of a series)
        self.encoded: orjson.Fragment | None = None

    def __len__(self) -> int:
        return len(self.times)

    def add(self, t: float, cpu: float, memory: float, *, keep_after: float, limit: int) -> None:
        """Add a point, then drop points older than ``keep_after`` and beyond ``limit``."""
        self.encoded = None
        times = self.times
        if not times or t >= times[-1]:
            if not times or memory < LEAK_DROP_TOLERANCE * self.memory[-1]:
                self.run_start, self.run_min = t, memory
            elif memory < self.run_min:
                self.run_min = memory
            times.append(t)
            self.cpu.append(cpu)
            self.memory.append(memory)
            if self.window is not None:
                self.window.appended(self)
        else:  # out of order: insert in place, then recompute the growth run
            i = bisect_right(times, t)
            times.insert(i, t)
            self.cpu.insert(i, cpu)
            self.memory.insert(i, memory)
            self._recompute_run()
            if self.window is not None:
                self.window.inserted(self, i)
        if times[0] >= keep_after and len(times) <= limit:
            return  # the usual point: nothing falls out of the horizon or the limit
        window = self.window
        cut = bisect_left(times, keep_after)
        cut = max(cut, len(times) - limit)
        if cut > 0:
            if window is not None:
                window.trimming(self, cut)
            del times[:cut], self.cpu[:cut], self.memory[:cut]

    def _recompute_run(self) -> None:
        mem = self.memory
        start = 0
        for i in range(1, len(mem)):
            if mem[i] < LEAK_DROP_TOLERANCE * mem[i - 1]:
                start = i
        self.run_start = self.times[start] if self.times else 0.0
        self.run_min = min(mem[start:]) if mem else 0.0

    def may_leak(self, young: float) -> bool:
        """A cheap necessary condition of :meth:`leak`: the growth run began by ``young``
        (POSIX seconds) and the newest point is 1.1 × the run's lowest."""
        return (
            self.run_start <= young and bool(self.memory) and self.memory[-1] >= 1.1 * self.run_min
        )

    # ---- queries ---------------------------------------------------------------------

    def latest(self) -> Sample | None:
        if not self.times:
            return None
        return Sample(from_seconds(self.times[-1]), self.cpu[-1], self.memory[-1])

    def tail(self, n: int) -> list[Sample]:
        """The last ``n`` points (fewer when the series is shorter), oldest first."""
        start = max(0, len(self.times) - n)
        return [
            Sample(from_seconds(self.times[i]), self.cpu[i], self.memory[i])
            for i in range(start, len(self.times))
        ]

    def at_or_before(self, at: datetime) -> Sample | None:
        """The newest point not later than ``at`` (None when the history starts later)."""
        i = bisect_right(self.times, to_seconds(at))
        if i == 0:
            return None
        return Sample(from_seconds(self.times[i - 1]), self.cpu[i - 1], self.memory[i - 1])

    def average(self, now: datetime, window: timedelta) -> Sample | None:
        """Mean of the points in ``(now - window, now]``; None when there are none."""
        cpu, memory, n = self.mean(to_seconds(now), window.total_seconds())
        return Sample(now, cpu, memory) if n else None

    def mean(self, end: float, seconds: float, *, keep: bool = True) -> tuple[float, float, int]:
        """``(cpu, memory, n)``: the mean of the ``n`` points in ``(end - seconds, end]``
        (POSIX seconds; ``n`` 0 and zeros when there are none), read from running sums
        (:mod:`projections.usage_window`), equal to the plain mean to the bit.

        ``keep=False`` is for a one-off read (a pod's usage): without running sums for
        ``seconds`` already, it sums the slice and leaves none behind.
        """
        window = self.window
        if window is None or window.seconds != seconds:
            if not keep:  # slice_mean, inlined: one call per victim of a rescheduling round
                times = self.times
                hi = len(times)
                if hi and times[-1] > end:  # else every point is at or before ``end``
                    hi = bisect_right(times, end)
                lo = bisect_right(times, end - seconds)
                n = hi - lo
                if n <= 0:
                    return 0.0, 0.0, 0
                return sum(self.cpu[lo:hi]) / n, sum(self.memory[lo:hi]) / n, n
            self.window = window = RunningWindow(seconds, len(self.times))
        return window.mean(self, end)

    def leak(self, now: datetime, duration: timedelta) -> tuple[Sample, Sample] | None:
        """``(first, last)`` when memory grew over the last ``duration`` (faulty-pod rule).

        The points in ``[now - duration, now]`` must span at least 90 % of ``duration``,
        none may be more than 1 % below the one before, the first must be positive and
        the last at least 1.1 × the first. None otherwise.
        """
        seconds = duration.total_seconds()
        end = to_seconds(now)
        if self.run_start > end - 0.9 * seconds:  # the run is too young: cheap exit
            return None
        lo = bisect_left(self.times, end - seconds)
        hi = bisect_right(self.times, end)
        if hi - lo < 2 or self.times[lo] < self.run_start:
            return None
        first, last = lo, hi - 1
        if self.times[last] - self.times[first] < 0.9 * seconds:
            return None
        if self.memory[first] <= 0 or self.memory[last] < 1.1 * self.memory[first]:
            return None
        return (
            Sample(from_seconds(self.times[first]), self.cpu[first], self.memory[first]),
            Sample(from_seconds(self.times[last]), self.cpu[last], self.memory[last]),
        )

    # ---- checkpoint ------------------------------------------------------------------

    def to_json(self) -> JSON:
        return {
            "t": self.times,
            "cpu": self.cpu,
            "memory": self.memory,
            "run_start": self.run_start,
            "run_min": self.run_min,
        }

    def fragment(self) -> orjson.Fragment:
        """:meth:`to_json` encoded as a checkpoint encodes it (keys sorted), kept until the
        series changes: a writer keeping a checkpoint every few minutes encodes again only
        the series that had a sample since (most pods have none)."""
        found = self.encoded
        if found is None:
            encoded = orjson.dumps(self.to_json(), option=orjson.OPT_SORT_KEYS)
            found = self.encoded = orjson.Fragment(encoded)
        return found

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Series:
        series = cls()
        series.times = [float(v) for v in body["t"]]
        series.cpu = [float(v) for v in body["cpu"]]
        series.memory = [float(v) for v in body["memory"]]
        series.run_start = float(body["run_start"])
        series.run_min = float(body["run_min"])
        return series


def node_usage(data: NodeSample) -> tuple[float, float]:
    """``(cpu milli, memory bytes)`` of a NodeMetrics payload (missing → 0)."""
    usage = data.get("usage") or {}
    return sample_cpu(usage.get("cpu", 0)), sample_memory(usage.get("memory", 0))


def pod_usage(data: PodSample) -> tuple[float, float]:
    """``(cpu milli, memory bytes)`` of a PodMetrics payload: the sum over its containers."""
    cpu = mem = 0.0
    for container in data.get("containers") or ():
        usage = container.get("usage") or {}
        cpu += sample_cpu(usage.get("cpu", 0))
        mem += sample_memory(usage.get("memory", 0))
    return cpu, mem


class UsageState(BaseProjection):
    """Per-node and per-pod usage histories (see the module docstring).

    Args:
        horizon: how far back points are kept.
        max_samples: the most points kept per series.
        metrics_period: the default averaging window (Volcano's ``metricsPeriod``).
    """

    name = "usage"

    def __init__(
        self,
        *,
        horizon: timedelta = DEFAULT_HORIZON,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        metrics_period: timedelta = DEFAULT_METRICS_PERIOD,
    ) -> None:
        super().__init__()
        if max_samples < 1 or horizon <= timedelta(0):
            raise ValueError("usage history needs a positive horizon and max_samples")
        self.horizon = horizon
        self.max_samples = max_samples
        self.metrics_period = metrics_period
        self.nodes: dict[str, Series] = {}
        self.pods: dict[str, Series] = {}  # "namespace/name" -> series
        #: POSIX time of the first pod sample folded (no pod history reaches further back)
        self.pods_since: float | None = None
        #: node -> the own time of its newest sample (:mod:`projections.usage_fresh`)
        self.node_fresh: dict[str, Freshness] = {}
        #: node -> the ``at`` (POSIX seconds) of its points stale when recorded, oldest first
        self.node_stale: dict[str, list[float]] = {}

    # ---- folds -----------------------------------------------------------------------

    @handles("metrics.node")
    def _node_sample(self, event: Event) -> None:
        # the payload typed without a call per record (a TypedDict is the dict itself)
        if TYPE_CHECKING:
            sample = as_node_sample(event)
        else:
            sample = event.data
        name = (sample.get("metadata") or {}).get("name")
        if not isinstance(name, str) or not name:
            return
        cpu, mem = node_usage(sample)
        series = self._add(self.nodes, name, event.at, cpu, mem)
        fresh = freshness(sample)
        if fresh is None:
            return
        t = to_seconds(event.at)
        if t >= series.times[-1]:
            self.node_fresh[name] = fresh
        stale = self.node_stale.get(name)
        if fresh.stale(t):
            if stale is None:
                self.node_stale[name] = stale = []
            insort(stale, t)
        if stale:  # forget the stale points the series no longer holds
            del stale[: bisect_left(stale, series.times[0])]
            if not stale:
                del self.node_stale[name]

    @handles("metrics.pod")
    def _pod_sample(self, event: Event) -> None:
        if TYPE_CHECKING:
            sample = as_pod_sample(event)
        else:
            sample = event.data
        meta = sample.get("metadata") or {}
        name, namespace = meta.get("name"), meta.get("namespace")
        if not isinstance(name, str) or not isinstance(namespace, str) or not name:
            return
        cpu, mem = pod_usage(sample)
        self._add(self.pods, f"{namespace}/{name}", event.at, cpu, mem)
        if self.pods_since is None:
            self.pods_since = to_seconds(event.at)

    @handles("k8s.watch")
    def _watch(self, event: Event) -> None:
        if TYPE_CHECKING:
            data = as_watch(event)
        else:
            data = event.data
        if data.get("event") != "DELETED":
            return
        meta = (data.get("object") or {}).get("metadata") or {}
        resource = data.get("resource")
        if resource == "pods":
            self.pods.pop(f"{meta.get('namespace')}/{meta.get('name')}", None)
        elif resource == "nodes":
            name = str(meta.get("name"))
            self.nodes.pop(name, None)
            self.node_fresh.pop(name, None)
            self.node_stale.pop(name, None)

    def _add(
        self, table: dict[str, Series], key: str, at: datetime, cpu: float, mem: float
    ) -> Series:
        series = table.get(key)
        if series is None:
            table[key] = series = Series()
        t = to_seconds(at)
        series.add(t, cpu, mem, keep_after=t - self.horizon.total_seconds(), limit=self.max_samples)
        return series

    # ---- queries ---------------------------------------------------------------------

    def latest_node(self, name: str) -> Sample | None:
        series = self.nodes.get(name)
        return series.latest() if series is not None else None

    def latest_pod(self, key: str) -> Sample | None:
        series = self.pods.get(key)
        return series.latest() if series is not None else None

    def pod_cpu(self, key: str) -> float:
        """The latest CPU usage of a pod in milli-cores (0 without a sample)."""
        series = self.pods.get(key)
        return series.cpu[-1] if series is not None and series.times else 0.0

    def pod_memory(self, key: str) -> float:
        """The latest memory usage of a pod in bytes (0 without a sample)."""
        series = self.pods.get(key)
        return series.memory[-1] if series is not None and series.times else 0.0

    def average_node(
        self, name: str, now: datetime, window: timedelta | None = None
    ) -> Sample | None:
        series = self.nodes.get(name)
        if series is None:
            return None
        return series.average(now, window or self.metrics_period)

    def average_pod(
        self, key: str, now: datetime, window: timedelta | None = None
    ) -> Sample | None:
        series = self.pods.get(key)
        if series is None:
            return None
        return series.average(now, window or self.metrics_period)

    def stale_node(self, name: str, at: datetime) -> Freshness | None:
        """The own time of the node's newest sample when it is stale at ``at`` (its age
        beyond :data:`projections.usage_fresh.STALE_RESOLUTIONS` resolutions), else None
        (fresh, or no readable ``timestamp``)."""
        fresh = self.node_fresh.get(name)
        return fresh if fresh is not None and fresh.stale(to_seconds(at)) else None

    def stale_points(self, name: str) -> list[float]:
        """The ``at`` (POSIX seconds) of the node's held points that were stale when
        recorded, oldest first (a live list: the caller must not change it)."""
        return self.node_stale.get(name) or []

    def node_ago(self, name: str, now: datetime, window: timedelta) -> Sample | None:
        """The node's value one ``window`` before ``now`` (see :meth:`Series.at_or_before`)."""
        series = self.nodes.get(name)
        return series.at_or_before(now - window) if series is not None else None

    # ---- checkpoint ------------------------------------------------------------------

    def dump(self) -> bytes:
        body = {
            "horizon": self.horizon.total_seconds(),
            "max_samples": self.max_samples,
            "metrics_period": self.metrics_period.total_seconds(),
            "pods_since": self.pods_since,
            "nodes": {k: self.nodes[k].fragment() for k in sorted(self.nodes)},
            "pods": {k: self.pods[k].fragment() for k in sorted(self.pods)},
            "node_fresh": {k: list(self.node_fresh[k]) for k in sorted(self.node_fresh)},
            "node_stale": {k: self.node_stale[k] for k in sorted(self.node_stale)},
        }
        return encode_state(self.name, self.position, body, fmt=FORMAT)

    def load(self, state: bytes) -> None:
        position, body = decode_state(self.name, state, fmt=FORMAT)
        self.horizon = timedelta(seconds=body["horizon"])
        self.max_samples = int(body["max_samples"])
        self.metrics_period = timedelta(seconds=body["metrics_period"])
        self.pods_since = body["pods_since"]
        self.nodes = {k: Series.from_json(v) for k, v in body["nodes"].items()}
        self.pods = {k: Series.from_json(v) for k, v in body["pods"].items()}
        self.node_fresh = {
            k: Freshness(float(v[0]), float(v[1])) for k, v in body["node_fresh"].items()
        }
        self.node_stale = {k: [float(t) for t in v] for k, v in body["node_stale"].items()}
        self.position = position
