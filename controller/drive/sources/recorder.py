"""`tide record`'s engine: the sources, one writer, the probes, a clean stop.

The recorder folds what the log already holds
(:class:`~projections.known.KnownObjects`, which also says where each collection
resumes), appends the configuration when it changed, then runs one :class:`WatchSource`
per watched collection and the :class:`MetricsSource` as tasks, and one writer that
drains the tap's queue in batches: each batch is one atomic ``append`` (the log skips ids
it holds; each payload goes as the canonical bytes the tap hashed for its id, which the
log stores instead of serialising the payload again), and the records set aside go to
the log's quarantine. A restart therefore
starts from the log's own state, and a kill at any point loses nothing: the watch resumes
from the log's last version, or a list reconciles when that version is gone. ``stop``
(SIGTERM) cancels the sources, lets the writer drain what is queued, and returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from controller.drive.kube.client import KubeClient
from controller.drive.kube.resources import WATCHED, ApiResource
from controller.drive.kube.retry import Backoff
from controller.drive.sources.health import HealthServer
from controller.drive.sources.metrics import MetricsSource
from controller.drive.sources.tap import Tap
from controller.drive.sources.watch import WatchSource
from projections.checkpoints import nearest_known
from projections.known import KnownObjects
from streams.backends.checkpoints import open_log_store
from streams.chain import ChainWriter, WriterLock
from streams.events import Event
from streams.log import EventLog, Quarantine, Quarantined

__all__ = ["Recorder", "RecorderOptions"]

#: records per append
BATCH = 2_000


def writer_id(now: datetime) -> str:
    """This process's id as a writer of its own chain on a shared log: host, process and
    start time, so a restarted replica never continues a chain it did not write."""
    host = socket.gethostname().replace("/", "_") or "host"
    return f"{host}.{os.getpid()}.{now:%Y%m%dT%H%M%S%f}"


@dataclass(frozen=True)
class RecorderOptions:
    """How the recorder runs.

    Attributes:
        metrics_interval: seconds between metrics polls; None polls no metrics.
        watch_timeout: the server-side ``timeoutSeconds`` of each watch.
        health_address: ``host:port`` of ``/healthz`` and ``/readyz``; None serves none.
        backoff_base: the first retry delay's bound, in seconds.
        backoff_cap: the largest retry delay's bound, in seconds.
        resources: the collections to list and watch.
    """

    metrics_interval: float | None = 10.0
    watch_timeout: int = 300
    health_address: str | None = "127.0.0.1:8081"
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    resources: tuple[ApiResource, ...] = WATCHED


class Recorder:
    """Records a cluster onto a log (see the module docstring).

    Args:
        client: the API connection.
        log: the log to append to.
        now: the wall clock's ``now`` (stamps each record).
        options: how to run.
        warn: told one line per warning (the command prints it).
        sink: where each batch of records goes instead of ``log.append`` (``tide run``'s
            loop, which folds and decides between appends); it appends them itself. It
            gets the records and their payloads' canonical bytes (``Tap.payloads``).
    """

    def __init__(
        self,
        client: KubeClient,
        log: EventLog,
        *,
        now: Callable[[], datetime],
        options: RecorderOptions,
        warn: Callable[[str], None],
        sink: Callable[[list[Event], list[bytes | None]], Awaitable[object]] | None = None,
    ) -> None:
        self.client = client
        self.sink = sink
        self.log = log
        #: the recorder's append path: the log's hash chain and writer lock, held from
        #: prepare() until run() ends (a clean end seals the log); under ``tide run``
        #: (``sink``), whose replicas share the log, the lock is taken per append. On a
        #: log without a writer lock (Kafka), which several recorders or replicas may
        #: append to at once, each process chains its own records: a link to the log's
        #: tail read without a lock can name a record that is no longer the last
        live = sink is not None
        unlocked = not isinstance(log, WriterLock)
        self.chain = ChainWriter(log, shared=live, writer=writer_id(now()) if unlocked else None)
        self._holding = False
        self._failed = False  # whether run() ended on a failure (then release() seals nothing)
        self.now = now
        self.options = options
        self.warn = warn
        self.known = KnownObjects()
        self.tap = Tap(self.known, now)
        self.sources: list[WatchSource] = []
        self.metrics = (
            MetricsSource(client, self.tap, interval=options.metrics_interval, warn=warn)
            if options.metrics_interval is not None
            else None
        )
        self.health: HealthServer | None = None
        self.written = 0
        self.lag = 0.0

    @property
    def ready(self) -> bool:
        """Prepared, and every source's first list is on the log (or its API is absent)."""
        return bool(self.sources) and all(source.state.ready for source in self.sources)

    def report(self) -> tuple[bool, list[str]]:
        """Readiness and one line per source, for ``/readyz``."""
        lines = []
        for source in self.sources:
            state = source.state
            status = "absent" if state.absent else "listed" if state.ready else "listing"
            lines.append(f"{source.name}: {status} (resourceVersion {state.resource_version})")
        if self.metrics is not None:
            if self.metrics.available is False:
                lines.append("metrics: unavailable; pressure eviction has nothing to act on")
            else:
                lines.append(f"metrics: {'available' if self.metrics.available else 'polling'}")
            lines.extend(self.metrics.report())
        return self.ready, lines

    async def prepare(self, config: Event | None = None) -> None:
        """Fold the log (from the latest checkpoint that holds the known objects, else
        from offset 0: the same fold either way) and append ``config`` (a
        ``config.applied``) unless the last one on the log has the same payload; start
        the probes."""
        if not self._holding:
            await self.chain.__aenter__()
            self._holding = True
        start = await self._resume()
        async for event in self.log.read(start):
            self.known.fold((event,))
        if config is not None and config.data != self.known.config:
            await self.chain.append([config])
        options = self.options
        self.sources = [
            WatchSource(
                self.client,
                resource,
                self.tap,
                backoff=Backoff(options.backoff_base, options.backoff_cap),
                warn=self.warn,
                watch_timeout=options.watch_timeout,
            )
            for resource in options.resources
        ]
        if self.options.health_address is not None:
            self.health = HealthServer(self.options.health_address, self.report)
            await self.health.start()

    async def _resume(self) -> int:
        """Take the known objects of the latest checkpoint kept with the log that holds
        them; the position to fold on from (0: none)."""
        store = await open_log_store(self.log.url, create=False) if self.log.url else None
        if store is None:
            return 0
        async with store:
            found = await nearest_known(store, self.log, warn=self.warn)
        if found is None:
            return 0
        position, known = found
        self.known = self.tap.known = known
        return position

    async def run(self, stop: asyncio.Event, *, release: bool = True) -> None:
        """Record until ``stop`` is set or a source fails for good (then that error is
        raised, after what is queued is written). ``release`` False keeps the writer lock
        (the log unsealed) until :meth:`release`: ``tide run`` writes effect outcomes after."""
        writer = asyncio.create_task(self._write(), name="writer")
        tasks = [asyncio.create_task(s.run(), name=s.name) for s in self.sources]
        if self.metrics is not None:
            tasks.append(asyncio.create_task(self.metrics.run(), name="metrics"))
        stopper = asyncio.create_task(stop.wait(), name="stop")
        try:
            done, _ = await asyncio.wait(
                [*tasks, writer, stopper], return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for task in [*tasks, stopper]:
                task.cancel()
            await asyncio.gather(*tasks, stopper, return_exceptions=True)
            if not writer.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait_for(self.tap.queue.join(), timeout=30)
                writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)
            if self.health is not None:
                await self.health.stop()
            failed = [t for t in [*tasks, writer] if t.done() and not t.cancelled()]
            self._failed = any(t.exception() is not None for t in failed)
            if release:
                await self.release()
        for task in done:
            error = None if task is stopper else task.exception()
            if error is not None:
                raise error

    async def release(self) -> None:
        """Let go of the writer lock; seal the log only when recording ended cleanly."""
        if self._holding:
            self._holding = False
            error = RuntimeError("recording failed") if self._failed else None
            await self.chain.__aexit__(type(error) if error else None, error, None)

    async def _write(self) -> None:
        queue = self.tap.queue
        quarantine = self.log if isinstance(self.log, Quarantine) else None
        while True:
            items = [await queue.get()]
            while len(items) < BATCH and not queue.empty():
                items.append(queue.get_nowait())
            events = [item for item in items if isinstance(item, Event)]
            bad = [item for item in items if isinstance(item, Quarantined)]
            if events:
                payloads = self.tap.payloads(events)
                if self.sink is not None:
                    await self.sink(events, payloads)
                else:
                    await self.chain.append(events, payloads)
                self.written += len(events)
                self.lag = (self.now() - events[0].at).total_seconds()
            if bad:
                if quarantine is not None:
                    await quarantine.set_aside(bad)
                for item in bad:
                    self.warn(f"set aside {item.source}: {item.reason}")
            for _ in items:
                queue.task_done()
