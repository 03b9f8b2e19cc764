"""Fixtures every test package may use (keep this small; topic fixtures live beside their tests)."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterator

import pytest

from controller.drive.kube.client import KubeClient
from streams.backends.memory import MemoryLog
from tests.kubedouble import ApiDouble


@pytest.fixture(autouse=True)
def _ctrl_c_reaches_children() -> Iterator[None]:
    """Each test starts with SIGINT as a shell gives it: a signal ignored in this process is
    ignored by every child it starts, and the Ctrl-C tests' children would exit 0 (seen on
    a pytest-xdist worker after some earlier test left SIGINT ignored)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield


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


@pytest.fixture(autouse=True)
def _collector_left_as_found() -> Iterator[None]:
    """Every test leaves Python's cyclic collector as it found it (enabled, nothing frozen).

    tide pauses and freezes the collector around bulk work (``streams.gcpause``); a test that
    leaves it paused would change what every later test measures or asserts about it.
    """
    import gc

    enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    yield
    now_enabled, now_frozen = gc.isenabled(), gc.get_freeze_count()
    if not now_enabled and enabled:
        gc.enable()
    if now_frozen > frozen:
        gc.unfreeze()
    assert (now_enabled, now_frozen > frozen) == (enabled, False), (
        "the test left the cyclic collector "
        + ("disabled" if not now_enabled else "with objects frozen")
    )
