"""A decision-point sample the live loop is handed again is neither folded nor decided twice.

Why: the live loop folds a node sample *ahead* of its write, to append it with its pressure
decisions as one batch (``controller.drive.loop.live``). A sample the log already holds (a
replica that took the lead is served the point the old leader wrote: metrics-server
answers the same point for a whole resolution) was folded a second time and decided on,
and the log, which drops a repeated id, stored its decisions beside the sample's first copy:
decisions ``tide replay --verify`` cannot re-derive. Each case feeds the leader's loop hot
samples of one node (the third hot point evicts) and replays what it wrote.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

import pytest

from controller.drive.loop.live import LiveLoop
from controller.policy.loader import Policy, load_config
from controller.policy.pressure.config import parse_eviction_config
from controller.policy.step import Step
from replay.verify import replay
from streams.backends.memory import MemoryLog
from streams.events import DECISION_TYPES, Event
from tests.builders import at, build_node, build_pod, node_metrics, watch


def hot(i: int) -> Event:
    """The ``i``-th hot point of ``n1`` (its own timestamp ``at(i)``)."""
    return node_metrics("n1", cpu="9900m", memory="1Gi", when=at(i))


def again(sample: Event) -> Event:
    """The same point served again, recorded later: the same payload, so the same id."""
    return replace(sample, at=sample.at + timedelta(seconds=1))


#: (samples fed after the node and its pod, samples written, pods evicted)
CASES = {
    "three-points-evict": ([hot(1), hot(2), hot(3)], 3, 1),
    "a-repeat-does-not-count-twice": ([hot(1), hot(2), again(hot(2))], 2, 0),
    "a-repeat-of-an-older-point": ([hot(1), hot(2), again(hot(1)), hot(3)], 3, 1),
    "a-repeat-after-the-eviction": ([hot(1), hot(2), hot(3), again(hot(3))], 3, 1),
}


@pytest.mark.parametrize(("fed", "written", "evicted"), CASES.values(), ids=CASES.keys())
async def test_a_repeated_sample_is_not_written_folded_or_decided(
    fed: list[Event], written: int, evicted: int
) -> None:
    eviction = parse_eviction_config({})
    log = MemoryLog()
    loop = LiveLoop(Step(config=None, eviction=eviction), log)
    await loop.prepare()
    stop = asyncio.Event()
    running = asyncio.create_task(loop.run(stop))
    while not loop.leading:
        await asyncio.sleep(0)
    be = {"koordinator.sh/qosClass": "BE"}
    await loop.feed(
        [
            watch("nodes", build_node("n1", cpu="10"), at(0)),
            watch("pods", build_pod("ns", "be", node="n1", labels=be), at(0)),
        ]
    )
    for sample in fed:
        await loop.feed([sample])
    stop.set()
    await running
    events = log.events
    assert sum(e.type == "metrics.node" for e in events) == written
    assert sum(e.type == "decision.evict" for e in events) == evicted
    causes = {e.id: e.offset for e in events if e.type == "metrics.node"}
    for decision in (e for e in events if e.type in DECISION_TYPES):  # right after its cause
        assert decision.cause in causes and causes[decision.cause] < decision.offset
    report = replay(events, configs=Policy.of(load_config({"actions": "allocate"}), eviction))
    assert report.ok, [d.describe() for d in report.differences]
