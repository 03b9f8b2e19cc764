"""Two replicas of ``tide run`` with leader election against one API double and one log.

The log is one SQLite file both processes append to (``BEGIN IMMEDIATE`` gives them one
gap-free order). The leader is killed with SIGKILL at a few seeded random points and
restarted as a standby; each time the standby takes over within one lease duration (plus
its retry period and a margin for a loaded machine), and at the end no pod was evicted or
bound by two successful calls, no decision has two outcomes and none is left without one.
"""

from __future__ import annotations

import asyncio
import random
import signal
from collections import Counter
from pathlib import Path

from streams.events import DECISION_TYPES, EFFECT_TYPES
from tests.kubedouble import ApiDouble
from tests.live.scenario import Tide, clock_offset, cluster, hot_metrics
from tests.live.test_kill import keep_busy, kill_config, without_outcome

KILLS = 3
SEED = 20261126
LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
#: scheduling delays of a shared, loaded machine on top of the lease's own bound
MARGIN = 2.0
LEASE_KEY = "tide/tide-leader"


def holder(double: ApiDouble) -> str:
    lease = double.objects.get("leases", {}).get(LEASE_KEY)
    return str((lease or {}).get("spec", {}).get("holderIdentity") or "")


async def wait_for_holder(double: ApiDouble, among: set[str], timeout: float) -> str:
    async with asyncio.timeout(timeout):
        while holder(double) not in among:
            await asyncio.sleep(0.05)
    return holder(double)


async def test_the_standby_takes_over_a_killed_leader_and_nothing_is_done_twice(
    double: ApiDouble, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    offset = clock_offset()
    cluster(double)
    helpers = [
        asyncio.create_task(hot_metrics(double, offset=offset)),
        asyncio.create_task(keep_busy(double)),
    ]
    db = tmp_path / "tide.db"
    flags = (
        "--leader-elect",
        f"--lease-duration={LEASE}",
        f"--renew-deadline={RENEW}",
        f"--retry-period={RETRY}",
    )
    replicas = {
        name: Tide(
            double,
            tmp_path,
            offset=offset,
            dry_run=False,
            config=kill_config(),
            name=name,
            db=db,
            extra=(*flags, f"--leader-identity={name}"),
        )
        for name in ("a", "b")
    }
    takeovers: list[float] = []
    try:
        for tide in replicas.values():
            await tide.start()
            await tide.ready()
        leader = await wait_for_holder(double, set(replicas), 30)
        for _ in range(KILLS):
            await asyncio.sleep(rng.uniform(0.5, 3.0))
            standby = next(name for name in replicas if name != leader)
            killed = asyncio.get_running_loop().time()
            assert await replicas[leader].stop(signal.SIGKILL) == -signal.SIGKILL
            await wait_for_holder(double, {standby}, 60)
            takeovers.append(asyncio.get_running_loop().time() - killed)
            await replicas[leader].start()  # back as the standby
            await replicas[leader].ready()
            leader = standby
        await asyncio.sleep(3)
        helpers[1].cancel()
        await asyncio.sleep(3)
        for tide in replicas.values():
            assert tide.running, await tide.stderr()
            assert await tide.stop() == 0, await tide.stderr()
    finally:
        for task in helpers:
            task.cancel()
        for tide in replicas.values():
            if tide.running:
                await tide.stop(signal.SIGKILL)
    assert max(takeovers) <= LEASE + RETRY + MARGIN, takeovers
    events = await replicas["a"].events()
    decisions = [e for e in events if e.type in DECISION_TYPES]
    assert len(decisions) > KILLS
    done = Counter(
        (what, key)
        for what, key, status in double.mutations
        if status < 300 and what in ("create pods/eviction", "create pods/binding")
    )
    assert [k for k, count in done.items() if count > 1] == []
    per_decision = Counter(e.data["decision"] for e in events if e.type in EFFECT_TYPES)
    assert [d for d, count in per_decision.items() if count > 1] == []
    assert without_outcome(events) == []
