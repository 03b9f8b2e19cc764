"""``tide run`` as a subprocess against the API double: the window closes, pressure
evicts and taints, pending pods are bound; every decision has its outcome, the log
replays with ``--verify``; ``--dry-run`` on the same scenario changes nothing."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from pathlib import Path

from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from tests.kubedouble import ApiDouble
from tests.live.scenario import CLOSE_AFTER, Tide, cli, clock_offset, cluster, hot_metrics

#: how long the run lasts after the close: the untaint after taintDuration, margins
AFTER_CLOSE = 8.0


def targets(events: list[Event]) -> set[tuple[str, str, str]]:
    """(decision type, target, reason) of every decision on the log."""
    found = set()
    for e in events:
        if e.type in DECISION_TYPES:
            target = (
                f"{e.data.get('namespace')}/{e.data.get('pod')}"
                if "pod" in e.data
                else e.data["node"]
            )
            found.add((e.type, str(target), str(e.data.get("reason"))))
    return found


def without_outcome(events: list[Event]) -> list[str]:
    outcomes = {e.data["decision"] for e in events if e.type in EFFECT_TYPES}
    return [e.id for e in events if e.type in DECISION_TYPES and e.id not in outcomes]


async def scenario_run(
    double: ApiDouble, tmp: Path, *, dry_run: bool, log: str | None = None
) -> list[Event]:
    """Run the scenario with ``tide run`` onto ``log`` (a SQLite file in ``tmp`` when None);
    the log's events, after ``tide replay --verify`` passed on it."""
    offset = clock_offset()
    close = asyncio.get_running_loop().time() + CLOSE_AFTER.total_seconds()
    double.grace_scale = 0.05
    cluster(double)
    feeder = asyncio.create_task(hot_metrics(double, offset=offset))
    tide = Tide(double, tmp, offset=offset, dry_run=dry_run, log=log)
    try:
        await tide.start()
        await tide.ready()
        left = close - asyncio.get_running_loop().time()
        assert left > 0, "tide run started after the window closed: the machine is too slow"
        await asyncio.sleep(left + AFTER_CLOSE)
        assert tide.running, await tide.stderr()
        assert await tide.stop() == 0, await tide.stderr()
    finally:
        feeder.cancel()
        if tide.running:
            await tide.stop()
    events = await tide.events()
    code, out, err = await cli("replay", tide.log, "--verify")
    assert code == 0, out + err
    return events


async def test_run_acts_and_dry_run_decides_the_same(double: ApiDouble, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "dry").mkdir()
    events = await scenario_run(double, tmp_path / "real", dry_run=False)
    found = targets(events)
    kinds = Counter(t[0] for t in found)
    assert ("decision.evict", "batch/train-0", "tdm-window-closed") in found, found
    assert ("decision.evict", "batch/train-1", "tdm-window-closed") in found, found
    assert kinds["decision.bind"] == 2, found
    assert ("decision.taint", "hot", "eviction-taint") in found, found
    assert ("decision.untaint", "hot", "eviction-taint") in found, found
    assert any(t[0] == "decision.evict" and t[1].startswith("best/") for t in found), found
    assert without_outcome(events) == []
    assert not [e for e in events if e.type in ("effect.failed", "effect.skipped")]
    # at the right moment: decided at the close (21:00:00 on the run's clock), applied soon
    closing = [e for e in events if e.data.get("reason") == "tdm-window-closed"]
    assert {(e.at.hour, e.at.minute, e.at.second, e.at.microsecond) for e in closing} == {
        (21, 0, 0, 0)
    }
    applied = {e.cause: e.at for e in events if e.type == "effect.applied"}
    assert all(applied[e.id] - e.at < timedelta(seconds=3) for e in closing)
    calls = Counter(what for what, _, status in double.mutations if status < 300)
    assert calls == {"create pods/eviction": 3, "create pods/binding": 2, "patch nodes": 2}
    assert not {"batch/train-0", "batch/train-1"} & set(double.objects["pods"])
    assert double.objects["pods"]["web/gang-0"]["spec"]["nodeName"]
    assert not double.objects["nodes"]["hot"]["spec"].get("taints")
    assert len(double.events) == 7  # one Event per applied decision

    dry = ApiDouble()
    await dry.start()
    try:
        dry_events = await scenario_run(dry, tmp_path / "dry", dry_run=True)
    finally:
        await dry.stop()
    dry.check()
    assert dry.mutations == [] and dry.events == []
    skipped = [e for e in dry_events if e.type == "effect.skipped"]
    assert skipped and all(e.data["error"] == "dry-run" for e in skipped)
    assert not [e for e in dry_events if e.type in ("effect.applied", "effect.failed")]
    assert without_outcome(dry_events) == []
    # the same decisions, but the untaint: a taint that was never applied is not removed
    untaints = {t for t in found if t[0] == "decision.untaint"}
    assert targets(dry_events) == found - untaints
