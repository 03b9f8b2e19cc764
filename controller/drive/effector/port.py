"""The effector port: a decision in, its outcome events out (now, and due later).

Why a port: the controller decides the same way whether its decisions land on the
simulated cluster (``tide demo``, ``tide simulate``), on a real API server (``tide run``,
a later issue: Eviction API, Binding subresource, node patches) or nowhere (a dry run, or a
pressure test harness without a cluster). The loop hands every written decision to
:meth:`Effector.apply` once, and every record written to the log to
:meth:`Effector.observe` (so an adapter that plays the API server keeps its own state).

Outcomes are events that name the decision (``cause`` = decision id, ``data.decision``):
``effect.applied``, ``effect.failed`` (with the reason) — and, for the live effector,
``effect.skipped`` (pod already gone, dry run). An effect may be *due later* (a graceful
eviction's notice period, a pod terminating after its grace period, a bound pod starting):
those come back in :attr:`Effects.later`, each with its own ``at``, and the loop writes
them when its clock reaches that time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from streams.events import Event


@dataclass(frozen=True, slots=True)
class Effects:
    """What applying one decision produced: records at the decision's time, and later."""

    now: list[Event] = field(default_factory=list)
    later: list[Event] = field(default_factory=list)


class Effector(Protocol):
    """Turns decisions into effects (see the module docstring)."""

    def observe(self, record: Event) -> None:
        """See one record as it is written to the log (in log order)."""

    def apply(self, decision: Event) -> Effects:
        """Carry out ``decision`` (written already); return its outcome and later effects."""


class NoEffector:
    """Decides only: observes nothing, applies nothing (a harness, or ``--dry-run`` replay)."""

    def observe(self, record: Event) -> None:
        del record

    def apply(self, decision: Event) -> Effects:
        del decision
        return Effects()
