"""Contracts of the log's capabilities (``streams.log.Quarantine``, ``streams.log.IdIndex``).

A backend that has a capability passes its contract; its test module adds a few lines
per capability, reusing the opener of its log contract::

    class TestMyQuarantine(MyBackend, QuarantineContract): ...
    class TestMyIdIndex(MyBackend, IdIndexContract): ...
    class TestMyRecordLookup(MyBackend, RecordLookupContract): ...
"""

from __future__ import annotations

import io
from dataclasses import replace
from typing import cast

import orjson
import pytest

from streams.codec import decode, encode
from streams.conflicts import RecordLookup, content_hash
from streams.events import Event
from streams.log import EventLog, IdIndex, Quarantine, Quarantined, id_index_of, quarantine_of
from streams.recording import import_recording
from tests.builders import T0
from tests.streams.log_contract import BackendContract, LogOpener, ids, tick, ticks


class QuarantineContract(BackendContract):
    """A log that keeps bad input aside."""

    async def test_the_log_has_the_capability(self, log: EventLog) -> None:
        assert isinstance(log, Quarantine)
        assert quarantine_of(log) is log

    async def test_a_new_quarantine_is_empty(self, log: EventLog) -> None:
        assert await quarantine_of(log).quarantine() == []

    async def test_quarantine_round_trip(self, log: EventLog) -> None:
        first = [
            Quarantined("rec.jsonl", 3, "not JSON: unexpected character", "{oops"),
            Quarantined("rec.jsonl", 9, "pod without metadata.name", '{"ünï": "cödé"}'),
        ]
        later = Quarantined("other.jsonl", 1, "unknown event type 'x'", '{"type": "x"}')
        quarantine = quarantine_of(log)
        await quarantine.set_aside(first)
        await quarantine.set_aside([])
        await quarantine.set_aside([later])
        assert await quarantine.quarantine() == [*first, later]

    async def test_setting_the_same_line_aside_twice_keeps_it_once(self, log: EventLog) -> None:
        item = Quarantined("rec.jsonl", 3, "not JSON", "{oops")
        quarantine = quarantine_of(log)
        await quarantine.set_aside([item])
        await quarantine.set_aside([item, item])
        assert await quarantine.quarantine() == [item]

    async def test_the_quarantine_is_not_on_the_log(self, log: EventLog) -> None:
        await quarantine_of(log).set_aside([Quarantined("rec.jsonl", 1, "bad", "{")])
        assert await log.read_all() == []

    async def test_reopening_keeps_the_quarantine(self, opener: LogOpener) -> None:
        if not self.persistent:
            pytest.skip("this backend does not persist")
        item = Quarantined("rec.jsonl", 2, "not JSON", "{")
        async with await opener() as log:
            await quarantine_of(log).set_aside([item])
        async with await opener() as log:
            assert await quarantine_of(log).quarantine() == [item]


class IdIndexContract(BackendContract):
    """A log that says which event ids it holds."""

    async def test_the_log_has_the_capability(self, log: EventLog) -> None:
        assert isinstance(log, IdIndex)
        assert id_index_of(log) is log

    async def test_contains(self, log: EventLog) -> None:
        index = id_index_of(log)
        assert await index.contains(["nope"]) == set()
        await log.append(ticks(0, 5))
        assert await index.contains([tick(1).id, "unknown", tick(4).id]) == {
            tick(1).id,
            tick(4).id,
        }
        assert await index.contains([]) == set()
        assert await index.contains([e.id for e in ticks(5, 8)]) == set()

    async def test_a_refused_batch_leaves_no_ids(self, log: EventLog) -> None:
        bogus = Event(type="k8s.nonsense", at=T0, id="bogus", data={})
        naive = replace(tick(9), id="naive", at=T0.replace(tzinfo=None))
        for bad in (bogus, naive):
            with pytest.raises(ValueError):
                await log.append([tick(0), bad, tick(1)])
        assert await id_index_of(log).contains([tick(0).id, "bogus", "naive"]) == set()

    async def test_reopening_keeps_the_ids(self, opener: LogOpener) -> None:
        if not self.persistent:
            pytest.skip("this backend does not persist")
        async with await opener() as log:
            await log.append(ticks(0, 3))
        async with await opener() as log:
            assert await id_index_of(log).contains([tick(2).id]) == {tick(2).id}


class RecordLookupContract(BackendContract):
    """A log that hands back stored records by id, so that an import can tell a
    duplicate (same content) from a conflict (other content under a known id)."""

    async def test_the_log_has_the_capability(self, log: EventLog) -> None:
        assert isinstance(log, RecordLookup)

    async def test_records_by_id(self, log: EventLog) -> None:
        lookup = cast(RecordLookup, log)
        assert await lookup.records([]) == {}
        stored = await log.append(ticks(0, 5))
        found = await lookup.records([tick(3).id, "unknown", tick(0).id])
        assert found == {tick(3).id: stored[3], tick(0).id: stored[0]}

    async def test_an_import_sets_a_conflict_aside_and_counts_a_duplicate(
        self, log: EventLog
    ) -> None:
        first = encode(tick(1))
        changed = orjson.loads(first)
        changed["data"]["n"] = 99
        lines = b"\n".join([first, orjson.dumps(changed), first]) + b"\n"
        summary = await import_recording(io.BytesIO(lines), log)
        assert (summary.imported, summary.duplicates, summary.conflicts) == (1, 1, 1)
        (conflict,) = summary.set_aside
        stored = await log.read_all()
        ours, theirs = content_hash(decode(orjson.dumps(changed))), content_hash(stored[0])
        assert conflict.line == 2 and ours != theirs
        assert f"content {ours} differs from the stored {theirs}" in conflict.reason
        assert f"conflicts with offset {stored[0].offset}" in conflict.reason
        assert ids(stored) == [tick(1).id]
