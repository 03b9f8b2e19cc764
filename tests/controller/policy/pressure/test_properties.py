"""Properties of pressure eviction over generated clusters, pressure curves and configs.

* LS, LSR, LSE and SYSTEM pods are never evicted by pressure (cpu, memory, OOM risk,
  prediction); LSR, LSE and SYSTEM are not evicted at all;
* no 60 s window on a node holds more than ``maxEvictionPerMinute`` evictions;
* no round holds more than its ``maxEvictionPerBatch`` victims;
* no pod (uid) is evicted twice;
* the run is deterministic (the same inputs give the same decisions, ids included).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from streams.events import Event, parse_time
from tests.builders import T0
from tests.controller.policy.pressure.harness import (
    Loop,
    config,
    node_event,
    node_sample,
    pod_event,
    pod_sample,
    seconds,
)

QOS = ["BE", "BE", "BE", "LS", "LSR", "LSE", "SYSTEM"]
PRESSURE_REASONS = {"cpu-pressure", "memory-pressure", "oom-risk", "predicted-pressure"}
LEVELS = [40, 60, 75, 84, 86, 89, 91, 93, 96, 99]

pods_st = st.lists(
    st.tuples(
        st.sampled_from(QOS),
        st.sampled_from([-10, 0, 10]),
        st.integers(0, 12),  # cpu cores
        st.integers(0, 10),  # memory Gi
        st.integers(0, 3),  # OOM kills seen
    ),
    min_size=1,
    max_size=12,
)
curve_st = st.lists(
    st.tuples(st.sampled_from(LEVELS), st.sampled_from(LEVELS), st.sampled_from([1, 5, 10, 30])),
    min_size=3,
    max_size=40,
)
config_st = st.fixed_dictionaries(
    {
        "per_batch": st.integers(1, 5),
        "per_minute": st.integers(1, 6),
        "cooldown": st.sampled_from([0, 5, 20, 60]),
        "stable": st.integers(1, 3),
        "graceful": st.booleans(),
        "batch_size": st.integers(1, 3),
        "interval": st.sampled_from([0, 5, 10]),
        "verify": st.booleans(),
        "adaptive": st.booleans(),
        "oom_threshold": st.integers(1, 3),
    }
)


def build(
    pods: list[tuple[str, int, int, int, int]], curve: list[tuple[int, int, int]]
) -> list[Event]:
    events: list[Event] = [node_event("n1", cpu=100, memory_gi=100)]
    for i, (qos, priority, cpu, mem, kills) in enumerate(pods):
        name = f"p{i:02}"
        statuses: list[dict[str, Any] | None] = [None]  # no termination: one plain event
        if kills:
            statuses = [
                {
                    "name": "main",
                    "restartCount": kills,
                    "state": {"running": {}},
                    "lastState": {
                        "terminated": {
                            "reason": "OOMKilled",
                            "containerID": f"{name}-{k}",
                            "finishedAt": f"2026-11-21T19:{k:02}:00Z",
                        }
                    },
                }
                for k in range(1, kills + 1)
            ]
        for status in statuses:  # one watch event per termination
            events.append(
                pod_event(
                    name,
                    qos=qos,
                    priority=priority,
                    started=T0 - timedelta(minutes=i),
                    statuses=[status] if status else None,
                )
            )
        events.append(pod_sample(name, T0, cpu_cores=cpu, memory_gi=mem))
    t = 0.0
    for cpu_pct, mem_pct, step in curve:
        t += step
        events.append(node_sample("n1", seconds(t), cpu_cores=cpu_pct, memory_gi=mem_pct))
    return events


def eviction_config(c: dict[str, Any]) -> Any:
    rate = {
        "maxEvictionPerBatch": c["per_batch"],
        "maxEvictionPerMinute": c["per_minute"],
        "cooldownPeriod": c["cooldown"],
    }
    return config(
        cpuEvict=rate,
        memoryEvict=rate,
        pressureStableThreshold=c["stable"],
        adaptiveCooldown=c["adaptive"],
        faultyEvict={"oomCountThreshold": c["oom_threshold"]},
        predictiveEvict={"trendWindow": "60s", "predictionWindow": "60s"},
        gracefulEviction={
            "enabled": c["graceful"],
            "batchSize": c["batch_size"],
            "batchInterval": c["interval"],
            "verifyAfterEviction": c["verify"],
        },
    )


def qos_of(loop: Loop, decision: Event) -> str:
    labels = decision.data["evidence"]["victim"]["qos"]
    return str(labels)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pods=pods_st, curve=curve_st, c=config_st, sim=st.booleans())
def test_pressure_eviction_properties(
    pods: list[tuple[str, int, int, int, int]],
    curve: list[tuple[int, int, int]],
    c: dict[str, Any],
    sim: bool,
) -> None:
    events = build(pods, curve)
    cfg = eviction_config(c)
    loop = Loop(cfg, sim=sim)
    loop.run(events)
    evictions = loop.evictions()
    event(f"evictions: {min(len(evictions), 5)}{'+' if len(evictions) >= 5 else ''}")
    for reason in sorted({d.data["reason"] for d in evictions}):
        event(f"reason: {reason}")

    for d in evictions:
        qos = qos_of(loop, d)
        assert qos not in ("LSR", "LSE", "SYSTEM"), d.data
        if d.data["reason"] in PRESSURE_REASONS:
            assert qos == "BE", d.data

    uids = [d.data["uid"] for d in evictions]
    assert len(uids) == len(set(uids)), "a pod was evicted twice"

    times = sorted(parse_time(d.data["evict_at"]) for d in evictions)
    for i, end in enumerate(times):
        in_window = [t for t in times[: i + 1] if t > end - timedelta(seconds=60)]
        assert len(in_window) <= c["per_minute"], (end, times)

    per_round: dict[str, int] = {}
    for d in evictions:
        round_id = d.data["evidence"]["round"]["id"]
        per_round[round_id] = per_round.get(round_id, 0) + 1
    assert all(n <= c["per_batch"] for n in per_round.values()), per_round

    again = Loop(cfg, sim=sim)
    again.run(events)
    assert [d.id for d in again.decisions] == [d.id for d in loop.decisions]
