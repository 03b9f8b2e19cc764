"""``tide run`` as a subprocess against the API double: the window closes, pressure
evicts and taints, pending pods are bound; every decision has its outcome, the log
replays with ``--verify``; ``--dry-run`` on the same scenario changes nothing.

The real run elects itself leader on a Lease and serves ``/metrics``, scraped before it
stops; it runs under deploy/base's RBAC, which the double enforces (tests/live/conftest.py),
and the calls the double recorded show the role grants nothing the run path does not call."""

from __future__ import annotations

import asyncio
import copy
import subprocess
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from streams.backends import open_reader
from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from tests.deploy.test_run import Grant, role
from tests.kubedouble import ApiDouble
from tests.kuberbac import run_rbac
from tests.live.scenario import (
    CLOSE_AFTER,
    CONFIG,
    ROOT,
    TIDE,
    Tide,
    cli,
    clock_offset,
    cluster,
    hot_metrics,
)

#: how long the run lasts at least after the close: the untaint after taintDuration,
#: margins (then until it has decided everything: :func:`settled`)
AFTER_CLOSE = 8.0
#: the longest the run goes on after that, waiting to have decided everything
SETTLE = 20 * AFTER_CLOSE


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


#: the real run campaigns for a Lease (short durations: it wins at once)
ELECT = (
    "--leader-elect",
    "--leader-identity=e2e",
    "--lease-duration=3",
    "--renew-deadline=2",
    "--retry-period=0.5",
)
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(url: str) -> Samples:
    """Every sample of ``url``/metrics: (name, sorted labels) → value."""
    async with aiohttp.ClientSession() as session, session.get(f"{url}/metrics") as answer:
        assert answer.status == 200
        text = await answer.text()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of ``name``'s samples whose labels include ``labels``."""
    return sum(
        value
        for (sample, found), value in samples.items()
        if sample == name and set(labels.items()) <= set(found)
    )


def start_up_seconds() -> float:
    """How long this machine takes, now, to start a Python process importing what
    ``tide run`` imports: the bulk of the run's start-up, measured under the load the
    run will start under."""
    began = time.monotonic()
    subprocess.run([*TIDE[:2], "import controller.cli.run_cmd"], cwd=ROOT, check=True)
    return time.monotonic() - began


async def read(url: str) -> list[Event]:
    """The records of the log a run is writing, read without writing (its lock untouched)."""
    async with await open_reader(url) as log:
        return await log.read_all()


def settled(events: list[Event], *, dry_run: bool) -> bool:
    """Whether the run has decided all the scenario makes it decide, each with its
    outcome: the window's and the pressure's evictions, the binds, the taint (and, for a
    real run, the untaint after ``taintDuration``)."""
    found = targets(events)
    kinds = Counter(t[0] for t in found)
    closed = {t[1] for t in found if t[2] == "tdm-window-closed"}
    return (
        {"batch/train-0", "batch/train-1"} <= closed
        and kinds["decision.bind"] == 2
        and ("decision.taint", "hot", "eviction-taint") in found
        and (dry_run or ("decision.untaint", "hot", "eviction-taint") in found)
        and any(t[0] == "decision.evict" and t[1].startswith("best/") for t in found)
        and without_outcome(events) == []
    )


