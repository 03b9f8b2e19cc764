"""One ``lowNodeUtilization`` round at full scale (5,000 nodes / 150,000 pods by default).

The world is the fold the ``fold`` benchmark left (folded here when it did not run). Five
minutes of usage, one point every 30 s, is put into its usage series through
``Series.add`` (untimed): every node and every pod. Node profile: the first 10 % of nodes
(by name) at 90 % of allocatable, the next 10 % at 10 %, the rest at 50 % (as information,
again with 1 % hot and 1 % cold: a round with a tenth of the victims); pods at their
requests. Timed: the rescheduling plugin's victim function in a session opened by its
interval trigger (``controller.policy.plugins.rescheduling``, seed 002's thresholds 20/20 and
80/85), on the CPU clock (``time.process_time``) beside the wall clock, median and range of
``repeat`` (>= 5) rounds. Before each round one more sample per node and pod is added
(untimed, as the fold adds them) and the round's ``now`` moves on 30 s, so each round
reads windows that slid: the steady state of a controller whose rounds follow the
samples. The very first round, which builds every node's running sums
(:mod:`projections.usage_window`), is reported in the notes. The folded world is frozen out
of the cyclic collector's sight first (``streams.gcpause.freeze_folded``, as ``tide run``
does after its initial fold; replay and simulate pause the collector), so no round pays a
full collection of the 150,000-pod heap. Target <= 200 ms CPU.
Baseline (same run): one pass over the same samples, averaging every node's and every
pod's window (``sum(points) / n``); ``ratio`` = round / pass, both CPU medians.

Info rows: every node's average alone (running sums, and the slice sums a round made
before), the ``usage`` plugin scoring every node once in a session, and the cost per
sample of folding ``metrics.node`` into ``UsageState`` with running sums held against
without (the pressure check's hot path).
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta
from typing import Any

from benchmarks.common import Context, Result, need
from benchmarks.generate import T0

TARGET = 0.200
POINTS = 10
EVERY = timedelta(seconds=30)
SEED = {
    "interval": "10m",
    "metricsPeriod": "5m",
    "strategies": [
        {
            "name": "lowNodeUtilization",
            "params": {
                "thresholds": {"cpu": 20, "memory": 20},
                "targetThresholds": {"cpu": 80, "memory": 85},
            },
        }
    ],
}


def fill_usage(world: Any, now: Any, *, hot: float = 0.1, pods: bool = True) -> None:
    """Five minutes of points for every node (and pod): the first ``hot`` share of the nodes
    at 90 %, as many at 10 %, the rest at 50 % (see the module docstring)."""
    usage_mod = need("projections.usage", "Series", "to_seconds")
    series_cls, seconds = usage_mod.Series, usage_mod.to_seconds
    names = sorted(world.cluster.nodes)
    tenth = max(1, int(len(names) * hot))
    times = [seconds(now - EVERY * (POINTS - 1 - i)) for i in range(POINTS)]
    keep = times[0] - 1.0
    usage = world.usage
    for i, name in enumerate(names):
        share = 0.9 if i < tenth else 0.1 if i < 2 * tenth else 0.5
        alloc = world.cluster.nodes[name].allocatable
        series = series_cls()
        for t in times:
            series.add(t, alloc.milli_cpu * share, alloc.memory * share, keep_after=keep, limit=99)
        usage.nodes[name] = series
    if not pods:
        return
    for key, task in world.cluster.tasks.items():
        series = series_cls()
        for t in times:
            series.add(t, task.resreq.milli_cpu, task.resreq.memory, keep_after=keep, limit=99)
        usage.pods[key] = series


def clocks() -> tuple[float, float]:
    """``(cpu, wall)`` now, in seconds."""
    return time.process_time(), time.perf_counter()


def spread(values: list[float]) -> str:
    """``median [min-max]`` in milliseconds."""
    return (
        f"{statistics.median(values) * 1000:,.1f} ms "
        f"[{min(values) * 1000:,.1f}-{max(values) * 1000:,.1f}]"
    )


def one_pass(world: Any, now: Any, runs: int = 3) -> list[float]:
    """CPU seconds of each of ``runs`` passes: the mean of every node's and pod's points in
    the window."""
    usage_mod = need("projections.usage", "to_seconds")
    from bisect import bisect_right

    end = usage_mod.to_seconds(now)
    start_t = end - 300.0
    tables = (world.usage.nodes, world.usage.pods)
    spent: list[float] = []
    for _ in range(runs):
        began = time.process_time()
        for table in tables:
            for series in table.values():
                lo = bisect_right(series.times, start_t)
                hi = bisect_right(series.times, end)
                n = hi - lo
                if n:
                    sum(series.cpu[lo:hi]) / n
                    sum(series.memory[lo:hi]) / n
        spent.append(time.process_time() - began)
    return spent


def advance(world: Any, now: Any, *, pods: bool = True) -> Any:
    """One more sample for every node (and pod), 30 s after ``now``, each equal to the
    series' newest; returns the new ``now``."""
    usage_mod = need("projections.usage", "to_seconds")
    now = now + EVERY
    t = usage_mod.to_seconds(now)
    keep = t - 7200.0
    tables = (world.usage.nodes, world.usage.pods) if pods else (world.usage.nodes,)
    for table in tables:
        for series in table.values():
            if series.times:
                series.add(t, series.cpu[-1], series.memory[-1], keep_after=keep, limit=1440)
    return now


