"""The API double for the live controller's tests (fails the test on unexpected calls)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from controller.kube.client import KubeClient
from tests.kubedouble import ApiDouble


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
