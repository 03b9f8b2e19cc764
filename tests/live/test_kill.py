"""Exactly once under kill -9: ``tide run`` killed at a seeded sample of random points and
restarted on the same log, while the cluster keeps giving it work (pending pods to bind,
best-effort pods on a hot node, a window that closes mid-way). Afterwards no pod was
evicted or bound by two successful calls, and every decision on the log has an outcome."""

from __future__ import annotations

import asyncio
import copy
import random
import signal
from collections import Counter
from pathlib import Path

from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from tests.builders import build_pod, build_podgroup
from tests.kubedouble import ApiDouble
from tests.live.scenario import CONFIG, Tide, cli, clock_offset, cluster, hot_metrics

KILLS = 30
SEED = 20261125


def kill_config() -> dict[str, object]:
    """The scenario's configuration with a short pressure cooldown (more evictions)."""
    config = copy.deepcopy(CONFIG)
    config["eviction"]["cpuEvict"]["cooldownPeriod"] = "1s"
    return config


async def keep_busy(double: ApiDouble) -> None:
    """A new pending pod every 0.3 s; a best-effort pod on ``hot`` whenever it has none."""
    n = 0
    while True:
        n += 1
        double.create("podgroups", build_podgroup("web", f"p-{n}", phase="Inqueue"))
        double.create(
            "pods", build_pod("web", f"p-{n}", phase="Pending", cpu="100m", group=f"p-{n}")
        )
        if not any(k.startswith("best/") for k in double.objects.get("pods", {})):
            pod = build_pod(
                "best",
                f"be-x{n}",
                node="hot",
                labels={"koordinator.sh/qosClass": "BE"},
                owner_kind="ReplicaSet",
            )
            double.create("pods", pod)
        await asyncio.sleep(0.3)


def without_outcome(events: list[Event]) -> list[str]:
    outcomes = {e.data["decision"] for e in events if e.type in EFFECT_TYPES}
    return [e.id for e in events if e.type in DECISION_TYPES and e.id not in outcomes]


async def test_kill_9_at_random_points_never_acts_twice(double: ApiDouble, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    offset = clock_offset()
    cluster(double)
    helpers = [
        asyncio.create_task(hot_metrics(double, offset=offset)),
        asyncio.create_task(keep_busy(double)),
    ]
    tide = Tide(double, tmp_path, offset=offset, dry_run=False, config=kill_config())
    try:
        for _ in range(KILLS):
            await tide.start()
            await tide.ready()
            await asyncio.sleep(rng.uniform(0.0, 2.0))
            assert tide.running, await tide.stderr()
            assert await tide.stop(signal.SIGKILL) == -signal.SIGKILL
        await tide.start()  # recovery: runs until everything is settled, then SIGTERM
        await tide.ready()
        await asyncio.sleep(4)
        helpers[1].cancel()
        await asyncio.sleep(3)
        assert await tide.stop() == 0, await tide.stderr()
    finally:
        for task in helpers:
            task.cancel()
        if tide.running:
            await tide.stop(signal.SIGKILL)
    events = await tide.events()
    decisions = [e for e in events if e.type in DECISION_TYPES]
    assert len(decisions) > KILLS  # the kills fell among real work
    done = Counter(
        (what, key)
        for what, key, status in double.mutations
        if status < 300 and what in ("create pods/eviction", "create pods/binding")
    )
    assert [k for k, count in done.items() if count > 1] == []
    per_decision = Counter(e.data["decision"] for e in events if e.type in EFFECT_TYPES)
    assert [d for d, count in per_decision.items() if count > 1] == []
    assert without_outcome(events) == []
    code, out, err = await cli("replay", str(tide.db), "--verify")
    assert code == 0, out + err
