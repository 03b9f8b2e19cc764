"""A stop while an effect is in flight: its outcome is written, and the log's seal after it.

Why: CI saw ``tide replay --verify`` fail on the ``--dry-run`` log of
``tests/live/test_run_e2e.py`` under load ("not sealed: the tail after offset 418 was cut",
one difference): the recorder sealed the log when its sources stopped, and the applier,
drained after them, wrote the outcome of the call still in flight *after* the seal. A
complete log ends in its seal; the seal now waits for the drained outcomes
(:meth:`controller.drive.loop.live.LiveLoop.run`). Here the API double holds every answer
from the moment the binds are decided, and the run is stopped at once: the bind calls are
in flight while the sources stop, on any machine, loaded or not.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from controller.cli.run_cmd import run_live
from controller.drive.observe.hooks import NoObserver
from controller.drive.settings import load_settings
from controller.drive.sources.recorder import RecorderOptions
from controller.policy.loader import load_policy
from replay.verify import replay
from streams.backends import open_log
from streams.chain import check_log
from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from tests.kubedouble import ApiDouble
from tests.live.scenario import CONFIG, clock_offset, cluster

#: seconds the double holds each answer once the binds are decided (the calls in flight)
HOLD = 2.0


class StopAtBind(NoObserver):
    """Stops the run as soon as a bind is decided, with the double holding its answers."""

    def __init__(self, double: ApiDouble, stop: asyncio.Event) -> None:
        self.double = double
        self.stop = stop
        self.binds = 0

    def decided(self, decision: Event) -> None:
        # told as the decision is written, before it goes to the applier: its call starts
        # after this, and waits HOLD for its answer while the run stops
        if decision.type == "decision.bind":
            self.binds += 1
            self.double.faults.delay = HOLD
            self.stop.set()


async def test_outcomes_drained_at_a_stop_come_before_the_seal(
    double: ApiDouble, tmp_path: Path
) -> None:
    cluster(double)  # two pending pods of a gang: bound at the first session tick
    db = tmp_path / "tide.db"
    settings = load_settings(
        {
            "log": {"url": str(db)},
            "kube": {"kubeconfig": double.write_kubeconfig(tmp_path / "kubeconfig")},
            "triggers": {"clock_offset": timedelta(seconds=clock_offset())},
        }
    )
    options = RecorderOptions(metrics_interval=None, watch_timeout=5, health_address=None)
    stop = asyncio.Event()
    observer = StopAtBind(double, stop)
    run = run_live(settings, load_policy(CONFIG), options, source="t", observer=observer, stop=stop)
    await asyncio.wait_for(run, 120)
    assert observer.binds == 2
    async with await open_log(str(db)) as log:
        events = await log.read_all()
        chain = await check_log(log)
    # the calls in flight finished and their outcomes are on the log, before its seal
    outcomes = [e for e in events if e.type in EFFECT_TYPES]
    decided = {e.id for e in events if e.type in DECISION_TYPES}
    assert {e.data["decision"] for e in outcomes} == decided
    assert [e.data["kind"] for e in outcomes if e.type == "effect.applied"] == ["bind", "bind"]
    assert events[-1].type == "log.sealed", [e.type for e in events[-4:]]
    assert chain.ok and chain.complete, chain.describe()
    assert replay(events).ok
