"""Recorders sharing a log without a writer lock (Kafka) each chain their own records.

Two recorders of one cluster append the same observations (one id whoever records it) in
whatever order their watches deliver them. A recorder that linked its records to the
log's tail as it last saw it would, after skipping a record the other one wrote first,
link its next record to a record that is no longer the last: the chain breaks (the CI
failure of ``test_record_kafka``'s two recorders under load). Each scenario interleaves
the appends of recorders on one in-memory log (no writer lock, as on a topic) and checks
that the log verifies and holds each observation once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.drive.sources.recorder import Recorder
from streams.backends.memory import MemoryLog
from streams.chain import check_log
from streams.events import Event, make_event
from tests.controller.drive.sources.helpers import FAST

T0 = datetime(2026, 12, 2, 12, tzinfo=UTC)


def observation(name: str) -> Event:
    """One watched object version (its id is its content's: the same for every recorder)."""
    return make_event("k8s.watch", T0, {"type": "ADDED", "object": {"kind": "Pod", "n": name}})


#: each step: (recorder, what it appends; "stop" ends it cleanly, "kill" abandons it,
#: "start" starts a new recorder under that name)
Step = tuple[str, str]

SCENARIOS: dict[str, list[Step]] = {
    "the other wrote the first of a batch": [("a", "x"), ("b", "xy")],
    "each writes one the other skips": [("a", "x"), ("b", "xy"), ("a", "xyz"), ("b", "z")],
    "alternating new records": [("a", "x"), ("b", "y"), ("a", "z"), ("b", "w")],
    "one writes everything, the other nothing new": [("a", "xyz"), ("b", "xyz")],
    "a killed recorder restarted after the other went on": [
        ("a", "x"),
        ("b", "xy"),
        ("b", "kill"),
        ("a", "yz"),
        ("b", "start"),
        ("b", "xyzw"),
        ("a", "wv"),
    ],
    "both stop cleanly, then a third appends": [
        ("a", "x"),
        ("b", "xy"),
        ("a", "stop"),
        ("b", "stop"),
        ("c", "start"),
        ("c", "yz"),
    ],
}


@pytest.mark.parametrize("steps", list(SCENARIOS.values()), ids=list(SCENARIOS))
async def test_recorders_on_one_unlocked_log_keep_a_whole_chain(steps: list[Step]) -> None:
    log = MemoryLog()
    recorders: dict[str, Recorder] = {}
    started = 0

    async def start(name: str) -> None:
        nonlocal started
        started += 1
        at = T0 + timedelta(microseconds=started)  # a writer id per process lifetime
        client: Any = None  # no API calls: only the append path is used
        recorder = Recorder(client, log, now=lambda: at, options=FAST, warn=print)
        await recorder.chain.__aenter__()
        recorders[name] = recorder

    for name, what in steps:
        if what == "start" or name not in recorders:
            await start(name)
            if what == "start":
                continue
        if what == "kill":
            del recorders[name]  # no seal: its chain just ends
        elif what == "stop":
            await recorders.pop(name).chain.__aexit__(None, None, None)
        else:
            await recorders[name].chain.append([observation(n) for n in what])
    for recorder in recorders.values():
        await recorder.chain.__aexit__(None, None, None)

    report = await check_log(log)
    assert report.broken is None, report.broken
    events = [e async for e in log.read(0)]
    watched = [e.data["object"]["n"] for e in events if e.type == "k8s.watch"]
    written = {n for _, what in steps if what not in ("start", "stop", "kill") for n in what}
    assert sorted(watched) == sorted(written)
