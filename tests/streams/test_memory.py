"""The in-process log against the log and capability contracts, plus its synchronous append."""

from __future__ import annotations

import pytest

from streams.backends.memory import MemoryLog
from streams.log import EventLog
from tests.streams.capability_contracts import (
    IdIndexContract,
    QuarantineContract,
    RecordLookupContract,
)
from tests.streams.log_contract import BackendContract, DenseLogContract, LogOpener, tick, ticks


class MemoryBackend(BackendContract):
    persistent = False

    @pytest.fixture
    def opener(self) -> LogOpener:
        async def open_memory() -> EventLog:
            return MemoryLog()

        return open_memory


class TestMemoryLog(MemoryBackend, DenseLogContract):
    pass


class TestMemoryQuarantine(MemoryBackend, QuarantineContract):
    pass


class TestMemoryIdIndex(MemoryBackend, IdIndexContract):
    pass


class TestMemoryRecordLookup(MemoryBackend, RecordLookupContract):
    pass


def test_append_now_is_the_synchronous_append() -> None:
    log = MemoryLog()
    assert [e.offset for e in log.append_now(ticks(0, 2))] == [0, 1]
    assert log.append_now([tick(1), tick(2)]) == [tick(2).with_offset(2)]
    assert [e.id for e in log.events] == [tick(n).id for n in range(3)]
