"""Accounting for every decision and effect on a log, beside the replay's comparison.

Why: ``replay.verify`` compares the decisions recorded with a cause when it reaches that
cause. A decision whose cause is missing (deleted, never there, or a record that cannot
cause decisions) would never be compared, and would still be folded into the state as
if it were true. This module finds them: one pass over the records, independent of how
the replay reads them, gives each decision that the comparison will not account for,
and each effect that names no decision on the log. ``replay.verify`` reports them as
:class:`Unaccounted` items next to its differences.

It also turns a configuration on the log that cannot be loaded (a tampered or corrupt
``config.applied``) into one ``ValueError`` naming its offset, so the command prints
one line instead of a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass
from typing import TypeVar

from controller.policy.decide import is_decision_source
from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from streams.payloads import as_effect

T = TypeVar("T")


@dataclass(frozen=True)
class Unaccounted:
    """A decision or effect on the log that replay cannot re-derive or tie to a decision."""

    offset: int
    record_id: str
    type: str
    why: str

    def describe(self) -> str:
        """One line naming the offset, the record and why."""
        record = f"{self.type} {self.record_id}"
        return f"unaccounted record at offset {self.offset} ({record}): {self.why}"


class Ledger:
    """Feed every record in offset order (:meth:`see`); :attr:`found` lists what no
    comparison will account for. Records before ``start`` are not checked (the replay
    does not compare them), but they still count as causes and decisions."""

    def __init__(
        self,
        *,
        start: int = 0,
        causes: Container[str] | None = None,
        decisions: Iterable[str] = (),
    ) -> None:
        self.start = start
        self.found: list[Unaccounted] = []
        self._sources: set[str] = set()
        #: ``decisions``: ids of decisions before the records fed (a segment's start)
        self._decisions: set[str] = set(decisions)
        self._ids: set[str] = set()
        #: when given, the causes every checked decision names (a replay's recorded
        #: decisions, read first): only those ids are remembered, not every record's
        self._causes = causes

    def see(self, event: Event) -> None:
        """Account for one record (in offset order)."""
        checked = event.offset < 0 or event.offset >= self.start
        type_ = event.type
        remember = self._causes is None or event.id in self._causes
        if type_ in DECISION_TYPES:
            if checked:
                self._check_decision(event)
            self._decisions.add(event.id)
        elif type_ in EFFECT_TYPES:
            decision = as_effect(event).get("decision")
            if checked and decision not in self._decisions:
                self._add(event, f"its decision {decision!r} is not on the log before it")
        elif remember and is_decision_source(event):
            self._sources.add(event.id)
        if remember:
            self._ids.add(event.id)

    def _check_decision(self, event: Event) -> None:
        cause = event.cause
        if cause is None:
            self._add(event, "it names no cause, so replay cannot re-derive it")
        elif cause not in self._ids:
            self._add(event, f"its cause {cause} is not on the log before it")
        elif cause not in self._sources:
            self._add(event, f"its cause {cause} is not a record that can cause decisions")

    def _add(self, event: Event, why: str) -> None:
        self.found.append(Unaccounted(event.offset, event.id, event.type, why))


def account(events: Iterable[Event], *, start: int = 0) -> list[Unaccounted]:
    """Every decision and effect of ``events`` that replay cannot account for."""
    ledger = Ledger(start=start)
    for event in events:
        ledger.see(event)
    return ledger.found


def loading(what: str, load: Callable[[], T]) -> T:
    """``load()``, with any failure turned into one ``ValueError`` line naming ``what``."""
    try:
        return load()
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(f"{what} cannot be loaded: {first}") from exc
