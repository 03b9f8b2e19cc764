"""``tide run`` keeps checkpoints while it runs (issue 26): a run killed with SIGKILL
mid-run leaves checkpoints written during the run, and a restart resumes from the latest
of them with the state a fold from offset 0 gives (World, ledger of open decisions, chain
checker state)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from controller.drive.loop.live import LiveLoop
from controller.policy.pressure.config import parse_eviction_config
from controller.policy.step import Step
from projections.checkpoint_codec import decode_snapshot
from projections.checkpoints import CheckpointPolicy
from streams.backends.checkpoints import open_log_store
from streams.backends.sqlite import SQLiteLog
from streams.chain_check import ChainChecker
from tests.builders import at, build_node, build_pod, watch

ROOT = Path(__file__).resolve().parents[4]

#: the run killed: a loop writing through a chain writer, a checkpoint every 4 records;
#: says "ready" once two checkpoints were kept during the run, then keeps feeding
RUN = """
import asyncio, sys
from controller.drive.loop.live import LiveLoop
from controller.policy.pressure.config import parse_eviction_config
from controller.policy.step import Step
from projections.checkpoints import CheckpointPolicy
from streams.backends.sqlite import SQLiteLog
from streams.chain import ChainWriter
from tests.builders import at, build_node, build_pod, node_metrics, watch

async def main(path):
    log = await SQLiteLog.open(path)
    loop = LiveLoop(Step(config=None, eviction=parse_eviction_config({})), log)
    loop.checkpoint_policy = CheckpointPolicy(every_records=4, every_minutes=0, keep=100)
    writer = await ChainWriter(log, run="r1").__aenter__()
    loop.append = writer.append
    await loop.prepare()
    stop = asyncio.Event()
    running = asyncio.create_task(loop.run(stop))
    said = False
    await loop.feed([watch("nodes", build_node("n1", cpu="10"), at(0))])
    for i in range(1, 10000):
        pod = build_pod("ns", f"p{i}", node="n1", cpu="10m")
        # a sample is folded ahead of its write (its World position catches up with the
        # next record): each round ends with a pod
        sample = node_metrics("n1", cpu="1", memory="1Gi", when=at(i))
        await loop.feed([sample, watch("pods", pod, at(i))])
        await asyncio.sleep(0.05)
        if not said and loop.keeping.written >= 2:
            print("ready", flush=True)
            said = True
    await running

asyncio.run(main(sys.argv[1]))
"""


async def _state(path: Path, *, resume: bool) -> tuple[LiveLoop, int]:
    async with await SQLiteLog.open(path) as log:
        loop = LiveLoop(Step(config=None, eviction=parse_eviction_config({})), log)
        store = await open_log_store(str(path), create=False) if resume else None
        loop.checkpoints = store
        folded = await loop.prepare()
        if store is not None:
            await store.close()
        return loop, folded


async def _checkpoints(path: Path) -> tuple[list[int], int, ChainChecker, object]:
    async with await SQLiteLog.open(path) as log:
        store = await open_log_store(str(path), create=False)
        assert store is not None
        async with store:
            positions = [info.position for info in await store.stored()]
            data = await store.load_at(positions[-1])
        records = await log.read_all()
    assert data is not None
    snapshot = decode_snapshot(data)
    checker = ChainChecker()
    for record in records[: snapshot.position]:
        checker.feed(record)
    return positions, len(records), checker, snapshot.chain


def test_a_run_killed_mid_run_restarts_from_a_checkpoint_it_kept(tmp_path: Path) -> None:
    path = tmp_path / "run.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = tmp_path / "run.err"
    with (
        log.open("w") as errors,
        subprocess.Popen(
            [sys.executable, "-c", RUN, str(path)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        ) as child,
    ):
        started = time.monotonic()
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            assert line.strip() == "ready", (line, log.read_text())
            assert time.monotonic() - started < 120
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
    assert child.returncode == -signal.SIGKILL
    positions, head, checker, chain = asyncio.run(_checkpoints(path))
    # written during the run (a clean exit keeps one at the head; this run had none)
    assert len(positions) >= 2 and all(p > 0 for p in positions), positions
    assert chain == checker.state()  # the chain state the writer's links were taken for
    resumed, folded = asyncio.run(_state(path, resume=True))
    whole, all_of_it = asyncio.run(_state(path, resume=False))
    assert all_of_it == head and folded == head - positions[-1] < head
    assert resumed.step.world.dump() == whole.step.world.dump()
    assert resumed.effects.dump() == whole.effects.dump()


async def test_checkpoints_pause_when_another_writer_appends_between(tmp_path: Path) -> None:
    """Records of another writer between this loop's: its World is not the log's fold
    there, so it keeps no checkpoint until a fold of the log starts it again."""
    async with await SQLiteLog.open(tmp_path / "log.db") as log:
        loop = LiveLoop(Step(config=None, eviction=parse_eviction_config({})), log)
        loop.checkpoint_policy = CheckpointPolicy(every_records=1, every_minutes=0)
        await loop.prepare()
        keeping = loop.keeping
        assert keeping is not None
        try:
            await loop.write([watch("nodes", build_node("n1", cpu="10"), at(0))])
            async with loop._lock:
                assert await keeping.save_if_due(loop.step.world)
            await loop.write([watch("pods", build_pod("ns", "a", node="n1"), at(1))])
            await log.append([watch("pods", build_pod("ns", "b", node="n1"), at(2))])  # another
            await loop.write([watch("pods", build_pod("ns", "c", node="n1"), at(3))])
            assert keeping.keeper is None
            async with loop._lock:
                assert not await keeping.save_if_due(loop.step.world)
            assert keeping.written == 1
        finally:
            await keeping.close()