async def scenario_run(
    double: ApiDouble, tmp: Path, *, dry_run: bool, log: str | None = None
) -> tuple[list[Event], Samples]:
    """Run the scenario with ``tide run`` onto ``log`` (a SQLite file in ``tmp`` when None):
    the log's events, after ``tide replay --verify`` passed on it, and the last scrape.

    Every instant is derived from the run's own start: the window closes a margin after
    the start-up this machine needs now (measured), and the run is stopped once it has
    decided everything (not after a fixed wait), at least :data:`AFTER_CLOSE` after the
    close, so a machine ten times slower passes too."""
    loop = asyncio.get_running_loop()
    close_after = max(
        CLOSE_AFTER, timedelta(seconds=CLOSE_AFTER.total_seconds() / 3 + 4 * start_up_seconds())
    )
    offset = clock_offset(close_after=close_after)
    close = loop.time() + close_after.total_seconds()
    # ``hot`` is hot from the start: its one pressure eviction comes once the run is up,
    # and the cooldown must outlast the whole run, however long the start-up made it
    config = copy.deepcopy(CONFIG)
    lasts = close_after.total_seconds() + AFTER_CLOSE + SETTLE
    config["eviction"]["cpuEvict"]["cooldownPeriod"] = f"{int(lasts) + 60}s"
    double.grace_scale = 0.05
    cluster(double)
    feeder = asyncio.create_task(hot_metrics(double, offset=offset))
    tide = Tide(
        double,
        tmp,
        offset=offset,
        dry_run=dry_run,
        config=config,
        extra=() if dry_run else ELECT,
        log=log,
    )
    try:
        await tide.start()
        await tide.ready(timeout=max(120.0, 2 * close_after.total_seconds()))
        left = close - loop.time()
        assert left > 0, "tide run started after the window closed: the machine is too slow"
        await asyncio.sleep(left + AFTER_CLOSE)
        deadline = loop.time() + SETTLE
        while not settled(await read(tide.log), dry_run=dry_run) and loop.time() < deadline:
            await asyncio.sleep(0.5)
        assert tide.running, await tide.stderr()
        samples = await scrape(tide.url)
        assert await tide.stop() == 0, await tide.stderr()
    finally:
        feeder.cancel()
        if tide.running:
            await tide.stop()
    events = await tide.events()
    code, out, err = await cli("replay", tide.log, "--verify", "--diff")
    assert code == 0, f"tide replay {tide.log} --verify --diff:\n{out}{err}"
    return events, samples


async def test_run_acts_and_dry_run_decides_the_same(double: ApiDouble, tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "dry").mkdir()
    events, samples = await scenario_run(double, tmp_path / "real", dry_run=False)
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
    calls = Counter(
        what for what, _, status in double.mutations if status < 300 and "leases" not in what
    )
    assert calls == {"create pods/eviction": 3, "create pods/binding": 2, "patch nodes": 2}
    assert not {"batch/train-0", "batch/train-1"} & set(double.objects["pods"])
    assert double.objects["pods"]["web/gang-0"]["spec"]["nodeName"]
    assert not double.objects["nodes"]["hot"]["spec"].get("taints")
    assert len(double.events) == 7  # one Event per applied decision
    # /metrics of the running process counted what the log holds
    decided = Counter(
        str(e.data.get("kind") or e.type[9:]) for e in events if e.type in DECISION_TYPES
    )
    for kind, count in decided.items():
        assert total(samples, "tide_decisions_total", kind=kind) == count, kind
    assert total(samples, "tide_decisions_total", reason="tdm-window-closed") == 2
    # every series that moved was exported before (at 0): none carries an empty source
    decisions = [dict(k) for name, k in samples if name == "tide_decisions_total"]
    assert decisions and all(labels["source"] for labels in decisions)
    assert total(samples, "tide_effects_total", kind="evict", result="applied") == 3
    assert total(samples, "tide_effects_total", result="failed") == 0
    assert samples[("tide_leader", ())] == 1
    assert samples[("tide_ready", ())] == 1
    pressure = [e for e in events if e.type == "decision.evict" and e.data["pod"].startswith("be")]
    assert total(samples, "koordlet_eviction_total") == len(pressure)
    assert total(samples, "koordlet_evicted_pods_total") == len(pressure)
    # the cooldown after the eviction, held at the latest metric sample (observer.record)
    assert total(samples, "koordlet_eviction_cooldown_active", node="hot", resource="cpu") == 1
    # least privilege: the double enforced deploy/'s (deploy/base/) RBAC as the tide-run
    # account (tests/live/conftest.py), so every call above was granted
    assert double.forbidden == []
    # a second check, the other way: the role grants nothing the run path does not call
    used: set[Grant] = {(r.group, r.resource, r.verb) for r in double.requests}
    beyond = used - role("tide-record")  # tide record's reads are bound to the account too
    assert beyond <= role("tide-run")
    # not in this scenario, called by tests/live/test_effector.py under the same role: the
    # preemptor's nomination (pods/status patch) and the reconcile's read of a pod
    assert role("tide-run") - beyond == {("", "pods/status", "patch"), ("", "pods", "get")}

    dry = ApiDouble(rbac=run_rbac())
    await dry.start()
    try:
        dry_events, _ = await scenario_run(dry, tmp_path / "dry", dry_run=True)
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