def node_averages(world: Any, now: Any, runs: int) -> tuple[list[float], list[float]]:
    """CPU seconds of every node's average: ``(running sums, slice sums)``, interleaved."""
    usage_mod = need("projections.usage", "to_seconds", "Series")
    window_mod = need("projections.usage_window", "slice_mean")
    from bisect import bisect_right

    end = usage_mod.to_seconds(now)
    series_all = [world.usage.nodes[name] for name in sorted(world.usage.nodes)]
    running: list[float] = []
    sliced: list[float] = []
    for _ in range(runs):
        began = time.process_time()
        for series in series_all:
            series.mean(end, 300.0)
        running.append(time.process_time() - began)
        began = time.process_time()
        for series in series_all:
            times = series.times
            window_mod.slice_mean(
                series, bisect_right(times, end - 300.0), bisect_right(times, end)
            )
        sliced.append(time.process_time() - began)
    return running, sliced


def usage_scoring(world: Any, now: Any, runs: int) -> list[float]:
    """CPU seconds of the ``usage`` plugin scoring every node once in a session (what an
    allocate session with ``usage`` listed pays once; later tasks read its memo)."""
    usage_mod = need("controller.policy.plugins.usage", "build", "parse_args", "NAME")
    session_mod = need("controller.policy.framework.session", "Session")
    tiers_mod = need("controller.policy.framework.tiers", "PluginConf", "TierConf")
    plugin_mod = need("controller.policy.framework.plugin", "PluginContext")
    from zoneinfo import ZoneInfo

    from benchmarks.bench_policy import trigger

    ctx_plugin = plugin_mod.PluginContext(ZoneInfo("UTC"), "volcano")
    plugin = usage_mod.build(usage_mod.parse_args({}), ctx_plugin)
    tiers = [tiers_mod.TierConf((tiers_mod.PluginConf.of(usage_mod.NAME, all_flags=True),))]
    task = world.cluster.tasks[min(world.cluster.tasks)]
    spent: list[float] = []
    for _ in range(runs):
        ssn = session_mod.Session(
            world, trigger(now, "session-tick", "tick"), tiers=tiers, ctx=ctx_plugin
        )
        began = time.process_time()
        ssn.open([plugin])
        for node in ssn.view.node_list:
            ssn.node_order(task, node)
        spent.append(time.process_time() - began)
    return spent


def fold_cost(runs: int) -> tuple[list[float], list[float]]:
    """CPU seconds per ``metrics.node`` sample folded into ``UsageState`` (1,000 nodes ×
    60 samples, 5 s apart): ``(running sums held, none held)``, interleaved."""
    usage_mod = need("projections.usage", "UsageState", "to_seconds")
    from streams.events import make_event

    events = [
        make_event(
            "metrics.node",
            T0 + timedelta(seconds=5 * i),
            {"metadata": {"name": f"n{n:04d}"}, "usage": {"cpu": f"{n + i}m", "memory": "3Gi"}},
        )
        for i in range(60)
        for n in range(1000)
    ]
    end = usage_mod.to_seconds(T0)
    held: list[float] = []
    bare: list[float] = []
    for _ in range(runs):
        for keep, out in ((True, held), (False, bare)):
            state = usage_mod.UsageState()
            for name in sorted({e.data["metadata"]["name"] for e in events}):
                state.apply(make_event("metrics.node", T0, {"metadata": {"name": name}}))
                if keep:
                    state.nodes[name].mean(end, 300.0)
            began = time.process_time()
            for event in events:
                state.apply(event)
            out.append((time.process_time() - began) / len(events))
    return held, bare


def info(name: str, value: float, unit: str, base: float, label: str, notes: str = "") -> Result:
    """An ``(info)`` row of this benchmark: ``value`` against ``base`` (same unit)."""
    return Result(
        "rescheduling", name, value, unit, base, label, value / base, "(info)", None, notes=notes
    )


