"""Progress for commands that can run for a while on a large log.

``simulate``, ``replay``, ``audit why``, ``state`` and ``report`` fold or re-run every
record of a log, which takes tens of seconds on a day of a large cluster. They show one
line on stderr, rewritten in place (``replay: 42 %``), and clear it when done — only
when stderr is a terminal (never on a pipe or in a file, so scripted output stays
clean) and only for large jobs (at least :data:`LARGE` records), so small runs do not
flicker. Progress is counted in records (or virtual seconds), never read from a clock.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import TextIO, TypeVar

_T = TypeVar("_T")

LARGE = 20_000
"""Jobs smaller than this many records show no progress."""


class Progress:
    """A percentage on one stderr line; silent unless on a terminal and large enough."""

    def __init__(
        self,
        label: str,
        total: float,
        *,
        size: int | None = None,
        stream: TextIO | None = None,
        minimum: int | None = None,
    ) -> None:
        """``total`` is what 100 % is; ``size`` (default ``total``) is compared with
        ``minimum`` (default :data:`LARGE`) to decide whether the job is large."""
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        big = (size if size is not None else total) >= (LARGE if minimum is None else minimum)
        self.on = big and total > 0 and _is_tty(self.stream)
        self.shown = -1

    def update(self, done: float) -> None:
        """Show ``done`` of the total (written only when the whole percent changes)."""
        if not self.on:
            return
        percent = min(100, max(0, int(done * 100 / self.total)))
        if percent != self.shown:
            self.shown = percent
            self.stream.write(f"\r{self.label}: {percent:3d} %")
            self.stream.flush()

    def close(self) -> None:
        """Clear the line."""
        if self.on and self.shown >= 0:
            self.stream.write("\r" + " " * (len(self.label) + 7) + "\r")
            self.stream.flush()
        self.shown = -1

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def callback(self) -> Callable[[float], None] | None:
        """``update`` when shown, else None (so callers skip the calls altogether)."""
        return self.update if self.on else None


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def tracked(items: Sequence[_T], label: str, *, stream: TextIO | None = None) -> Iterator[_T]:
    """Yield ``items``, showing how far the consumer got (for one-pass folds)."""
    with Progress(label, len(items), stream=stream) as bar:
        if not bar.on:
            yield from items
            return
        for i, item in enumerate(items):
            if not i & 1023:
                bar.update(i)
            yield item
