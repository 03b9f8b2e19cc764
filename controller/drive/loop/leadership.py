"""Who may act: the leadership protocol the live loop asks before deciding and acting.

Why a protocol: with two replicas only the leader decides and acts; a standby records and
folds and takes over within one lease duration. The Lease-based implementation lives with
the Kubernetes adapter (the only importer of the client); a single replica without leader
election uses :class:`AlwaysLeader`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

Callback = Callable[[], Awaitable[None]]


class Leadership(Protocol):
    """Runs an election and calls back when this replica gains or loses the lead."""

    @property
    def is_leader(self) -> bool:
        """Whether this replica holds the lead right now (checked before every effect)."""

    async def run(self, on_started: Callback, on_stopped: Callback) -> None:
        """Campaign until cancelled; ``on_stopped`` runs before anything else on a loss."""

    async def release(self) -> None:
        """Give the lead up now (on SIGTERM), so a standby takes over without waiting."""


class AlwaysLeader:
    """The lone replica: leads from the start until cancelled."""

    def __init__(self) -> None:
        self._leading = False

    @property
    def is_leader(self) -> bool:
        return self._leading

    async def run(self, on_started: Callback, on_stopped: Callback) -> None:
        self._leading = True
        await on_started()
        try:
            await asyncio.Event().wait()
        finally:
            self._leading = False
            await on_stopped()

    async def release(self) -> None:
        self._leading = False
