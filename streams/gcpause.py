"""Pausing the cyclic garbage collector around bulk work.

Decoded records and folded state hold no reference cycles (reference counting frees
them), but every full collection walks all live objects: with 150,000 pods in memory the
collector costs about as much as the work itself. Bulk imports, folds and log reads pause
it and restore the previous setting afterwards.

A long replay or simulation cannot simply run with the collector off: a decision
session makes a few reference cycles, which only the collector frees. :func:`paced`
runs it on a budget instead: automatic collection off, and every ``every`` records one
collection of what is new since the last, after which the survivors are frozen
(``gc.freeze``: moved out of the collector's sight; reference counting still frees
them). A collection then costs what was allocated since the previous one, not the whole
heap, so the folded cluster is never walked again.
"""

from __future__ import annotations

import gc
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
#: records between two collections in :func:`paced`
EVERY = 20_000


@contextmanager
def paused_gc() -> Iterator[None]:
    """Disable the cyclic collector inside the block (re-enabled if it was on)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def paced(items: Iterable[T], *, every: int = EVERY) -> Generator[T, None, None]:
    """Yield ``items`` with the cyclic collector paced (see the module docstring).

    The heap alive when the first item is asked for is collected once and frozen; then
    every ``every`` items what is new is collected and frozen. At the end (or when the
    consumer stops) everything is unfrozen and the previous setting restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    gc.collect()
    gc.freeze()
    try:
        for i, item in enumerate(items, 1):
            yield item
            if not i % every:
                gc.collect()
                gc.freeze()
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def freeze_folded(*, every: int = EVERY) -> FoldedHeap:
    """For a live controller after its initial fold: collect once and freeze what
    survived (the folded cluster), leaving automatic collection on.

    From then on the collector never walks the folded state again; cycles made later
    (decision sessions) are still freed by the ordinary automatic collections. Call
    :meth:`FoldedHeap.grew` as records are folded: every ``every`` records what
    survived is frozen too, so the heap the collector walks stays what is new. Call
    :meth:`FoldedHeap.thaw` on shutdown.
    """
    gc.collect()
    gc.freeze()
    return FoldedHeap(every)


class FoldedHeap:
    """The frozen folded state of a live controller (see :func:`freeze_folded`)."""

    def __init__(self, every: int) -> None:
        self.every = every
        self._since = 0

    def grew(self, records: int = 1) -> None:
        """``records`` more were folded; collect and freeze every ``every`` of them."""
        self._since += records
        if self._since >= self.every:
            self._since = 0
            gc.collect()
            gc.freeze()

    def thaw(self) -> None:
        """Give the frozen objects back to the collector."""
        gc.unfreeze()
