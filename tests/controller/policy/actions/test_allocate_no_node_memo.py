"""Allocate's failed-search memo (``allocate._Run._search``) changes no decision: on seeded
random clusters where many Pending pods share a request that fits nowhere (and some fit
only after others took room, or only on labelled nodes), the cycle's decisions, evidence
included, equal those of a run that searches for every pod, while the memo does skip
searches."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from controller.policy.actions import allocate
from controller.policy.engine import run_cycle
from controller.policy.framework.nodes import fitting_nodes
from controller.policy.loader import load_config
from tests.builders import at, build_node, build_pod, build_podgroup, watch
from tests.controller.policy.framework.scenario import trigger, world_of

CONF: dict[str, Any] = {
    "actions": "allocate",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {"plugins": [{"name": "predicates"}, {"name": "proportion"}, {"name": "nodeorder"}]},
    ],
}


def events(seed: int) -> list[Any]:
    rng = random.Random(seed)
    out = [
        watch(
            "nodes",
            build_node(
                f"n{i:02d}",
                cpu=str(rng.choice([2, 4, 8])),
                pods=str(rng.choice([2, 5, 110])),
                labels={"disk": rng.choice(["ssd", "hdd"])},
            ),
        )
        for i in range(rng.randint(8, 30))
    ]
    for i in range(rng.randint(20, 60)):
        gang = rng.random() < 0.2
        if gang:
            out.append(watch("podgroups", build_podgroup("ns", f"g{i}", min_member=2)))
        for k in range(2 if gang else 1):
            pod = build_pod(
                "ns",
                f"p{i:02d}-{k}",
                phase="Pending",
                cpu=rng.choice(["1", "3", "6", "12"]),
                group=f"g{i}" if gang else None,
                labels={"pod": f"x{i}-{k}"},
            )
            if rng.random() < 0.2:
                pod["spec"]["nodeSelector"] = {"disk": "ssd"}
            out.append(watch("pods", pod))
    return out


@pytest.mark.parametrize("seed", range(10))
def test_the_memo_decides_as_searching_every_pod(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = world_of(events(seed))
    config = load_config(CONF)
    searched: list[str] = []

    def counting(ssn: Any, task: Any, *, cache: Any = None, plan: Any = None) -> Any:
        searched.append(task.key)
        return fitting_nodes(ssn, task, cache=cache, plan=plan)

    monkeypatch.setattr(allocate, "fitting_nodes", counting)
    fast = run_cycle(world, trigger(at(1)), config)
    skipped = len(searched)
    searched.clear()
    monkeypatch.setattr(
        allocate._Run, "_search", lambda run, task, cache: counting(run.ssn, task, cache=cache)
    )
    plain = run_cycle(world, trigger(at(1)), config)
    assert [orjson.dumps(e.data) for e in fast] == [orjson.dumps(e.data) for e in plain]
    assert skipped <= len(searched)


def test_the_memo_skips_identical_pods_that_fit_nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    pods = [build_pod("ns", f"p{i}", phase="Pending", cpu="1") for i in range(5)]
    for pod in pods:
        pod["spec"]["nodeSelector"] = {"disk": "none"}
    world = world_of(
        [watch("nodes", build_node(n)) for n in ("n1", "n2")] + [watch("pods", p) for p in pods]
    )
    searched: list[str] = []

    def counting(ssn: Any, task: Any, *, cache: Any = None, plan: Any = None) -> Any:
        searched.append(task.key)
        return fitting_nodes(ssn, task, cache=cache, plan=plan)

    monkeypatch.setattr(allocate, "fitting_nodes", counting)
    assert run_cycle(world, trigger(at(1)), load_config(CONF)) == []
    assert len(searched) == 1
