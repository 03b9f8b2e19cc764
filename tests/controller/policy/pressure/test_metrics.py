"""projections.metrics (the fold) and replay.metrics (its exposition): eviction metrics."""

from __future__ import annotations

from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from projections.metrics import EvictionMetrics, compute_metrics
from replay.metrics import render
from streams.events import Event
from tests.builders import T0
from tests.controller.policy.pressure.harness import (
    GI,
    Loop,
    config,
    node_event,
    node_sample,
    pod_event,
    pod_sample,
    seconds,
)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def cpu_round(extra: list[Event] | None = None, **overrides: object) -> Loop:
    events = [node_event("n1", cpu=100, memory_gi=100)]
    for i in range(6):
        events.append(pod_event(f"p{i}", started=T0 - timedelta(minutes=i)))
        events.append(pod_sample(f"p{i}", T0, cpu_cores=4, memory_gi=2))
    events += [node_sample("n1", seconds(i), cpu_cores=95) for i in (1, 2, 3)]
    loop = Loop(config(predictiveEvict={"enabled": False}, **overrides), sim=True)
    loop.run(events + (extra or []))
    return loop


def test_counts_latency_freed_and_pressure_after() -> None:
    loop = cpu_round([node_sample("n1", seconds(70), cpu_cores=80)])
    got = samples(render(compute_metrics(loop.log)))
    assert (
        got[("koordlet_eviction_total", (("code", "cpu-pressure"), ("reason", "cpu_pressure")))]
        == 3
    )
    assert got[("koordlet_evicted_pods_total", ())] == 3
    assert got[("koordlet_eviction_latency_seconds_count", ())] == 3
    assert got[("koordlet_eviction_latency_seconds_sum", ())] == 30  # 10 s notice each
    assert got[("koordlet_eviction_latency_seconds_bucket", (("le", "5.0"),))] == 0
    assert got[("koordlet_eviction_latency_seconds_bucket", (("le", "10.0"),))] == 3
    assert got[("koordlet_eviction_freed_cpu_cores", (("node", "n1"),))] == 12
    assert got[("koordlet_eviction_freed_memory_bytes", (("node", "n1"),))] == 6 * GI
    assert (
        got[("koordlet_eviction_pressure_after_eviction", (("node", "n1"), ("resource", "cpu")))]
        == 80
    )


@pytest.mark.parametrize(("end", "active"), [(62, 1.0), (63, 0.0)])
def test_cooldown_active_at_the_end_of_the_log(end: int, active: float) -> None:
    loop = cpu_round(
        [node_sample("n1", seconds(end), cpu_cores=50)],
        schedulingOptimization={"evictionTaint": False},
    )
    log = [e for e in loop.log if e.at <= seconds(end)]
    got = samples(render(compute_metrics(log)))
    assert (
        got[("koordlet_eviction_cooldown_active", (("node", "n1"), ("resource", "cpu")))] == active
    )


def test_the_same_log_gives_the_same_text_incrementally_or_at_once() -> None:
    loop = cpu_round()
    once = render(compute_metrics(loop.log))
    live = EvictionMetrics()
    for event in loop.log:
        live.apply(event)
    assert render(live) == once == render(compute_metrics(list(loop.log)))


def predictive(after: list[float]) -> str:
    """A 2 %/min ramp triggers a predictive round at +8 min; ``after`` are later samples."""
    events = [node_event("n1", cpu=100)]
    for i in range(6):
        events.append(pod_event(f"p{i}", started=T0 - timedelta(hours=i + 1)))
        events.append(pod_sample(f"p{i}", T0, cpu_cores=4))
    ramp = [60 + 2 * m for m in range(-10, 9)]
    events += [
        node_sample("n1", T0 + timedelta(minutes=m), cpu_cores=v)
        for m, v in enumerate(ramp, start=-10)
    ]
    events += [
        node_sample("n1", T0 + timedelta(minutes=9 + i), cpu_cores=v) for i, v in enumerate(after)
    ]
    c = config(cpuEvict={"cooldownPeriod": "30m"})
    loop = Loop(c, sim=True)
    loop.run(events)
    assert {d.data["reason"] for d in loop.evictions()} == {"predicted-pressure"}
    return render(compute_metrics(loop.log))


def test_predictive_accuracy_right() -> None:
    # 12 cores of victims are gone by +9 min; 80 % observed + 12 % = 92 % > 90 %
    got = samples(predictive([78, 80]))
    assert got[("koordlet_predictive_eviction_accuracy", ())] == 1.0


def test_predictive_accuracy_wrong() -> None:
    # the load turns: never above 90 % even with the victims back, past the 10-minute window
    got = samples(predictive([60] * 12))
    assert got[("koordlet_predictive_eviction_accuracy", ())] == 0.0


def test_accuracy_absent_until_judged() -> None:
    got = samples(render(compute_metrics(cpu_round().log)))
    assert ("koordlet_predictive_eviction_accuracy", ()) not in got
