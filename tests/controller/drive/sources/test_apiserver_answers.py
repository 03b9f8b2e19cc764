"""The watch source and the pager against answers a real kube-apiserver gives and the
double used to spare us: watches it closes at once, ``continue`` tokens that expire on every
page, ``Retry-After`` on lists and watches. Each waits as client-go does, never in a tight
loop. The clock and the sleeps are fakes: the test counts requests and waits, not seconds,
so it holds on a machine of any speed."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from controller.drive.kube.client import KubeClient
from controller.drive.kube.resources import ApiResource
from controller.drive.kube.retry import Backoff
from controller.drive.sources.tap import Tap
from controller.drive.sources.watch import WatchSource
from projections.known import KnownObjects
from tests.builders import build_node, build_pod
from tests.controller.drive.sources.helpers import eventually
from tests.kubedouble import ApiDouble

T0 = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
NODES = ApiResource("", "v1", "nodes")


class StillClock:
    """A clock that never moves: every watch looks as short as the server made it."""

    def now(self) -> datetime:
        return T0


class Watched:
    """A source of nodes against the double, with recorded waits and warnings."""

    def __init__(self, client: KubeClient, *, resumed_at: str = "", timeout: int = 30) -> None:
        known = KnownObjects()
        if resumed_at:
            known.versions["nodes"] = resumed_at
        self.tap = Tap(known, now=lambda: T0)
        self.waits: list[float] = []
        self.warnings: list[str] = []
        self.source = WatchSource(
            client,
            NODES,
            self.tap,
            backoff=Backoff(0.5, 8.0, random.Random(3)),
            warn=self.warnings.append,
            watch_timeout=timeout,
            sleep=self._sleep,
            clock=StillClock(),
        )

    async def _sleep(self, delay: float) -> None:
        self.waits.append(delay)
        await asyncio.sleep(0)

    async def _drain(self) -> None:
        while True:
            await self.tap.queue.get()
            self.tap.queue.task_done()


@contextlib.asynccontextmanager
async def running(watched: Watched) -> AsyncIterator[Watched]:
    tasks = [asyncio.create_task(watched._drain()), asyncio.create_task(watched.source.run())]
    try:
        yield watched
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def watches(double: ApiDouble) -> int:
    return sum(1 for r in double.requests if r.verb == "watch")


async def test_a_watch_the_server_closes_at_once_is_backed_off(
    double: ApiDouble, client: KubeClient
) -> None:
    """client-go's reflector: a watch that ends within a second with no event is an error
    ("very short watch"), and the next one waits the backoff."""
    double.create("nodes", build_node("n1"))
    double.faults.close_watches = True
    async with running(Watched(client)) as watched:
        await eventually(lambda: len(watched.waits) >= 6 or watches(double) >= 200)
    assert len(watched.waits) >= 6, f"{watches(double)} watches, no backoff"
    assert watches(double) <= len(watched.waits) + 1
    bounds = [min(8.0, 0.5 * 2**i) for i in range(len(watched.waits))]
    assert all(0 <= wait <= bound for wait, bound in zip(watched.waits, bounds, strict=True))
    assert "closed within a second with no events" in watched.warnings[0]


async def test_a_watch_with_events_is_no_failure(double: ApiDouble, client: KubeClient) -> None:
    """A watch the server ends at its ``timeoutSeconds`` after events (bookmarks count, as in
    client-go) is watched again at once, however short the clock says it was."""
    double.create("nodes", build_node("n1"))
    async with running(Watched(client, timeout=1)) as watched:
        await eventually(lambda: watched.source.state.ready)
        double.create("nodes", build_node("n2"))
        await eventually(lambda: watches(double) >= 3, timeout=60)
    assert watched.waits == []
    assert watched.source.state.resource_version >= "2"


async def test_every_continue_token_expiring_ends_in_one_full_list(
    double: ApiDouble, client: KubeClient
) -> None:
    """client-go's pager with ``FullListIfExpired``: a 410 on a ``continue`` page drops the
    pages read and reads the collection once without ``limit``."""
    for i in range(7):
        double.create("pods", build_pod("default", f"p{i}"))
    double.faults.compact_each_page = True
    result = await client.list("/api/v1/pods", page=3)
    assert [p["metadata"]["name"] for p in result.items] == [f"p{i}" for i in range(7)]
    pages = [(r.query.get("limit"), r.query.get("continue")) for r in double.requests]
    assert pages == [("3", None), ("3", "7:3"), (None, None)]


@pytest.mark.parametrize(
    ("resumed", "verb"),
    [pytest.param(False, "list", id="list"), pytest.param(True, "watch", id="watch")],
)
async def test_retry_after_is_waited_on_lists_and_watches(
    double: ApiDouble, client: KubeClient, resumed: bool, verb: str
) -> None:
    """API Priority and Fairness' 429 names its wait in ``Retry-After``: the source waits
    exactly that, not its own backoff."""
    double.create("nodes", build_node("n1"))
    double.faults.fail, double.faults.fail_status, double.faults.retry_after = 1, 429, 7
    double.faults.fail_match = "/api/v1/nodes"
    watched = Watched(client, resumed_at=str(double.rv) if resumed else "")
    async with running(watched):
        await eventually(lambda: len(double.requests) >= 2 and watched.source.state.ready)
    assert double.requests[0].verb == verb
    assert watched.waits[:1] == [7.0]
    assert "Too many requests" in watched.warnings[0]
