"""The live loop keeps its folded cluster out of the cyclic collector's sight while it runs
(issue 15: a full collection of a 150,000-pod heap costs as much as a decision cycle), and
gives everything back when it stops; its initial fold pauses the collector and restores it."""

from __future__ import annotations

import asyncio
import gc

from controller.drive.loop.live import LiveLoop
from controller.policy.step import Step
from streams.backends.memory import MemoryLog
from tests.builders import at, build_node, build_pod, watch


async def test_the_fold_is_frozen_while_running_and_thawed_after() -> None:
    log = MemoryLog()
    await log.append(
        [watch("nodes", build_node(f"n{i}", cpu="10"), at(0)) for i in range(20)]
        + [watch("pods", build_pod("ns", f"p{i}", node=f"n{i % 20}"), at(0)) for i in range(60)]
    )
    loop = LiveLoop(Step(config=None, eviction=None), log)
    assert gc.get_freeze_count() == 0
    assert await loop.prepare() == 80
    assert gc.isenabled() and gc.get_freeze_count() == 0  # the fold paused it, then gave it back
    stop = asyncio.Event()
    running = asyncio.create_task(loop.run(stop))
    while not loop.leading:
        await asyncio.sleep(0)
    frozen = gc.get_freeze_count()
    assert frozen > 0 and gc.isenabled()  # automatic collection stays on for what is new
    await loop.feed([watch("pods", build_pod("ns", "late", node="n1"), at(1))])
    assert "ns/late" in loop.step.world.cluster.tasks
    stop.set()
    await running
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert loop.decided == 0
