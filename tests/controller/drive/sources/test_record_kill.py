"""kill -9 at 30 random points of ``tide record`` (while it lists, watches, polls metrics
and writes), with the cluster changing all the while: after every kill the log is an
intact, unsealed chain without a duplicate; a restart after the last one converges to the
API double's state and, stopped cleanly, leaves a log that verifies complete."""

from __future__ import annotations

import asyncio
import random
import signal
from pathlib import Path

import pytest

from streams.backends import open_log
from streams.chain import check_chain
from tests.builders import build_pod
from tests.controller.drive.sources.helpers import converge, double_state, duplicates, log_state
from tests.controller.drive.sources.test_record_e2e import Tide, cli, cluster
from tests.kubedouble import ApiDouble

pytestmark = pytest.mark.usefixtures("under_the_record_role")

KILLS = 30
SEED = 1630


async def churn(double: ApiDouble, rng: random.Random) -> None:
    """Pods created and deleted every few tens of milliseconds."""
    n = 0
    while True:
        n += 1
        double.create("pods", build_pod("churn", f"c-{n}", node="n1"))
        if n % 3 == 0:
            double.delete("pods", f"churn/c-{n - 1}")
        await asyncio.sleep(rng.uniform(0.01, 0.1))


async def test_kill_9_at_30_random_points_of_record_keeps_an_intact_log(
    double: ApiDouble, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    cluster(double)
    tide = Tide(double, tmp_path)
    changes = asyncio.create_task(churn(double, rng))
    try:
        for kill in range(KILLS):
            await tide.start()
            if kill % 2:  # half the kills once it has listed, half at any moment of start-up
                await tide.ready()
            await asyncio.sleep(rng.uniform(0.0, 1.0))
            assert await tide.stop(signal.SIGKILL) == -signal.SIGKILL
            if not tide.db.exists():
                continue
            events = await tide.events()
            report = check_chain(events)
            assert report.ok, f"kill {kill}: {report.describe()}"
            assert not report.complete, f"kill {kill}: a killed writer sealed the log"
            assert duplicates(events) == [], f"kill {kill}"
            if kill == KILLS // 2:
                double.compact()  # what happens while tide is down is then only in a list
    finally:
        changes.cancel()
    await tide.start()
    await tide.ready()
    async with await open_log(str(tide.db)) as log:
        await converge(log, double, timeout=60)
    assert await tide.stop() == 0, await tide.stderr()
    events = await tide.events()
    assert log_state(events) == double_state(double)
    assert duplicates(events) == []
    code, out, err = await cli("log", "verify", str(tide.db))
    assert code == 0 and "complete" in out, out + err
