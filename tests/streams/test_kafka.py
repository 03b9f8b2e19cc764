"""The Kafka log against the log and capability contracts, on a real broker (tansu)."""

from __future__ import annotations

import pytest

from streams.backends.kafka import KafkaLog
from streams.log import EventLog
from tests.streams.capability_contracts import (
    IdIndexContract,
    QuarantineContract,
    RecordLookupContract,
)
from tests.streams.log_contract import BackendContract, LogContract, LogOpener
from tests.streams.tansu import Broker


class KafkaTopic(BackendContract):
    persistent = True

    @pytest.fixture
    def opener(self, broker: Broker) -> LogOpener:
        url = broker.url()  # one fresh topic per test, reopened by every call

        async def open_topic() -> EventLog:
            return await KafkaLog.open(url)

        return open_topic


class TestKafkaLog(KafkaTopic, LogContract):
    pass


class TestKafkaQuarantine(KafkaTopic, QuarantineContract):
    pass


class TestKafkaIdIndex(KafkaTopic, IdIndexContract):
    pass


class TestKafkaRecordLookup(KafkaTopic, RecordLookupContract):
    pass
