"""The log contracts hold for a log with sparse offsets (the contracts never count)."""

from __future__ import annotations

import pytest

from streams.log import EventLog
from tests.streams.capability_contracts import IdIndexContract, QuarantineContract
from tests.streams.log_contract import BackendContract, LogContract, LogOpener, ticks
from tests.streams.sparse import STRIDE, SparseLog


class SparseBackend(BackendContract):
    persistent = False

    @pytest.fixture
    def opener(self) -> LogOpener:
        async def open_sparse() -> EventLog:
            return SparseLog()

        return open_sparse


class TestSparseLog(SparseBackend, LogContract):
    pass


class TestSparseQuarantine(SparseBackend, QuarantineContract):
    pass


class TestSparseIdIndex(SparseBackend, IdIndexContract):
    pass


async def test_the_sparse_log_really_skips_offsets() -> None:
    log = SparseLog()
    added = await log.append(ticks(0, 3))
    assert [e.offset for e in added] == [STRIDE, 2 * STRIDE, 3 * STRIDE]
    assert await log.head() == 3 * STRIDE + 1
    assert [e.offset for e in await log.read_all(STRIDE + 1, 3 * STRIDE)] == [2 * STRIDE]
