"""Pausing the cyclic garbage collector around bulk work.

Decoded records and folded state hold no reference cycles (reference counting frees
them), but every full collection walks all live objects: with 150,000 pods in memory the
collector costs about as much as the work itself. Bulk imports, folds and log reads pause
it and restore the previous setting afterwards.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
