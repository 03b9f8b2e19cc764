"""List + watch of one API collection onto the log, the way client-go's Reflector does it.

A source lists its collection (paginated), hands the list to the tap (which appends only
the differences against the log), then watches from the list's resourceVersion with
bookmarks. Each event and bookmark moves the version it resumes from; when the server ends
the stream (``timeoutSeconds``) or the connection drops, it watches again from there; on
410 Gone (the version left the server's history) it lists again — the watch never relists
by itself (kubernetes/client-go tools/cache/reflector.go ``ListAndWatch`` does the same).
Retriable failures (5xx, 429, a transport error) back off with jitter, or wait what the
server's ``Retry-After`` asks; so do a watch that ends within a second with no event and a
list that fails with 410 (client-go's reflector backs off both); a collection the
server does not serve (a Volcano CRD that is not installed) is a warning, and the source
checks again later while the rest goes on.

After a list the source writes a BOOKMARK record with the list's version. A restart
resumes from the log's own last version of the collection (that bookmark, or the last
event after it): it watches on from there, and the server replays what changed while tide
was down. When that version has left the server's history (410), it lists, and the list
reconciles the log with the cluster: what changed is appended once, what did not is not
appended again.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta

from controller.drive.clock import Clock, SystemClock
from controller.drive.kube.client import KubeClient
from controller.drive.kube.errors import Gone, KubeError, NotFound
from controller.drive.kube.resources import ApiResource
from controller.drive.kube.retry import Backoff
from controller.drive.sources.tap import Tap

__all__ = ["SHORT_WATCH", "SourceState", "WatchSource", "bulk"]

#: a watch that ends sooner than this with no event is a failure, backed off like one
#: (client-go's reflector: "very short watch ... lasted less than a second and no items
#: received"); a server that closes every watch at once is not asked again at once
SHORT_WATCH = timedelta(seconds=1)


class _Bulk:
    """How many sources are listing, and whether the collector ran before the first."""

    depth = 0
    was_enabled = False


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic garbage collector while any source lists (counted, so that sources
    listing at once, across awaits, turn it back on only when the last one is done).
    Decoded API objects hold no cycles, and every full collection would walk them all."""
    if _Bulk.depth == 0:
        _Bulk.was_enabled = gc.isenabled()
        gc.disable()
    _Bulk.depth += 1
    try:
        yield
    finally:
        _Bulk.depth -= 1
        if _Bulk.depth == 0 and _Bulk.was_enabled:
            gc.enable()


Warn = Callable[[str], None]
Sleep = Callable[[float], Awaitable[None]]


@dataclass
class SourceState:
    """Where a source is: ``ready`` once its first list is on the log (at once when it
    resumes from the log, or its API is absent), ``absent`` while the server does not
    serve it, the version it resumes from."""

    ready: bool = False
    absent: bool = False
    resource_version: str = ""
    lists: int = 0
    watches: int = 0
    gone: int = 0
    retries: int = 0


class WatchSource:
    """List + watch of one collection (see the module docstring).

    Args:
        client: the API connection.
        resource: the collection.
        tap: where events go.
        backoff: delays after retriable failures.
        warn: told one line per problem worth a human's attention.
        watch_timeout: the server-side ``timeoutSeconds`` of each watch.
        absent_recheck: seconds before asking again for an API that was not served.
        sleep: how to wait (tests pass a fast one).
        clock: tells how long a watch lasted (a short, empty one backs off).
    """

    def __init__(
        self,
        client: KubeClient,
        resource: ApiResource,
        tap: Tap,
        *,
        backoff: Backoff,
        warn: Warn,
        watch_timeout: int = 300,
        absent_recheck: float = 60.0,
        sleep: Sleep = asyncio.sleep,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        self.tap = tap
        self.backoff = backoff
        self.warn = warn
        self.watch_timeout = watch_timeout
        self.absent_recheck = absent_recheck
        self.sleep = sleep
        self.clock = clock if clock is not None else SystemClock()
        self.state = SourceState()
        resumed = tap.known.versions.get(resource.plural, "")
        if resumed:  # the log holds this collection up to there: watch on
            self.state.resource_version = resumed
            self.state.ready = True

    @property
    def name(self) -> str:
        """The collection's plural name (the ``resource`` of its records)."""
        return self.resource.plural

    async def run(self) -> None:
        """List and watch until cancelled.

        Raises:
            KubeError: a failure retrying cannot fix (403: the ClusterRole lacks a verb).
        """
        while True:
            listing = not self.state.resource_version
            try:
                if listing:
                    await self._list()
                began = self.clock.now()
                if await self._watch() == 0 and self.clock.now() - began < SHORT_WATCH:
                    await self._back_off("the watch closed within a second with no events")
                    continue
                self.backoff.reset()
            except Gone as exc:
                self.state.gone += 1
                self.state.resource_version = ""
                if listing:  # a list that keeps failing must not relist in a tight loop
                    await self._back_off(str(exc))
            except NotFound as exc:
                if not self.resource.optional:
                    raise
                self._absent(exc)
                await self.sleep(self.absent_recheck)
            except KubeError as exc:
                if not exc.retriable:
                    raise
                await self._back_off(str(exc), asked=exc.retry_after)

    async def _back_off(self, why: str, *, asked: float | None = None) -> None:
        """Count a retry, say why, and wait: the server's ``Retry-After`` when it sent one,
        else the backoff's next delay."""
        self.state.retries += 1
        delay = self.backoff.next_delay() if asked is None else asked
        self.warn(f"{self.name}: {why}; retrying in {delay:.1f}s")
        await self.sleep(delay)

    async def _list(self) -> None:
        with bulk():  # a list of a large cluster is bulk work: no cyclic GC meanwhile
            await self._list_and_write()

    async def _list_and_write(self) -> None:
        result = await self.client.list(self.resource.path)
        if self.state.absent:
            self.warn(f"{self.name}: {self.resource.path} is served now")
            self.state.absent = False
        self.tap.relisted(self.name, result.items)
        self.tap.bookmark(self.name, result.resource_version)
        self.state.lists += 1
        self.tap.stats.relists[self.name] = self.state.lists
        await self.tap.queue.join()  # the list is on the log before the source is ready
        self.state.resource_version = result.resource_version
        self.state.ready = True

    async def _watch(self) -> int:
        """Watch until the stream ends; how many events and bookmarks it brought."""
        self.state.watches += 1
        seen = 0
        async for event in self.client.watch(
            self.resource.path,
            resource_version=self.state.resource_version,
            timeout_seconds=self.watch_timeout,
        ):
            if event.type != "BOOKMARK":
                self.tap.offer(self.name, event.type, event.object)
            if event.resource_version:
                self.state.resource_version = event.resource_version
            self.backoff.reset()
            seen += 1
        return seen

    def _absent(self, exc: KubeError) -> None:
        if not self.state.absent:
            self.warn(
                f"{self.name}: {self.resource.path} is not served ({exc.status}): "
                f"is the {self.resource.group} CRD installed? tide goes on without it"
                " (implicit jobs, the default queue)"
            )
        self.state.absent = True
        self.state.ready = True
