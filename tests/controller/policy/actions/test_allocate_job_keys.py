"""Allocate's job heaps by sort key (``allocate._JobHeap`` over ``Session.job_order_key``)
change no decision: on seeded random clusters with gangs that become ready or stay short,
job priorities, preemptable marks and several queues, the cycle's decisions (evidence
included) equal those of the heaps that walk the plugin chain at every comparison; and
each key registered with ``add_job_order_fn(key=)`` orders every pair of session jobs as
the session's comparison does."""

from __future__ import annotations

import itertools
import random
from typing import Any

import orjson
import pytest

from controller.policy.actions import allocate
from controller.policy.engine import build_cycle, run_cycle
from controller.policy.framework.session import Session, open_session
from controller.policy.loader import load_config
from projections.world import World
from tests.builders import at, build_node, build_pod, build_podgroup, build_queue, watch
from tests.controller.policy.framework.scenario import trigger, world_of

TDM = {"tdm.revocable-zone.rz1": "10:00-21:00", "tdm.evict.period": "1m"}
CONF: dict[str, Any] = {
    "actions": "allocate",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {
            "plugins": [
                {"name": "predicates"},
                {"name": "proportion"},
                {"name": "nodeorder"},
                {"name": "tdm", "arguments": TDM},
            ]
        },
    ],
}
CLASSES = {"hi": 1000, "mid": 500, "lo": 10}


def events(seed: int) -> list[Any]:
    rng = random.Random(seed)
    out = [watch("queues", build_queue(q, weight=rng.randint(1, 3))) for q in ("q1", "q2")]
    for name, value in CLASSES.items():  # finished pods that teach the class values
        pod = build_pod("ns", f"class-{name}", phase="Succeeded")
        pod["spec"] |= {"priorityClassName": name, "priority": value}
        out.append(watch("pods", pod))
    out += [
        watch("nodes", build_node(f"n{i:02d}", cpu=str(rng.choice([2, 4, 8]))))
        for i in range(rng.randint(4, 12))
    ]
    for i in range(rng.randint(15, 40)):
        size = rng.choice([1, 1, 2, 3])
        annotations = {"volcano.sh/preemptable": "true"} if rng.random() < 0.4 else {}
        out.append(
            watch(
                "podgroups",
                build_podgroup(
                    "ns",
                    f"g{i:02d}",
                    min_member=rng.randint(1, size),
                    queue=rng.choice(["q1", "q2", "default"]),
                    annotations=annotations,
                    priority_class=rng.choice([None, *CLASSES]),
                    created=at(rng.randint(0, 5)),
                ),
            )
        )
        for k in range(size):
            out.append(
                watch(
                    "pods",
                    build_pod(
                        "ns",
                        f"g{i:02d}-p-{k}",
                        phase="Pending",
                        cpu=rng.choice(["1", "2", "3"]),
                        group=f"g{i:02d}",
                    ),
                )
            )
    return out


def decisions(world: World, monkeypatch: pytest.MonkeyPatch, *, keyed: bool) -> list[bytes]:
    with monkeypatch.context() as patch:
        if not keyed:
            patch.setattr(Session, "job_order_key", lambda ssn: None)
        found = run_cycle(world, trigger(at(1)), load_config(CONF))
    return [orjson.dumps([e.type, e.data]) for e in found]


@pytest.mark.parametrize("seed", range(12))
def test_keyed_job_heaps_decide_as_the_comparison(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = world_of(events(seed))
    pushed: list[bool] = []
    push = allocate._JobHeap.push

    def spy(heap: allocate._JobHeap, job_id: str) -> None:
        pushed.append(heap._key is not None)
        push(heap, job_id)

    monkeypatch.setattr(allocate._JobHeap, "push", spy)
    keyed = decisions(world, monkeypatch, keyed=True)
    assert pushed and all(pushed)  # the configuration's chain has a key for every plugin
    pushed.clear()
    plain = decisions(world, monkeypatch, keyed=False)
    assert pushed and not any(pushed)
    assert keyed == plain
    assert keyed  # something was placed


def _sign(value: int) -> int:
    return (value > 0) - (value < 0)


@pytest.mark.parametrize("seed", range(6))
def test_the_key_orders_every_pair_as_the_comparison(seed: int) -> None:
    world = world_of(events(seed))
    config = load_config(CONF)
    built = build_cycle(config)
    ssn = open_session(
        world, trigger(at(1)), tiers=config.tiers, plugins=built.plugins, ctx=built.ctx
    )
    try:
        key = ssn.job_order_key()
        assert key is not None
        jobs = [ssn.jobs[name] for name in ssn.jobs]
        assert len({(j.priority, j.preemptable) for j in jobs}) > 2
        for left, right in itertools.product(jobs, repeat=2):
            lkey, rkey = key(left), key(right)
            expected = _sign(ssn.job_order_compare(left, right))
            assert _sign((lkey > rkey) - (lkey < rkey)) == expected, (left.id, right.id)
    finally:
        ssn.close()


def test_a_plugin_without_a_key_leaves_the_chain_unkeyed() -> None:
    world = world_of(events(0))
    config = load_config(CONF)
    built = build_cycle(config)
    ssn = open_session(
        world, trigger(at(1)), tiers=config.tiers, plugins=built.plugins, ctx=built.ctx
    )
    try:
        assert ssn.job_order_keys() is not None
        ssn.add_job_order_fn("tdm", lambda left, right: 0)  # re-registered without a key
        assert ssn.job_order_keys() is None
        assert ssn.job_order_key() is None
    finally:
        ssn.close()
