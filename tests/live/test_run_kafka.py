"""``tide run --log kafka://…`` against the API double and a tansu broker: the live
scenario of ``tests/live/test_run_e2e.py`` with the log on a Kafka topic. Every decision
is on the topic with its outcome, once, and ``tide replay --verify`` and ``tide audit``
read the topic back."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.events import DECISION_TYPES, EFFECT_TYPES
from tests.kubedouble import ApiDouble
from tests.live.scenario import cli
from tests.live.test_run_e2e import scenario_run, targets, without_outcome
from tests.streams.tansu import Broker, start_broker


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    """A tansu broker (memory storage) for this module."""
    running = start_broker()
    yield running
    running.stop()


async def test_run_onto_kafka_decides_acts_and_replays(
    double: ApiDouble, broker: Broker, tmp_path: Path
) -> None:
    url = broker.url(checkpoints=str(tmp_path / "checkpoints.db"))
    events, _ = await scenario_run(double, tmp_path, dry_run=False, log=url)  # replays --verify
    found = targets(events)
    kinds = Counter(t[0] for t in found)
    assert ("decision.evict", "batch/train-0", "tdm-window-closed") in found, found
    assert ("decision.evict", "batch/train-1", "tdm-window-closed") in found, found
    assert kinds["decision.bind"] == 2, found
    assert ("decision.taint", "hot", "eviction-taint") in found, found
    assert ("decision.untaint", "hot", "eviction-taint") in found, found
    assert without_outcome(events) == []
    assert not [e for e in events if e.type in ("effect.failed", "effect.skipped")]
    # each decision once, each with exactly one outcome, on the topic
    decisions = [e for e in events if e.type in DECISION_TYPES]
    outcomes = Counter(e.data["decision"] for e in events if e.type in EFFECT_TYPES)
    assert len({e.id for e in events}) == len(events)
    assert {d.id: outcomes[d.id] for d in decisions} == {d.id: 1 for d in decisions}
    # the effects' calls (the scenario's run campaigns for a Lease too: not an effect)
    calls = Counter(
        what for what, _, status in double.mutations if status < 300 and "leases" not in what
    )
    assert calls == {"create pods/eviction": 3, "create pods/binding": 2, "patch nodes": 2}

    # each replica chains and seals its own records (streams/seal.py): the topic verifies
    code, out, err = await cli("log", "verify", url)
    assert code == 0 and "chain intact" in out and "complete" in out, out + err
    assert all(e.prev is not None and e.prev.startswith("@") for e in events)

    code, out, err = await cli("audit", "summary", "--log", url)
    assert code == 0, err
    summary = " ".join(out.split())
    assert f"decision.evict {kinds['decision.evict']}" in summary, out
