"""Candidates: the QoS filter, the victim order (every key and its tie-break), take()."""

from __future__ import annotations

from datetime import timedelta

import pytest

from controller.policy.pressure.candidates import (
    FAULTY_QOS,
    PRESSURE_QOS,
    ranked,
    take,
    terminating_usage,
)
from projections.world import World
from streams.events import Event
from tests.builders import T0, build_pod, watch
from tests.controller.policy.pressure.harness import new_world, node_event, pod_event, pod_sample


def world_of(events: list[Event]) -> World:
    world = new_world()
    for i, event in enumerate(events):
        world.apply(event.with_offset(i))
    return world


def order(world: World, resource: str = "cpu", *, qos: frozenset[str] = PRESSURE_QOS) -> list[str]:
    node = world.cluster.nodes["n1"]
    return [c.task.name for c in ranked(world, node, resource, world.pressure, qos=qos)]


@pytest.mark.parametrize(
    ("qos", "candidate"),
    [
        pytest.param("BE", True, id="BE"),
        pytest.param("LS", False, id="LS"),
        pytest.param("LSR", False, id="LSR"),
        pytest.param("LSE", False, id="LSE"),
        pytest.param("SYSTEM", False, id="SYSTEM"),
    ],
)
def test_only_be_pods_are_pressure_candidates(qos: str, candidate: bool) -> None:
    world = world_of([node_event(), pod_event("p", qos=qos)])
    assert (order(world) == ["p"]) is candidate


@pytest.mark.parametrize(
    ("requests", "candidate"),
    [
        pytest.param(None, True, id="besteffort-without-label-is-BE"),
        pytest.param(("1", "1Gi"), False, id="burstable-without-label-is-LS"),
    ],
)
def test_qos_without_label_follows_kubernetes_qos(
    requests: tuple[str, str] | None, candidate: bool
) -> None:
    world = world_of([node_event(), pod_event("p", qos=None, requests=requests)])
    assert (order(world) == ["p"]) is candidate


def test_faulty_qos_admits_ls_but_not_lsr() -> None:
    world = world_of(
        [node_event()] + [pod_event(q.lower(), qos=q) for q in ("BE", "LS", "LSR", "LSE")]
    )
    assert order(world, qos=FAULTY_QOS) == ["be", "ls"]


def test_terminating_pending_and_other_nodes_are_not_candidates() -> None:
    leaving = build_pod(
        "default",
        "leaving",
        node="n1",
        labels={"koordinator.sh/qosClass": "BE"},
        deleting=T0,
    )
    pending = build_pod(
        "default", "pending", labels={"koordinator.sh/qosClass": "BE"}, phase="Pending"
    )
    world = world_of(
        [
            node_event(),
            pod_event("ok"),
            pod_event("elsewhere", node="n2"),
            watch("pods", leaving),
            watch("pods", pending),
            pod_sample("leaving", T0, cpu_cores=4),
        ]
    )
    assert order(world) == ["ok"]
    assert terminating_usage(world, world.cluster.nodes["n1"], "cpu") == 4000


HOUR = timedelta(hours=1)


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param(
            [("a", 0, 1, HOUR), ("b", -5, 1, HOUR), ("c", 5, 1, HOUR)],
            ["b", "a", "c"],
            id="priority-ascending",
        ),
        pytest.param(
            [("a", 0, 1, HOUR), ("b", 0, 3, HOUR), ("c", 0, 2, HOUR)],
            ["b", "c", "a"],
            id="usage-descending-within-priority",
        ),
        pytest.param(
            [("a", 0, 1, 3 * HOUR), ("b", 0, 1, HOUR), ("c", 0, 1, 2 * HOUR)],
            ["b", "c", "a"],
            id="newest-first-within-usage",
        ),
        pytest.param(
            [("b", 0, 1, HOUR), ("a", 0, 1, HOUR)],
            ["a", "b"],
            id="name-tie-break",
        ),
        pytest.param(
            [("a", 0, 0, HOUR), ("b", 0, 2, HOUR)],
            ["b", "a"],
            id="no-metrics-counts-as-zero",
        ),
        pytest.param(
            [("lowprio-small", -1, 1, HOUR), ("big", 0, 50, HOUR)],
            ["lowprio-small", "big"],
            id="priority-before-usage",
        ),
    ],
)
def test_victim_order(pods: list[tuple[str, int, float, timedelta]], expected: list[str]) -> None:
    events = [node_event()]
    for name, priority, cpu, running in pods:
        events.append(pod_event(name, priority=priority, started=T0 - running))
        if cpu:
            events.append(pod_sample(name, T0, cpu_cores=cpu))
    assert order(world_of(events)) == expected


def test_memory_order_uses_memory_usage() -> None:
    events = [
        node_event(),
        pod_event("a"),
        pod_event("b"),
        pod_sample("a", T0, cpu_cores=5, memory_gi=1),
        pod_sample("b", T0, cpu_cores=1, memory_gi=4),
    ]
    world = world_of(events)
    assert order(world, "cpu") == ["a", "b"]
    assert order(world, "memory") == ["b", "a"]


def test_oom_count_breaks_ties_after_running_time() -> None:
    def status(n: int) -> dict[str, object]:
        return {
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

    events = [node_event(), pod_event("a"), pod_event("b")]
    # b is OOM-killed twice (two distinct terminations), a once
    events.append(pod_event("a", statuses=[status(1)]))
    events.append(pod_event("b", statuses=[status(1)]))
    events.append(pod_event("b", statuses=[status(2)]))
    assert order(world_of(events)) == ["b", "a"]


@pytest.mark.parametrize(
    ("usages", "need", "freed", "limit", "taken"),
    [
        pytest.param([8, 6, 5], 10, 0, 3, 2, id="until-target-reached"),
        pytest.param([8, 6, 5], 8, 0, 3, 1, id="exactly-reached-stops"),
        pytest.param([8, 6, 5], 8.001, 0, 3, 2, id="just-above-takes-one-more"),
        pytest.param([8, 6, 5], 100, 0, 3, 3, id="limit-caps"),
        pytest.param([8, 6, 5], 100, 0, 1, 1, id="limit-one"),
        pytest.param([8, 6, 5], 10, 10, 3, 0, id="already-freed"),
        pytest.param([8, 6, 5], 10, 3, 3, 1, id="terminating-counts"),
    ],
)
def test_take(usages: list[float], need: float, freed: float, limit: int, taken: int) -> None:
    events = [node_event()]
    for i, cpu in enumerate(usages):
        events.append(pod_event(f"p{i}"))
        events.append(pod_sample(f"p{i}", T0, cpu_cores=cpu))
    world = world_of(events)
    node = world.cluster.nodes["n1"]
    candidates = ranked(world, node, "cpu", world.pressure)
    victims, _ = take(candidates, need=need * 1000, freed=freed * 1000, limit=limit)
    assert len(victims) == taken