def run(ctx: Context) -> list[Result]:
    resched = need(
        "controller.policy.plugins.rescheduling", "build", "parse_args", "TRIGGER", "KIND"
    )
    session_mod = need("controller.policy.framework.session", "Session")
    tiers_mod = need("controller.policy.framework.tiers", "PluginConf", "TierConf")
    plugin_mod = need("controller.policy.framework.plugin", "PluginContext")
    gcpause = need("streams.gcpause", "freeze_folded")
    from zoneinfo import ZoneInfo

    from benchmarks.bench_policy import trigger, world_for

    world = world_for(ctx)
    start = T0 + timedelta(minutes=20)
    fill_usage(world, start)
    world.history.apply(trigger(start - timedelta(minutes=10), resched.TRIGGER, resched.KIND))
    # as `tide run` does after its initial fold (streams.gcpause.freeze_folded): the
    # folded world is out of the cyclic collector's sight, so no round pays a full
    # collection walking 150,000 pods (replay and simulate pause the collector)
    heap = gcpause.freeze_folded()
    try:
        ctx_plugin = plugin_mod.PluginContext(ZoneInfo("UTC"), "volcano")
        plugin = resched.build(resched.parse_args(SEED), ctx_plugin)
        tiers = [tiers_mod.TierConf((tiers_mod.PluginConf.of("rescheduling", all_flags=True),))]
        runs = max(5, ctx.repeat)

        def measure(now: Any, *, pods: bool) -> tuple[list[float], list[float], float, int, Any]:
            """``(cpu, wall, first cpu, victims, now)``: a cold round, then ``runs`` rounds each
            after one more sample everywhere."""
            cpu: list[float] = []
            wall: list[float] = []
            first, victims = 0.0, 0
            for i in range(runs + 1):
                if i:
                    now = advance(world, now, pods=pods)
                firing = trigger(now, resched.TRIGGER, resched.KIND)
                c0, w0 = clocks()
                ssn = session_mod.Session(world, firing, tiers=tiers, ctx=ctx_plugin)
                ssn.open([plugin])
                victims = len(ssn.victim_tasks([]))
                c1, w1 = clocks()
                if i:
                    cpu.append(c1 - c0)
                    wall.append(w1 - w0)
                else:
                    first = c1 - c0
            return cpu, wall, first, victims, now

        cpu, wall, first, victims, now = measure(start, pods=True)
        base = one_pass(world, now)
        round_cpu, base_cpu = statistics.median(cpu), statistics.median(base)
        nodes, pods = len(world.usage.nodes), len(world.usage.pods)
        rows = [
            Result(
                "rescheduling",
                "lowNodeUtilization round (10 % of nodes hot), CPU",
                round_cpu * 1000,
                "ms",
                base_cpu * 1000,
                f"one pass over {nodes:,} node + {pods:,} pod windows (CPU)",
                round_cpu / base_cpu,
                f"<= {TARGET * 1000:,.0f} ms",
                round_cpu <= TARGET,
                notes=(
                    f"{victims:,} victims; CPU {spread(cpu)}; wall {spread(wall)}; pass CPU "
                    f"{spread(base)}; first round (builds the running sums) {first * 1000:,.1f} ms"
                ),
            )
        ]
        running, sliced = node_averages(world, now, runs)
        rows.append(
            info(
                "  every node's average, running sums",
                statistics.median(running) * 1000,
                "ms",
                statistics.median(sliced) * 1000,
                "the same averages by slice sums (CPU)",
                f"running {spread(running)}; slices {spread(sliced)}",
            )
        )
        scoring = usage_scoring(world, now, runs)
        rows.append(
            info(
                "  usage plugin: every node scored once per session",
                statistics.median(scoring) * 1000,
                "ms",
                statistics.median(sliced) * 1000,
                "every node's average by slice sums (CPU)",
                f"CPU {spread(scoring)}",
            )
        )
        fill_usage(world, now, hot=0.01, pods=False)
        cpu, wall, first, victims, now = measure(now, pods=False)
        rows.append(
            info(
                "  same round, 1 % of nodes hot, CPU",
                statistics.median(cpu) * 1000,
                "ms",
                base_cpu * 1000,
                "the same pass",
                f"{victims:,} victims; CPU {spread(cpu)}; wall {spread(wall)}; "
                f"first round {first * 1000:,.1f} ms",
            )
        )
        held, bare = fold_cost(runs)
        rows.append(
            info(
                "  metrics.node fold per sample, running sums held",
                statistics.median(held) * 1e6,
                "µs",
                statistics.median(bare) * 1e6,
                "the same fold, no running sums (CPU)",
            )
        )
        return rows
    finally:
        heap.thaw()
