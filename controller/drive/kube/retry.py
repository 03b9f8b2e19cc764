"""Retry with capped exponential backoff and jitter, for calls to the API server.

Why here and not in policy code: retrying is how the adapter survives a flaky network, a
throttling API server or a restarting control plane; it never changes what tide decides.
The randomness (jitter, so that many watchers do not reconnect in lock step) is therefore
allowed here, and only here; a test passes its own seeded ``random.Random`` and ``sleep``.
The delay of attempt *n* is uniform in ``[0, min(cap, base · 2ⁿ)]`` ("full jitter", as
client-go's ``wait.Backoff`` with ``Jitter`` and ``Cap`` in k8s.io/apimachinery
pkg/util/wait/backoff.go bounds it).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from controller.drive.kube.errors import KubeError

T = TypeVar("T")

__all__ = ["Backoff", "retrying"]


@dataclass
class Backoff:
    """Delays of successive retries: full jitter under a doubling, capped bound.

    Args:
        base: the bound of the first delay, in seconds.
        cap: the largest bound, in seconds.
        rng: the jitter's random source (seed it in tests).
    """

    base: float = 0.5
    cap: float = 30.0
    rng: random.Random = field(default_factory=random.Random)
    attempt: int = 0

    def __post_init__(self) -> None:
        if self.base <= 0 or self.cap < self.base:
            raise ValueError(f"a backoff needs 0 < base <= cap, not {self.base}, {self.cap}")

    def bound(self) -> float:
        """The upper bound of the next delay."""
        return min(self.cap, self.base * float(2 ** min(self.attempt, 62)))

    def next_delay(self) -> float:
        """The next delay; each call doubles the bound up to the cap."""
        delay = self.rng.uniform(0, self.bound())
        self.attempt += 1
        return delay

    def reset(self) -> None:
        """Start again from ``base`` (after a success)."""
        self.attempt = 0


async def retrying(
    call: Callable[[], Awaitable[T]],
    *,
    backoff: Backoff,
    attempts: int | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    on_retry: Callable[[KubeError, float], None] | None = None,
) -> T:
    """``await call()``, retrying a :class:`KubeError` whose ``.retriable`` is true, after
    the wait the server asked for (``Retry-After``) or else the backoff's next delay.

    Args:
        call: makes the request afresh on every attempt.
        backoff: the delays between attempts (reset after a success).
        attempts: how many attempts at most; None: until it succeeds or fails for good.
        sleep: how to wait (a test passes a fake).
        on_retry: told of each retriable failure and the delay before the next attempt.

    Raises:
        KubeError: a non-retriable error at once, or the last error once ``attempts`` are spent.
    """
    tried = 0
    while True:
        tried += 1
        try:
            result = await call()
        except KubeError as exc:
            if not exc.retriable or (attempts is not None and tried >= attempts):
                raise
            delay = backoff.next_delay() if exc.retry_after is None else exc.retry_after
            if on_retry is not None:
                on_retry(exc, delay)
            await sleep(delay)
            continue
        backoff.reset()
        return result
