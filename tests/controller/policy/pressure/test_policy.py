"""check_node: triggers, stability, amounts, limits at and around their boundaries."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from controller.policy.pressure import check_node, reserved_for_ls
from controller.policy.pressure.config import EvictionConfig
from streams.events import Event, parse_time
from tests.builders import T0, build_node, watch
from tests.controller.policy.pressure.harness import (
    GI,
    Loop,
    config,
    evicted,
    new_world,
    node_event,
    node_sample,
    pod_event,
    pod_sample,
    seconds,
)

QUIET = {"predictiveEvict": {"enabled": False}, "faultyEvict": {"enabled": False}}


def cfg(**overrides: Any) -> EvictionConfig:
    return config(**{**QUIET, **overrides})


def cluster(
    pods: int = 10, *, cpu_each: float = 1, mem_each: float = 1, qos: str = "BE"
) -> list[Event]:
    events = [node_event("n1", cpu=100, memory_gi=100)]
    for i in range(pods):
        events.append(pod_event(f"p{i:02}", qos=qos, started=T0 - timedelta(minutes=i)))
        events.append(pod_sample(f"p{i:02}", T0, cpu_cores=cpu_each, memory_gi=mem_each))
    return events


def cpu_samples(values: list[float], *, step: float = 1, start: float = 1) -> list[Event]:
    return [node_sample("n1", seconds(start + i * step), cpu_cores=v) for i, v in enumerate(values)]


def run(events: list[Event], config_: EvictionConfig | None = None, **kw: Any) -> Loop:
    loop = Loop(config_ or cfg(), **kw)
    loop.run(events)
    return loop


@pytest.mark.parametrize(
    ("values", "evicts_at"),
    [
        pytest.param([95, 95], [], id="two-checks-not-stable"),
        pytest.param([95, 95, 95], [3], id="three-checks-stable"),
        pytest.param([95, 89, 95, 95], [], id="dip-resets-the-streak"),
        pytest.param([95, 89, 95, 95, 95], [5], id="stable-again"),
        pytest.param([90, 90, 90], [], id="at-threshold-is-not-above"),
        pytest.param([90.1, 90.1, 90.1], [3], id="just-above-threshold"),
    ],
)
def test_cpu_trigger_needs_stable_pressure_strictly_above(
    values: list[float], evicts_at: list[int]
) -> None:
    loop = run(cluster() + cpu_samples(values))
    assert sorted({int((d.at - T0).total_seconds()) for d in loop.evictions()}) == evicts_at
    assert {d.data["reason"] for d in loop.evictions()} <= {"cpu-pressure"}


@pytest.mark.parametrize("stable", [1, 2, 5])
def test_stable_threshold_is_configurable(stable: int) -> None:
    loop = run(cluster() + cpu_samples([95] * 6), cfg(pressureStableThreshold=stable))
    assert min(d.at for d in loop.evictions()) == seconds(stable)


def test_amount_to_free_cpu_and_victims_until_reached() -> None:
    # 95 % of 100 cores, threshold 90, margin 5 → free 10 cores; 4-core pods → 3 victims
    loop = run(cluster(5, cpu_each=4) + cpu_samples([95] * 3))
    evictions = loop.evictions()
    assert len(evictions) == 3
    evidence = evictions[0].data["evidence"]
    assert (evidence["target"], evidence["level"], evidence["freed"]) == (10_000, 85, 12_000)


def test_release_margin_changes_the_target() -> None:
    loop = run(cluster(5, cpu_each=4) + cpu_samples([95] * 3), cfg(releaseMargin=0))
    assert loop.evictions()[0].data["evidence"]["target"] == 5_000
    assert len(loop.evictions()) == 2


def test_memory_pressure_amount_and_per_batch_limit() -> None:
    # 90 % of 100 Gi, threshold 85, margin 5 → free 10 Gi; memory rounds take at most 2
    events = cluster(5, mem_each=4)
    events += [node_sample("n1", seconds(i), cpu_cores=10, memory_gi=90) for i in (1, 2, 3)]
    evictions = run(events).evictions()
    assert [d.data["reason"] for d in evictions] == ["memory-pressure"] * 2
    assert evictions[0].data["evidence"]["target"] == 10 * GI


def test_oom_risk_uses_allocatable_and_wins_over_memory_pressure() -> None:
    node = build_node("n1", cpu="100", memory="90Gi", capacity={"cpu": "100", "memory": "100Gi"})
    events = [watch("nodes", node), *cluster(5, mem_each=4)[1:]]
    # 82 Gi: 82 % of capacity (< 85) but 91 % of allocatable (> 90) → oom-risk
    events += [node_sample("n1", seconds(i), cpu_cores=10, memory_gi=82) for i in (1, 2, 3)]
    evictions = run(events).evictions()
    assert {d.data["reason"] for d in evictions} == {"oom-risk"}
    evidence = evictions[0].data["evidence"]
    assert evidence["pressure"] == pytest.approx(91.111, abs=0.001)
    assert evidence["threshold"] == 90
    assert evidence["memory_pressure"] == 82


def test_oom_risk_frees_enough_to_leave_the_risk_even_below_the_pressure_level() -> None:
    node = build_node("n1", cpu="100", memory="80Gi", capacity={"cpu": "100", "memory": "100Gi"})
    events = [watch("nodes", node), *cluster(5, mem_each=4)[1:]]
    # 75 Gi: 75 % of capacity (below the 80 % level) but 93.75 % of allocatable
    events += [node_sample("n1", seconds(i), cpu_cores=10, memory_gi=75) for i in (1, 2, 3)]
    evictions = run(events).evictions()
    assert [d.data["reason"] for d in evictions] == ["oom-risk", "oom-risk"]
    # back to 85 % of 80 Gi = 68 Gi: free 7 Gi → two 4 Gi pods
    assert evictions[0].data["evidence"]["target"] == 7 * GI


def test_oom_risk_needs_stability_too() -> None:
    node = build_node("n1", cpu="100", memory="90Gi", capacity={"cpu": "100", "memory": "100Gi"})
    events = [watch("nodes", node), *cluster(5, mem_each=4)[1:]]
    events += [node_sample("n1", seconds(i), cpu_cores=10, memory_gi=82) for i in (1, 2)]
    assert run(events).evictions() == []


def test_both_resources_in_one_check_share_freed_victims() -> None:
    events = cluster(6, cpu_each=5, mem_each=5)
    events += [node_sample("n1", seconds(i), cpu_cores=95, memory_gi=90) for i in (1, 2, 3)]
    loop = run(events)
    reasons = [d.data["reason"] for d in loop.evictions()]
    # memory first: 2 victims free 10 cores too → CPU target (10 cores) already covered
    assert reasons == ["memory-pressure", "memory-pressure"]
    assert len(set(evicted(loop.decisions))) == len(evicted(loop.decisions))


def test_terminating_pods_count_as_freed() -> None:
    from tests.builders import build_pod

    leaving = build_pod(
        "default", "leaving", node="n1", deleting=T0, labels={"koordinator.sh/qosClass": "BE"}
    )
    events = [
        *cluster(5, cpu_each=4),
        watch("pods", leaving),
        pod_sample("leaving", T0, cpu_cores=7),
    ]
    loop = run(events + cpu_samples([95] * 3))
    # 7 cores already leaving; 3 more needed → one 4-core victim
    assert len(loop.evictions()) == 1
    assert loop.evictions()[0].data["evidence"]["freed_before"] == 7000


def test_nothing_to_free_starts_no_cooldown() -> None:
    loop = run(cluster(5, qos="LS") + cpu_samples([95] * 6))
    assert loop.decisions == []
    assert loop.world.pressure.cooldowns == {}


def test_ls_pods_are_never_evicted_by_pressure() -> None:
    events = cluster(3, qos="LS")
    events += [pod_event("be", started=T0), pod_sample("be", T0, cpu_cores=1)]
    loop = run(events + cpu_samples([99] * 5))
    assert evicted(loop.decisions) == ["be"]


@pytest.mark.parametrize(
    ("overrides", "evicts"),
    [
        pytest.param({}, True, id="enabled"),
        pytest.param({"enabled": False}, False, id="eviction-off"),
        pytest.param({"cpuEvict": {"enabled": False}}, False, id="cpu-off"),
        pytest.param({"memoryEvict": {"enabled": False}}, True, id="memory-off-cpu-still-on"),
    ],
)
def test_switches(overrides: dict[str, Any], evicts: bool) -> None:
    loop = run(cluster() + cpu_samples([95] * 3), cfg(**overrides))
    assert bool(loop.evictions()) is evicts


def test_not_ready_node_is_not_checked() -> None:
    events = [
        watch("nodes", build_node("n1", cpu="100", memory="100Gi", ready=False)),
        *cluster()[1:],
    ]
    assert run(events + cpu_samples([95] * 3)).decisions == []


# ---- rate control ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("second_check", "second_round"),
    [
        pytest.param(62, False, id="one-second-before-cooldown-ends"),
        pytest.param(63, True, id="when-cooldown-ends"),
    ],
)
def test_cooldown_boundary(second_check: int, second_round: bool) -> None:
    values = [*cpu_samples([95] * 3), node_sample("n1", seconds(second_check), cpu_cores=95)]
    loop = run(cluster(10) + values, cfg(adaptiveCooldown=False))
    rounds = sorted({d.at for d in loop.evictions()})
    assert rounds == ([seconds(3), seconds(second_check)] if second_round else [seconds(3)])


@pytest.mark.parametrize(
    ("limit", "victims"),
    [
        pytest.param(1, 1, id="batch-1"),
        pytest.param(3, 3, id="batch-3"),
        pytest.param(5, 5, id="batch-5"),
    ],
)
def test_max_eviction_per_batch(limit: int, victims: int) -> None:
    loop = run(
        cluster(10) + cpu_samples([99] * 3),
        cfg(cpuEvict={"maxEvictionPerBatch": limit}, gracefulEviction={"enabled": False}),
    )
    assert len(loop.evictions()) == victims


def test_max_eviction_per_minute_boundary() -> None:
    # cooldown 0: rounds could run at every check; the 60 s window caps them at 5.
    c = cfg(
        cpuEvict={"cooldownPeriod": "0s"},
        adaptiveCooldown=False,
        gracefulEviction={"enabled": False},
    )
    values = cpu_samples([99] * 3) + [
        node_sample("n1", seconds(t), cpu_cores=99) for t in (4, 5, 30, 62, 63)
    ]
    loop = run(cluster(20) + values, c)
    by_time: dict[int, int] = {}
    for d in loop.evictions():
        key = int((d.at - T0).total_seconds())
        by_time[key] = by_time.get(key, 0) + 1
    # 3 at t=3, 2 at t=4 (5 in the window), none until the t=3 ones leave the window at 63
    assert by_time == {3: 3, 4: 2, 63: 3}


def oom_killed(times: int) -> list[Event]:
    """Watch events showing ``times`` distinct OOM kills of pod ``faulty``."""
    events = []
    for n in range(1, times + 1):
        status = {
            "name": "main",
            "restartCount": n,
            "state": {"running": {}},
            "lastState": {
                "terminated": {
                    "reason": "OOMKilled",
                    "containerID": f"c{n}",
                    "finishedAt": f"2026-11-21T19:0{n}:00Z",
                }
            },
        }
        events.append(pod_event("faulty", started=T0 - timedelta(hours=1), statuses=[status]))
    return events


def test_per_minute_window_counts_faulty_and_pressure_together() -> None:
    c = config(
        predictiveEvict={"enabled": False},
        cpuEvict={"maxEvictionPerMinute": 3},
        gracefulEviction={"enabled": False},
    )
    loop = run(cluster(10) + oom_killed(3) + cpu_samples([99] * 3), c)
    reasons = [d.data["reason"] for d in loop.evictions()]
    # the faulty pod goes at the first check; the CPU round at the third has 3 - 1 left
    assert reasons == ["faulty-oom", "cpu-pressure", "cpu-pressure"]


# ---- graceful notice, taint, reservation ---------------------------------------------------


def test_notice_and_evict_times() -> None:
    evictions = run(cluster(5, cpu_each=5) + cpu_samples([95] * 3)).evictions()
    for d in evictions:
        assert parse_time(d.data["notice_at"]) == d.at == seconds(3)
        assert parse_time(d.data["evict_at"]) == seconds(13)


def test_without_graceful_eviction_evict_at_is_now() -> None:
    c = cfg(gracefulEviction={"enabled": False, "preStopDelaySeconds": 5})
    d = run(cluster(5, cpu_each=5) + cpu_samples([95] * 3), c).evictions()[0]
    assert parse_time(d.data["evict_at"]) == d.at


def test_taint_precedes_the_first_eviction_and_is_removed_after_its_duration() -> None:
    loop = run(cluster(10, cpu_each=5) + cpu_samples([95] * 3), sim=True)
    kinds = [(d.type, d.at) for d in loop.decisions]
    assert kinds[0] == ("decision.taint", seconds(3))
    assert kinds[1][0] == "decision.evict"
    taint = loop.decisions[0].data
    assert taint["taint"] == {"key": "koordinator.sh/eviction", "value": "", "effect": "NoSchedule"}
    assert taint["reason"] == "eviction-taint"
    untaint = [d for d in loop.decisions if d.type == "decision.untaint"]
    assert [d.at for d in untaint] == [seconds(13 + 300)]  # evict_at + taintDuration
    node = loop.cluster.state.nodes["n1"]
    assert not node["spec"].get("taints")


def test_taint_is_extended_not_repeated_by_later_rounds() -> None:
    c = cfg(adaptiveCooldown=False)
    values = [*cpu_samples([95] * 3), node_sample("n1", seconds(70), cpu_cores=95)]
    loop = run(cluster(10, cpu_each=3) + values, c, sim=True)
    taints = [d for d in loop.decisions if d.type == "decision.taint"]
    untaints = [d for d in loop.decisions if d.type == "decision.untaint"]
    assert len(taints) == 1
    assert [d.at for d in untaints] == [seconds(80 + 300)]


def test_no_taint_when_disabled() -> None:
    c = cfg(schedulingOptimization={"evictionTaint": False})
    loop = run(cluster(10, cpu_each=5) + cpu_samples([95] * 3), c)
    assert {d.type for d in loop.decisions} == {"decision.evict"}


def test_reservation_holds_freed_resources_for_ls_pods() -> None:
    loop = run(cluster(5, cpu_each=5, mem_each=2) + cpu_samples([95] * 3))
    victims = len(loop.evictions())
    held = reserved_for_ls(loop.world, "n1", seconds(3))
    assert held.milli_cpu == victims * 5000  # usage above the 1-core request
    assert held.memory == victims * 2 * GI
    assert reserved_for_ls(loop.world, "n1", seconds(3 + 599)).milli_cpu == victims * 5000
    assert reserved_for_ls(loop.world, "n1", seconds(3 + 600)).milli_cpu == 0
    assert reserved_for_ls(loop.world, "n2", seconds(3)).milli_cpu == 0


def test_no_reservation_when_disabled() -> None:
    c = cfg(schedulingOptimization={"resourceReservation": False})
    loop = run(cluster(5, cpu_each=5) + cpu_samples([95] * 3), c)
    assert reserved_for_ls(loop.world, "n1", seconds(4)).milli_cpu == 0


def test_check_node_is_quiet_for_unknown_nodes_and_nodes_without_capacity() -> None:
    world = new_world()
    sample = node_sample("ghost", seconds(1), cpu_cores=99).with_offset(0)
    world.apply(sample)
    assert check_node(world, sample, cfg()) == []


@pytest.mark.parametrize(
    ("alloc_gi", "used_gi", "reason"),
    [
        pytest.param(100, 85, None, id="memory-at-85-is-not-above"),
        pytest.param(100, 85.5, "memory-pressure", id="memory-just-above-85"),
        pytest.param(90, 81, None, id="oom-risk-at-90-of-allocatable-is-not-above"),
        pytest.param(90, 81.5, "oom-risk", id="oom-risk-just-above-90"),
    ],
)
def test_memory_and_oom_risk_threshold_boundaries(
    alloc_gi: int, used_gi: float, reason: str | None
) -> None:
    node = build_node(
        "n1", cpu="100", memory=f"{alloc_gi}Gi", capacity={"cpu": "100", "memory": "100Gi"}
    )
    events = [watch("nodes", node), *cluster(5, mem_each=4)[1:]]
    events += [node_sample("n1", seconds(i), cpu_cores=10, memory_gi=used_gi) for i in (1, 2, 3)]
    reasons = {d.data["reason"] for d in run(events).evictions()}
    assert reasons == ({reason} if reason else set())
