"""The live loop in process under faults: a PodDisruptionBudget refuses the window-close
evictions (429, recorded, retried by TDM's next rounds and never more than its budget per
round), the binding API answers 5xx, and every watch is dropped mid-run. The log still
replays with ``--verify`` and every decision has exactly one outcome; the observer hears
about it all."""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from controller.cli.run_cmd import run_live
from controller.drive.settings import load_settings
from controller.drive.sources.recorder import RecorderOptions
from controller.policy.loader import load_policy
from replay.verify import replay
from streams.backends import open_log
from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from tests.kubedouble import ApiDouble
from tests.live.scenario import CLOSE_AFTER, CONFIG, clock_offset, cluster, hot_metrics

#: TDM's evict period in this test (a round every 2 s after the close)
PERIOD = 2


class Heard:
    """An observer that counts what it is told."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.leading: list[bool] = []
        self.restarted: set[str] = set()

    def decided(self, decision: Event) -> None:
        self.calls["decided"] += 1

    def effect(self, outcome: Event) -> None:
        self.calls[outcome.type] += 1

    def session(self, seconds: float) -> None:
        self.calls["session"] += 1

    def append_lag(self, seconds: float) -> None:
        self.calls["lag"] += 1

    def watch_restarted(self, resource: str) -> None:
        self.restarted.add(resource)

    def leader(self, leading: bool) -> None:
        self.leading.append(leading)

    def ready(self, ready: bool) -> None:
        self.calls[f"ready={ready}"] += 1

    def record(self, event: Event) -> None:
        self.calls["records"] += 1

    def event_failed(self, decision: Event, error: str) -> None:
        self.calls["event_failed"] += 1


async def test_pdb_5xx_and_dropped_watches(double: ApiDouble, tmp_path: Path) -> None:
    config: dict[str, Any] = copy.deepcopy(CONFIG)
    config["tiers"][1]["plugins"][2]["arguments"]["tdm.evict.period"] = f"{PERIOD}s"
    offset = clock_offset()
    loop = asyncio.get_running_loop()
    close = loop.time() + CLOSE_AFTER.total_seconds()  # rz1's window closes then
    cluster(double)
    double.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "train", "namespace": "batch"},
            "spec": {"selector": {"matchLabels": {}}},
            "status": {"disruptionsAllowed": 2},
        },
    )
    double.faults.fail, double.faults.fail_status, double.faults.fail_match = 2, 503, "/binding"
    db = tmp_path / "tide.db"
    settings = load_settings(
        {
            "log": {"url": str(db)},
            "kube": {"kubeconfig": double.write_kubeconfig(tmp_path / "kubeconfig")},
            "triggers": {"clock_offset": timedelta(seconds=offset)},
        }
    )
    options = RecorderOptions(metrics_interval=0.25, watch_timeout=5, health_address=None)
    stop = asyncio.Event()
    heard = Heard()
    feeder = asyncio.create_task(hot_metrics(double, offset=offset))
    run = asyncio.create_task(
        run_live(settings, load_policy(config), options, source="t", observer=heard, stop=stop)
    )
    try:
        # every instant from the run's own start: once it is ready (it has listed the
        # budget with two disruptions allowed), not after a fixed wait
        deadline = loop.time() + 120
        while not heard.calls["ready=True"] and not run.done() and loop.time() < deadline:
            await asyncio.sleep(0.05)
        assert heard.calls["ready=True"], "tide never became ready"
        assert loop.time() < close, "the run was ready after the window closed: too slow"
        # the budget is spent on the server by a status update tide has not seen (tide's
        # victim choice skips what a budget it knows protects): only the API server
        # refuses, the 429 is recorded and TDM tries again on its next rounds
        double.objects["poddisruptionbudgets"]["batch/train"]["status"]["disruptionsAllowed"] = 0
        double.drop_watches()
        await asyncio.sleep(close - loop.time() + 3 * PERIOD)
        # then until two rounds were refused (at most two evictions a round), however
        # slowly the rounds come
        deadline = loop.time() + 120
        while heard.calls["effect.failed"] < 3 and not run.done() and loop.time() < deadline:
            await asyncio.sleep(0.25)
        stop.set()
        ran = await asyncio.wait_for(run, 60)
    finally:
        feeder.cancel()
        stop.set()
    async with await open_log(str(db)) as log:
        events = await log.read_all()

    refused = [e for e in events if e.type == "effect.failed" and "429" in e.data["error"]]
    rounds = {e.cause for e in events if e.type == "decision.evict" and e.data["source"] == "tdm"}
    assert len(rounds) >= 2, "TDM retried the refused evictions on its next rounds"
    per_round = Counter(
        e.cause for e in events if e.type == "decision.evict" and e.data["source"] == "tdm"
    )
    assert max(per_round.values()) <= 2  # the job's budget: 100% of two pods
    tdm_calls = [k for what, k, _ in double.mutations if k.startswith("batch/")]
    assert len(tdm_calls) == sum(per_round.values()) == len(refused)
    binds = [e for e in events if e.type == "effect.applied" and e.data["kind"] == "bind"]
    assert len(binds) == 2  # after two 503s, retried within the attempts
    outcomes = Counter(e.data["decision"] for e in events if e.type in EFFECT_TYPES)
    decisions = [e.id for e in events if e.type in DECISION_TYPES]
    assert sorted(outcomes) == sorted(decisions) and set(outcomes.values()) == {1}
    report = replay(events)
    assert report.ok, [d.describe() for d in report.differences]
    assert heard.restarted, "the dropped watches were reported"
    assert heard.leading == [True, False]
    assert heard.calls["decided"] == ran.decided == len(decisions)
    assert heard.calls["effect.failed"] == len(refused)
    assert heard.calls["ready=True"] >= 1 and heard.calls["session"] > 0


class NeverLeader:
    """A standby that never gets the lead."""

    is_leader = False

    async def run(self, on_started: Any, on_stopped: Any) -> None:
        await asyncio.Event().wait()

    async def release(self) -> None:
        return None


async def test_a_standby_records_but_neither_decides_nor_acts(
    double: ApiDouble, tmp_path: Path
) -> None:
    offset = clock_offset()
    cluster(double)
    db = tmp_path / "tide.db"
    settings = load_settings(
        {
            "log": {"url": str(db)},
            "kube": {"kubeconfig": double.write_kubeconfig(tmp_path / "kubeconfig")},
            "triggers": {"clock_offset": timedelta(seconds=offset)},
        }
    )
    options = RecorderOptions(metrics_interval=0.25, watch_timeout=5, health_address=None)
    stop = asyncio.Event()
    feeder = asyncio.create_task(hot_metrics(double, offset=offset))
    run = asyncio.create_task(
        run_live(
            settings, load_policy(CONFIG), options, source="t", leadership=NeverLeader(), stop=stop
        )
    )
    try:
        await asyncio.sleep(4)
        stop.set()
        await asyncio.wait_for(run, 60)
    finally:
        feeder.cancel()
        stop.set()
    async with await open_log(str(db)) as log:
        events = await log.read_all()
    types = Counter(e.type for e in events)
    assert types["k8s.watch"] > 0
    assert not {"metrics.node", "trigger.fired"} & set(types)
    assert not [e for e in events if e.type in DECISION_TYPES]
    assert double.mutations == []
    assert replay(events).ok
