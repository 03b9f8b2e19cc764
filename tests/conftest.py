"""Fixtures every test package may use (keep this small; topic fixtures live beside their tests)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from controller.kube.client import KubeClient
from streams.backends.memory import MemoryLog
from tests.kubedouble import ApiDouble


@pytest.fixture
def memory_log() -> MemoryLog:
    """A fresh in-process log."""
    return MemoryLog()


# the API double, for the Kubernetes adapter's, the sources' and the live controller's tests
@pytest.fixture
async def double() -> AsyncIterator[ApiDouble]:
    """A running API double; teardown fails the test on any unexpected request."""
    api = ApiDouble()
    await api.start()
    try:
        yield api
    finally:
        await api.stop()
    api.check()


@pytest.fixture
async def client(double: ApiDouble) -> AsyncIterator[KubeClient]:
    """A client of the double."""
    async with KubeClient.for_host(double.url, request_timeout=5) as kube:
        yield kube
