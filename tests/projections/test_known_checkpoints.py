"""The recorder's own fold in checkpoints (``projections.known``): a restarted ``tide record``
or ``tide run`` takes the known objects of the latest checkpoint that holds them and folds on
from there, and ends with the fold from offset 0, whatever the cut; a bad checkpoint is
skipped for an earlier one (or offset 0) with one warning; a checkpoint of an earlier tide,
without the part, still reads, and its keeper keeps none (the recorder folds from 0)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.drive.sources.recorder import Recorder
from projections.base import CheckpointError
from projections.checkpoint_codec import PARTS, decode_known, decode_snapshot
from projections.checkpoints import nearest_known
from projections.known import Identity, KnownObjects
from streams.backends import open_log
from streams.backends.checkpoints import open_log_store
from streams.events import Event
from tests.controller.drive.sources.helpers import FAST
from tests.projections.golden_checkpoints import as_version_1, version_2
from tests.projections.test_checkpoints_by_position import DAMAGE, _damaged, _log, _records

#: a log with watch records, metric samples and config.applied (stale-metrics), and one
#: with graceful deletions (pressure-graceful)
LOGS = ("stale-metrics.jsonl", "pressure-graceful.jsonl")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _from_zero(records: list[Event], upto: int) -> bytes:
    known = KnownObjects()
    known.fold(records[:upto])
    return known.dump()


async def _nearest_known(url: str) -> tuple[int, KnownObjects] | None:
    async with await open_log(url) as log:
        store = await open_log_store(url, create=False)
        assert store is not None
        async with store:
            return await nearest_known(store, log)


async def _prepared(url: str, warn: Callable[[str], None], below: int = 0) -> tuple[Recorder, int]:
    """A recorder prepared on the log at ``url`` (no API calls: prepare only folds); how
    many records before offset ``below`` it read."""
    async with await open_log(url) as log:
        read = 0
        plain = log.read

        def counted(start: int = 0, stop: int | None = None) -> AsyncIterator[Event]:
            async def gen() -> AsyncIterator[Event]:
                nonlocal read
                async for event in plain(start, stop):
                    read += event.offset < below
                    yield event

            return gen()

        log.read = counted  # type: ignore[method-assign]
        client: Any = None  # prepare() lists nothing: no API calls
        recorder = Recorder(client, log, now=lambda: T0, options=FAST, warn=warn)
        await recorder.prepare()
        await recorder.chain.__aexit__(None, None, None)
        return recorder, read


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=st.sampled_from(LOGS), every=st.sampled_from([1, 7, 50, 1000]))
def test_every_checkpoint_holds_the_known_objects_of_its_records(name: str, every: int) -> None:
    records = _records(name)
    url = Path(_log(name, every).removeprefix("sqlite:///"))
    with sqlite3.connect(url) as db:
        rows = db.execute("SELECT position, state FROM checkpoints_at ORDER BY position").fetchall()
    assert rows
    for position, data in rows:
        known = decode_known(bytes(data))
        assert known is not None
        assert known.dump() == _from_zero(records, position), position
        assert decode_snapshot(bytes(data)).known_objects() is not None


@pytest.mark.parametrize("name", LOGS)
@pytest.mark.parametrize("every", [1, 13, 1000])
def test_a_restarted_recorder_folds_from_the_latest_checkpoint(name: str, every: int) -> None:
    records = _records(name)
    url = _log(name, every)
    found = asyncio.run(_nearest_known(url))
    assert found is not None
    position = found[0]
    warned: list[str] = []
    recorder, read = asyncio.run(_prepared(url, warned.append, below=position - 1))
    assert recorder.known.dump() == _from_zero(records, len(records))
    assert recorder.tap.known is recorder.known
    # the record before the checkpoint (is it the log's?) and on; before it only the first
    # record (the chain writer's check of the run that started the log)
    assert read <= 1
    assert warned == []


@pytest.mark.parametrize("kind", sorted(DAMAGE))
@pytest.mark.parametrize("cut", [12, 99, 175])
def test_a_bad_checkpoint_is_skipped_for_the_known_objects_too(
    tmp_path: Path, kind: str, cut: int
) -> None:
    name, every = "stale-metrics.jsonl", 12
    records = _records(name)
    url, position = _damaged(name, every, cut, kind, tmp_path)
    # only the latest is read first: damage the latest so the skip is seen
    with sqlite3.connect(url.removeprefix("sqlite:///")) as db:
        db.execute("DELETE FROM checkpoints_at WHERE position > ?", (position,))
    warned: list[str] = []
    recorder, _ = asyncio.run(_prepared(url, warned.append))
    assert recorder.known.dump() == _from_zero(records, len(records))
    assert len(warned) == 1, warned
    assert warned[0].startswith(f"warning: skipped checkpoint at position {position}: ")
    earlier = position - every if position % every == 0 else position - position % every
    where = f"position {earlier}" if earlier > 0 else "offset 0"
    assert warned[0].endswith(f"; folding the known objects from {where}")


def test_checkpoints_of_an_earlier_tide_read_and_the_recorder_folds_from_zero(
    tmp_path: Path,
) -> None:
    """The checkpoints an earlier tide kept (version 1, no known part: made from the stored
    version-2 ones) replace this tide's in a copy of the log."""
    name, every = "stale-metrics.jsonl", 13
    records = _records(name)
    url, _ = _damaged(name, every, 13, "corrupt", tmp_path)
    path = url.removeprefix("sqlite:///")
    stored = dict(version_2("stale-metrics"))
    with sqlite3.connect(path) as db:
        positions = [p for (p,) in db.execute("SELECT position FROM checkpoints_at")]
        assert sorted(positions) == sorted(stored)
        for position in positions:
            old = as_version_1(stored[position], known=False)
            snapshot = decode_snapshot(old)  # still reads, the same state
            assert snapshot.known is None
            assert snapshot.state == decode_snapshot(stored[position]).state
            db.execute("UPDATE checkpoints_at SET state=? WHERE position=?", (old, position))
    warned: list[str] = []
    recorder, read = asyncio.run(_prepared(url, warned.append, below=len(records)))
    assert read >= len(records)  # all of it (and the last record of each checkpoint read)
    assert recorder.known.dump() == _from_zero(records, len(records))
    assert warned == []


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (b"[]", "malformed"),
        (b'{"objects": {}, "versions": {}, "samples": []}', "'config'"),
        (
            b'{"objects": {"pods": {"a/b": ["a"]}}, "versions": {}, "samples": [], "config": null}',
            "6 fields",
        ),
        (
            b'{"objects": {}, "versions": {"pods": 7}, "samples": [], "config": null}',
            "not a string",
        ),
        (b'{"objects": {}, "versions": {}, "samples": [], "config": 1}', "not an object"),
        (b"not json", "malformed"),
    ],
)
def test_a_malformed_known_part_is_refused_naming_why(bad: bytes, why: str) -> None:
    with pytest.raises(CheckpointError, match=why):
        KnownObjects.load(bad)


def test_the_known_part_round_trips() -> None:
    known = KnownObjects()
    known.objects["pods"] = {"ns/a": Identity("ns", "a", "u1", "7", "v1", "Pod")}
    known.of("nodes")
    known.versions["pods"] = "7"
    known.samples["metrics.node", "n1"] = "2026-01-01T00:00:00Z"
    known.config = {"tiers": []}
    again = KnownObjects.load(known.dump())
    assert again.dump() == known.dump()
    assert again.objects == known.objects and again.samples == known.samples
    assert PARTS[-1] == "known"
