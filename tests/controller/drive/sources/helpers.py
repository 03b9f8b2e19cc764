"""Comparing a log with the API double: the objects and last versions each holds."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from controller.drive.kube.client import KubeClient
from controller.drive.sources.recorder import Recorder, RecorderOptions
from projections.known import KnownObjects
from streams.events import Event
from streams.log import EventLog
from tests.kubedouble import ApiDouble

WATCHED = ("nodes", "pods", "podgroups", "queues", "poddisruptionbudgets")
FAST = RecorderOptions(
    metrics_interval=None, watch_timeout=2, health_address=None, backoff_base=0.01, backoff_cap=0.1
)

State = dict[tuple[str, str], str]


def log_state(events: Sequence[Event]) -> State:
    """(resource, key) → last resourceVersion, folded from the log's watch records."""
    known = KnownObjects()
    known.fold(events)
    return {
        (resource, key): identity.resource_version
        for resource, objects in known.objects.items()
        for key, identity in objects.items()
    }


def double_state(double: ApiDouble) -> State:
    """(resource, key) → resourceVersion of every object the double holds."""
    return {
        (resource, key): obj["metadata"]["resourceVersion"]
        for resource in WATCHED
        for key, obj in double.objects.get(resource, {}).items()
    }


def duplicates(events: Sequence[Event]) -> list[tuple[str, str, str, str]]:
    """Watch records that say the same thing (resource, event, key, version) twice."""
    seen = Counter(
        (
            e.data["resource"],
            e.data["event"],
            e.data["object"]["metadata"].get("namespace", "")
            + "/"
            + e.data["object"]["metadata"]["name"],
            e.data["object"]["metadata"].get("resourceVersion", ""),
        )
        for e in events
        if e.type == "k8s.watch" and e.data["event"] != "BOOKMARK"
    )
    return [key for key, count in seen.items() if count > 1]


async def eventually(check: Callable[[], bool], *, timeout: float = 10.0) -> None:
    """Wait until ``check()`` holds (polling), or fail naming the timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            raise AssertionError(f"not reached within {timeout}s")
        await asyncio.sleep(0.02)


class Running:
    """A recorder running as a task over ``log`` until :meth:`stop`."""

    def __init__(self, client: KubeClient, log: EventLog, options: RecorderOptions = FAST) -> None:
        self.warnings: list[str] = []
        self.recorder = Recorder(
            client, log, now=lambda: datetime.now(UTC), options=options, warn=self.warnings.append
        )
        self.stopping = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Recorder:
        await self.recorder.prepare()
        self.task = asyncio.create_task(self.recorder.run(self.stopping))
        await eventually(lambda: self.recorder.ready)
        return self.recorder

    async def __aexit__(self, *exc: object) -> None:
        self.stopping.set()
        assert self.task is not None
        await self.task


async def converge(log: EventLog, double: ApiDouble, *, timeout: float = 15.0) -> None:
    """Wait until the log holds exactly the double's objects at their versions."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while log_state(await log.read_all()) != double_state(double):
        if loop.time() > deadline:
            missing = set(double_state(double).items()) ^ set(
                log_state(await log.read_all()).items()
            )
            raise AssertionError(
                f"the log and the double differ after {timeout}s: {sorted(missing)}"
            )
        await asyncio.sleep(0.05)
