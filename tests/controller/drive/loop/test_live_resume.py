"""``tide run`` restarts (and takes the lead) from the latest checkpoint kept with its log:
the World, the ledger of open decisions and the effector's guard rails come out as a fold
from offset 0 gives them, whatever the checkpoint interval."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.drive.effector.limits import EvictionLimits, LimitGuard
from controller.drive.loop.live import LiveLoop
from controller.policy.step import Step
from projections.checkpoints import CheckpointPolicy, keep_checkpoints
from streams.backends.checkpoints import CheckpointStore, open_log_store
from streams.backends.sqlite import SQLiteLog
from streams.log import EventLog
from streams.recording import import_recording

GOLDEN = Path(__file__).parents[3] / "replay" / "golden"


async def _prepared(
    log: EventLog, store: CheckpointStore | None
) -> tuple[LiveLoop, LimitGuard, int]:
    loop = LiveLoop(Step(config=None, eviction=None), log)
    guard = LimitGuard(EvictionLimits(per_node=1, per_namespace=2, per_cluster=3))
    loop.readers.append(guard.seen)
    loop.checkpoints = store
    folded = await loop.prepare()
    return loop, guard, folded


@pytest.mark.parametrize("name", ["demo.jsonl", "pressure-graceful.jsonl"])
@pytest.mark.parametrize(("every", "minutes"), [(1, 0), (97, 0), (0, 30), (0, 240), (10**6, 0)])
async def test_a_restart_from_a_checkpoint_equals_a_fold_from_zero(
    tmp_path: Path, name: str, every: int, minutes: float
) -> None:
    path = tmp_path / "log.db"
    async with await SQLiteLog.open(path) as log:
        await import_recording(GOLDEN / name, log)
        store = await open_log_store(str(path), create=True)
        assert store is not None
        async with store:
            policy = CheckpointPolicy(every_records=every, every_minutes=minutes)
            await keep_checkpoints(log, store, policy=policy)
            refold, from_zero, all_of_it = await _prepared(log, None)
            resumed, guard, after = await _prepared(log, store)
            latest = (await store.stored())[-1].position
        head = await log.head()
        records = await log.read_all()
    assert (all_of_it, after, latest) == (head, 0, head)  # resumed at the head's checkpoint
    assert refold.step.world.position == resumed.step.world.position == head
    assert resumed.step.world.dump() == refold.step.world.dump()
    assert resumed.effects.dump() == refold.effects.dump()
    assert guard._decided == from_zero._decided
    now = max(r.at for r in records)
    places = {(str(r.data.get("node")), str(r.data.get("namespace"))) for r in records}
    for node, namespace in sorted(places):
        assert guard.refusal(node=node, namespace=namespace, now=now) == from_zero.refusal(
            node=node, namespace=namespace, now=now
        )
