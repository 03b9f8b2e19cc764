"""The broker fixture of the Kafka tests: one tansu per test session, started on demand."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.streams.tansu import Broker, start_broker


@pytest.fixture(scope="session")
def broker() -> Iterator[Broker]:
    """A tansu broker (memory storage) for the whole session; tests use fresh topics."""
    running = start_broker()
    yield running
    running.stop()
