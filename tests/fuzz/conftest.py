"""A time limit for each fuzz case (a hang fails the case instead of the run)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

CASE_SECONDS = 20


class CaseTimeout(Exception):
    """A fuzz case ran past its time limit."""


@contextmanager
def time_limit(seconds: int = CASE_SECONDS) -> Iterator[None]:
    """Raise :class:`CaseTimeout` in the body after ``seconds`` (SIGALRM, main thread)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"case ran past {seconds}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
