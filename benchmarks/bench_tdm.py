"""TDM window close at full scale, alone and with the session that follows at the same instant.

``python -m benchmarks.run --only tdm``. The world is the fold the ``fold`` benchmark left
(folded here when it did not run); the configuration and trigger are ``bench_policy``'s
(actions ``allocate, shuffle``, ``tdm/rz1/window-end`` at 21:00:01).

Rows:

* the close cycle alone (``run_cycle`` on the window-end trigger);
* the close plus the ``session-tick`` session at the same instant, run on the world with
  the close's decisions folded in (as the loop does: decisions are written and folded
  before the next trigger is decided). The decisions are folded off the log (offset -1)
  and taken back afterwards (``effect.failed`` for each, which reverts the cluster's
  overlays; the small projections are restored from a dump), so every repetition starts
  from the same world.

Timing: CPU (``time.process_time``) beside the wall clock, median and range over
``max(5, repeat)`` repetitions, each interleaved with the raw baseline (one Python pass
over every task) measured in the same run. The folded world is frozen out of the cyclic
collector's sight first (``streams.gcpause.freeze_folded``), as ``tide run`` does after
its initial fold (replay and simulate pause the collector): otherwise whichever
repetition happens to trigger a full collection walks all 150,000 pods and pays several
times the close itself (one repetition of five measured ~1 s where the others took
~0.25 s).
"""

from __future__ import annotations

import statistics
import time
from datetime import UTC, datetime
from typing import Any

from benchmarks.bench_policy import TDM_TARGET, registry, scheduler_config, trigger, world_for
from benchmarks.common import Context, Result, need

CLOSE_AT = datetime(2026, 11, 21, 21, 0, 1, tzinfo=UTC)


def _pass(world: Any) -> float:
    start = time.process_time()
    for task in world.cluster.tasks.values():
        task.status  # noqa: B018 - the pass is the point
    return time.process_time() - start


def _fold_and_tick(
    world: Any, decisions: list[Any], tick: Any, config: Any, plugins: Any
) -> tuple[int, float]:
    """Fold ``decisions`` off the log, run the tick's session, take the decisions back:
    the tick's decisions and its session's CPU seconds."""
    make_event = need("streams.events", "make_event").make_event
    run_cycle = need("controller.policy.engine", "run_cycle").run_cycle
    saved = [(m, m.dump()) for m in world.members if m is not world.cluster]
    for event in decisions:
        world.apply(event)
    try:
        start = time.process_time()
        found = run_cycle(world, tick, config, registry=plugins)
        return len(found), time.process_time() - start
    finally:
        for event in decisions:
            data = {"decision": event.id, "kind": "evict", "target": "bench", "error": "bench"}
            world.cluster.apply(make_event("effect.failed", event.at, data, cause=event.id))
        for member, state in saved:
            member.load(state)


def _spread(values: list[float]) -> str:
    low, high = min(values) * 1000, max(values) * 1000
    return f"median {statistics.median(values) * 1000:,.1f} ms [{low:,.1f}-{high:,.1f}]"


def run(ctx: Context) -> list[Result]:
    """The two TDM rows (see the module docstring)."""
    run_cycle = need("controller.policy.engine", "run_cycle").run_cycle
    load_config = need("controller.policy.loader", "load_config").load_config
    world = world_for(ctx)
    plugins, _ = registry()
    config = load_config(scheduler_config("allocate, shuffle"), plugins=plugins)
    close = trigger(CLOSE_AT, "tdm/rz1/window-end", "window-end", "rz1")
    tick = trigger(CLOSE_AT, "session-tick", "tick")
    times: dict[str, list[float]] = {"close": [], "both": [], "wall": [], "pass": []}
    decisions: list[Any] = []
    followed = 0
    heap = need("streams.gcpause", "freeze_folded").freeze_folded()
    try:
        for _ in range(max(5, ctx.repeat)):
            times["pass"].append(_pass(world))
            cpu, wall = time.process_time(), time.perf_counter()
            decisions = run_cycle(world, close, config, registry=plugins)
            close_cpu = time.process_time() - cpu
            times["wall"].append(time.perf_counter() - wall)
            times["close"].append(close_cpu)
            # the fold of the decisions is the loop's, not the policy's: only the two cycles
            followed, tick_cpu = _fold_and_tick(world, decisions, tick, config, plugins)
            times["both"].append(close_cpu + tick_cpu)
    finally:
        heap.thaw()
    base = statistics.median(times["pass"])
    tasks = len(world.cluster.tasks)
    rows = []
    for metric, key, note in (
        ("TDM window close, CPU", "close", f"{len(decisions):,} decisions"),
        (
            "TDM close + the session tick at the same instant, CPU",
            "both",
            f"the tick decided {followed:,} (folding the close's decisions not counted)",
        ),
    ):
        median = statistics.median(times[key])
        rows.append(
            Result(
                "tdm",
                metric,
                median * 1000,
                "ms",
                base * 1000,
                f"one pass over {tasks:,} tasks (CPU)",
                median / base if base else None,
                f"<= {TDM_TARGET * 1000:,.0f} ms",
                median <= TDM_TARGET,
                notes=f"{_spread(times[key])}; {note}; close wall {_spread(times['wall'])}",
                extra=dict(times),
            )
        )
    return rows
