"""The live loop killed between two appends: whatever append the kill lands on, the log it
leaves replays with ``--verify`` once a restarted loop has gone on writing to it.

Why: a sample is a decision point of pressure eviction. When a sample was written in one
append and its decisions in the next, a kill between the two left a sample on the log whose
decisions replay re-derives and no restart could write at their place (CI caught it in
``tests/live/test_kill.py``). The sample and its decisions are now one batch."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import orjson
import pytest

from controller.drive.loop.live import LiveLoop
from controller.policy.loader import Policy, load_config
from controller.policy.pressure.config import EvictionConfig, parse_eviction_config
from controller.policy.step import Step
from replay.verify import replay
from streams.backends.memory import MemoryLog
from streams.events import DECISION_TYPES, Event
from tests.builders import at, build_node, build_pod, node_metrics, watch


class Killed(Exception):
    """The process died here."""


def chunks() -> list[list[Event]]:
    """What the sources hand over: a node with a best-effort pod on it, then, a second apart,
    a pod update and a hot sample of that node (the third hot sample evicts)."""
    pod = {"koordinator.sh/qosClass": "BE"}
    first = [
        watch("nodes", build_node("n1", cpu="10"), at(0)),
        watch("pods", build_pod("ns", "be", node="n1", labels=pod), at(0)),
    ]
    later = [
        [
            watch("pods", build_pod("ns", f"other-{i}", node="n1"), at(i)),
            node_metrics("n1", cpu="9900m", memory="1Gi", when=at(i)),
        ]
        for i in range(1, 7)
    ]
    return [first, *later]


async def run_until_killed(
    log: MemoryLog, eviction: EvictionConfig, chunks: Sequence[list[Event]], kill_at: int
) -> int:
    """Feed ``chunks`` to a fresh loop on ``log`` until its ``kill_at``-th append (which
    dies before anything is stored); returns how many chunks were handed over whole."""
    loop = LiveLoop(Step(config=None, eviction=eviction), log)
    await loop.prepare()
    appends = 0

    async def append(batch: list[Event], payloads: Sequence[bytes | None]) -> list[Event]:
        nonlocal appends
        appends += 1
        if appends == kill_at:
            raise Killed
        return await log.append(batch)

    loop.append = append
    stop = asyncio.Event()
    running = asyncio.create_task(loop.run(stop))
    while not loop.leading:
        await asyncio.sleep(0)
    fed = 0
    try:
        for chunk in chunks:
            await loop.feed(chunk)
            fed += 1
    except Killed:
        pass
    stop.set()
    await running
    return fed


@pytest.mark.parametrize("kill_at", range(1, 12))
async def test_a_kill_at_any_append_leaves_a_log_that_replays(kill_at: int) -> None:
    eviction = parse_eviction_config({})
    log = MemoryLog()
    todo = chunks()
    fed = await run_until_killed(log, eviction, todo, kill_at)
    await run_until_killed(log, eviction, todo[fed:], kill_at=0)  # the restart
    events = log.events
    causes = {e.id for e in events if e.type in ("metrics.node", "trigger.fired")}
    decided = [e for e in events if e.type in DECISION_TYPES]
    assert {e.cause for e in decided} <= causes
    assert {e.type for e in decided} >= {"decision.evict"}  # the kill fell among real work
    policy = Policy.of(load_config({"actions": "allocate"}), eviction)
    report = replay(events, configs=policy)
    assert report.ok, [d.describe() for d in report.differences]


@pytest.mark.parametrize("leading", [True, False], ids=["leader", "standby"])
async def test_each_record_reaches_the_log_with_its_own_payload_bytes(leading: bool) -> None:
    """``feed`` splits a batch at each sample and a standby drops the samples: the payload
    bytes handed in must stay beside their own records (a shift would store one record's
    payload under another's id), and records the loop makes itself go without bytes."""
    loop = LiveLoop(Step(config=None, eviction=parse_eviction_config({})), MemoryLog())
    await loop.prepare()
    stop = asyncio.Event()
    running = asyncio.create_task(loop.run(stop)) if leading else None
    while leading and not loop.leading:
        await asyncio.sleep(0)
    seen: list[tuple[Event, bytes | None]] = []

    async def append(batch: list[Event], payloads: Sequence[bytes | None]) -> list[Event]:
        held = list(payloads) + [None] * (len(batch) - len(payloads))
        seen.extend(zip(batch, held, strict=True))
        return await loop.log.append(batch)

    loop.append = append
    inputs = [event for chunk in chunks() for event in chunk]
    payloads = [orjson.dumps(e.data, option=orjson.OPT_SORT_KEYS) for e in inputs]
    await loop.feed(inputs, payloads)
    if running is not None:
        stop.set()
        await running
    by_id = dict(zip([e.id for e in inputs], payloads, strict=True))
    fed = [event for event, _ in seen if event.id in by_id]
    assert len(fed) == len(inputs) - (0 if leading else 6)  # a standby writes no sample
    for event, payload in seen:
        assert payload == by_id.get(event.id), event.type
    assert any(e.type in DECISION_TYPES for e, _ in seen) is leading
