"""Exactly once: which decisions the live effector carries out, when, and never twice.

Why a module of its own: the effector knows *how* to act on the API; this knows *whether*
to. Its only memory is :class:`projections.effects.EffectsState`, a fold of the log
(decision id → outcome, and the decisions still open), so a process killed at any point
restarts knowing exactly what is left:

* a decision with an outcome on the log is never handed to the effector again;
* a decision written while this process leads is applied once (one task per decision id;
  a pressure eviction waits for its ``evict_at`` first);
* on a start and whenever the lead is gained, every open decision is *reconciled*
  (:meth:`~controller.drive.effector.kubernetes.KubernetesEffector.reconcile`): the API is asked
  whether it is already done (the process died after the call and before the outcome was
  written) and only otherwise is it applied;
* the outcome record's id is a function of the decision id alone, so a second append of
  it (two replicas, a retried write) is dropped by the log.

On SIGTERM (:meth:`Applier.stop`) calls in flight finish and their outcomes are written;
decisions still waiting for their ``evict_at`` are handed back: they stay open on the log,
and the next leader reconciles them. On a lost lead (:meth:`Applier.halt`) everything is
cancelled at once, before anything else happens.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Protocol

from projections.effects import EffectsState
from streams.events import Event, parse_time
from streams.payloads import as_evict

__all__ = ["Applier", "LiveEffector"]

Write = Callable[[list[Event]], Awaitable[object]]


class LiveEffector(Protocol):
    """The asynchronous effector the applier drives."""

    async def apply(self, decision: Event) -> Event:
        """Carry ``decision`` out; its outcome record."""

    async def reconcile(self, decision: Event) -> Event:
        """An open decision: applied if the API shows it done, else carried out now."""


class Applier:
    """Hands each decision to the effector exactly once (see the module docstring).

    Args:
        effector: who acts.
        effects: the fold of outcomes (kept current by the caller's writes).
        write: appends records to the log (and folds them, ``effects`` included).
        now: the clock's ``now`` (for ``evict_at``).
    """

    def __init__(
        self,
        effector: LiveEffector,
        effects: EffectsState,
        write: Write,
        *,
        now: Callable[[], datetime],
    ) -> None:
        self.effector = effector
        self.effects = effects
        self.write = write
        self.now = now
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._waiting: set[str] = set()

    @property
    def busy(self) -> int:
        """Decisions being carried out (or waiting for their time)."""
        return len(self._tasks)

    def submit(self, decision: Event) -> None:
        """Carry out a decision just written (no-op if it has an outcome or is under way)."""
        self._start(decision, reconcile=False)

    def recover(self) -> int:
        """Reconcile every open decision (on a start or a gained lead); how many."""
        count = 0
        for pending in self.effects.oldest_pending():
            count += self._start(pending.decision, reconcile=True)
        return count

    async def settle(self) -> None:
        """Wait until nothing is under way (tests, and a drained stop)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def stop(self, *, timeout: float = 30.0) -> None:
        """Hand back what waits for its time; let calls in flight finish and be written."""
        for decision_id in list(self._waiting):
            task = self._tasks.get(decision_id)
            if task is not None:
                task.cancel()
        running = list(self._tasks.values())
        if running:
            await asyncio.wait(running, timeout=timeout)
        self.halt()

    def halt(self) -> None:
        """Cancel everything now (the lead was lost): open decisions stay open."""
        for task in self._tasks.values():
            task.cancel()

    async def drain(self) -> None:
        """Wait for cancelled tasks to end."""
        tasks = list(self._tasks.values())
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # ---- one decision -----------------------------------------------------------------

    def _start(self, decision: Event, *, reconcile: bool) -> bool:
        key = decision.id
        if key in self._tasks or self.effects.outcome(key) is not None:
            return False
        task = asyncio.create_task(self._carry_out(decision, reconcile), name=f"effect {key}")
        self._tasks[key] = task
        task.add_done_callback(lambda _: self._tasks.pop(key, None))
        return True

    async def _carry_out(self, decision: Event, reconcile: bool) -> None:
        due = _evict_at(decision)
        if due is not None:
            delay = (due - self.now()).total_seconds()
            if delay > 0:
                self._waiting.add(decision.id)
                try:
                    await asyncio.sleep(delay)
                finally:
                    self._waiting.discard(decision.id)
        if self.effects.outcome(decision.id) is not None:
            return
        act = self.effector.reconcile if reconcile else self.effector.apply
        outcome = await act(decision)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self.write([outcome]))


def _evict_at(decision: Event) -> datetime | None:
    value = as_evict(decision).get("evict_at")
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None
