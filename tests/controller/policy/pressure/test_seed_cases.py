"""The seed's worked cases: §9.4 victim choice, §9.5 rate control, §9.7 prediction."""

from __future__ import annotations

from datetime import timedelta

from streams.events import Event
from tests.builders import T0
from tests.controller.policy.pressure.harness import (
    Loop,
    config,
    evicted,
    node_event,
    node_sample,
    pod_event,
    pod_sample,
    seconds,
)

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


def oom_statuses(kills: int) -> list[dict[str, object]]:
    """A container whose last termination was its ``kills``-th OOM kill (as first seen)."""
    return [
        {
            "name": "main",
            "restartCount": kills,
            "state": {"running": {}},
            "lastState": {
                "terminated": {
                    "reason": "OOMKilled",
                    "containerID": f"c-{kills}",
                    "finishedAt": "2026-11-20T00:00:00Z",
                }
            },
        }
    ]


def five_pods() -> list[Event]:
    """Seed §9.4's table: priority, CPU used, running time, OOM count."""
    table = [
        ("be-1", 0, 5, 2 * DAY, 0),
        ("be-2", -10, 8, DAY, 1),
        ("be-3", 0, 3, 5 * HOUR, 0),
        ("be-4", -10, 6, 3 * DAY, 2),
        ("be-5", 10, 4, HOUR, 0),
    ]
    events = [node_event("n1", cpu=100, memory_gi=100)]
    for name, priority, cpu, running, ooms in table:
        events.append(
            pod_event(
                name,
                priority=priority,
                started=T0 - running,
                statuses=oom_statuses(ooms) if ooms else None,
            )
        )
        events.append(pod_sample(name, T0, cpu_cores=cpu))
    return events


def test_seed_9_4_five_pods_evicts_exactly_be2_and_be4() -> None:
    # 95 % CPU on a 100-core node, threshold 90, margin 5: free 10 cores.
    samples = [node_sample("n1", seconds(i), cpu_cores=95) for i in (1, 2, 3)]
    loop = Loop(config())
    decisions = loop.run(five_pods() + samples)
    assert sorted(evicted(decisions)) == ["be-2", "be-4"]
    evictions = loop.evictions()
    assert {d.data["reason"] for d in evictions} == {"cpu-pressure"}
    assert {d.cause for d in evictions} == {samples[2].id}
    assert {d.at for d in evictions} == {samples[2].at}
    evidence = evictions[0].data["evidence"]
    assert evidence["target"] == 10_000
    assert evidence["order"] == [
        "default/be-2",
        "default/be-4",
        "default/be-1",
        "default/be-3",
        "default/be-5",
    ]
    assert evidence["freed"] == 14_000
    assert evidence["streak"] == [95.0, 95.0, 95.0]


def test_seed_9_4_does_not_evict_before_the_third_check() -> None:
    samples = [node_sample("n1", seconds(i), cpu_cores=95) for i in (1, 2)]
    assert evicted(Loop(config()).run(five_pods() + samples)) == []


def test_seed_9_5_fluctuating_pressure_one_round_then_quiet_cooldown() -> None:
    # Pressure 95 for 3 checks → one round (≤ 3 evictions), then 70 / 93 / 65 within the
    # 60 s cooldown → nothing; after the cooldown pressure stays 60-70 → nothing.
    events = [node_event("n1", cpu=100)]
    for i in range(8):
        events.append(pod_event(f"be-{i}", started=T0 - timedelta(minutes=i)))
        events.append(pod_sample(f"be-{i}", T0, cpu_cores=3))
    pressure = [95, 95, 95, 70, 93, 93, 93, 65, 93, 93, 65, 60, 70, 62, 66, 70]
    events += [node_sample("n1", seconds(5 * (i + 1)), cpu_cores=p) for i, p in enumerate(pressure)]
    loop = Loop(config())
    loop.run(events)
    evictions = loop.evictions()
    assert 1 <= len(evictions) <= 3
    assert {d.at for d in evictions} == {seconds(15)}
    # the 93s at 25-35 s and 45-50 s are inside the cooldown (15 s + 60 s)
    cooldown = evictions[0].data["evidence"]["cooldown"]
    assert cooldown["seconds"] == 60


def test_seed_9_5_pressure_persisting_after_cooldown_starts_a_second_round() -> None:
    events = [node_event("n1", cpu=100)]
    for i in range(8):
        events.append(pod_event(f"be-{i}", started=T0 - timedelta(minutes=i)))
        events.append(pod_sample(f"be-{i}", T0, cpu_cores=1))
    events += [node_sample("n1", seconds(10 * i), cpu_cores=96) for i in range(1, 10)]
    loop = Loop(config())
    loop.run(events)
    times = sorted({d.at for d in loop.evictions()})
    assert times == [seconds(30), seconds(90)]  # 30 s + 60 s cooldown
    assert all(len([d for d in loop.evictions() if d.at == t]) == 3 for t in times)


def test_seed_9_7_rising_trend_evicts_before_the_peak() -> None:
    # CPU climbs 60 % → 70 % in 5 minutes, then accelerates to a 90 % peak at 10:15.
    # Samples each minute; the prediction (10-minute trend, 10 minutes ahead) must evict
    # before the node ever reaches 90 %.
    events = [node_event("n1", cpu=100)]
    for i in range(4):
        events.append(pod_event(f"be-{i}", started=T0 - timedelta(hours=i + 1)))
        events.append(pod_sample(f"be-{i}", T0, cpu_cores=6))
    curve = {m: 50 + m for m in range(-10, 1)}  # 1 %/min up to 60 % at T0
    curve.update({m: 60 + 2 * m for m in range(1, 6)})  # 70 % at +5
    curve.update({m: 70 + 3 * (m - 5) for m in range(6, 11)})  # 85 % at +10
    curve.update({m: 85 + (m - 10) for m in range(11, 16)})  # 90 % peak at +15
    events += [
        node_sample("n1", T0 + timedelta(minutes=m), cpu_cores=p) for m, p in sorted(curve.items())
    ]
    loop = Loop(config())
    loop.run(events)
    evictions = loop.evictions()
    assert evictions, "predictive eviction should have fired"
    first = evictions[0]
    assert first.data["reason"] == "predicted-pressure"
    assert first.at < T0 + timedelta(minutes=15)
    assert first.data["evidence"]["pressure"] < 90
    prediction = first.data["evidence"]["prediction"]
    assert prediction["predicted"] > 90
    assert first.data["evidence"]["target"] > 0
