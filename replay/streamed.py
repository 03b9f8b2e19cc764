"""The audit answers of :mod:`replay.explain`, :mod:`replay.whynot` and
:mod:`replay.report` computed from a log read once, a page at a time.

Their list-taking functions index the whole log (every record by id, every effect by
cause) before answering, so their memory grew with the log. The same answers need only
a few records besides the decisions: the causes of the decisions asked about, the
effects they had, and the deletion of an evicted pod. :class:`WhyFold` and
:class:`ReportFold` take the decisions first (a narrow read of a log's type index), work
out which other records they need, and keep only those while the log streams past once.
The results are the same as the eager functions' (tests/replay/test_streamed.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from projections.world import World
from replay.bindview import BindFold
from replay.explain import Answer, describe_cause, describe_outcome, headline
from replay.report import Before, Day, collect
from replay.units import humanize
from replay.whynot import WhyNot, decided_by_cause
from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from streams.payloads import as_decision, as_watch, evidence_of


def _decision_pod(event: Event) -> str | None:
    d = as_decision(event)
    if not d.get("pod"):
        return None
    return f"{d.get('namespace')}/{d.get('pod')}"


def _watched_pod(event: Event) -> str:
    meta = (as_watch(event).get("object") or {}).get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _nominates(event: Event, pod: str) -> bool:
    preemptor = evidence_of(as_decision(event)).get("preemptor")
    return isinstance(preemptor, str) and _matches(preemptor, pod)


def _names_pod(event: Event, pod: str) -> bool:
    """A decision about another pod that names ``pod``: as the preemptor it nominated,
    or in the plan of the pressure round it is part of."""
    if event.type != "decision.evict":
        return False
    if _nominates(event, pod):
        return True
    evidence = evidence_of(as_decision(event))
    held = evidence.get("round")
    plan = held.get("plan") if isinstance(held, dict) else None
    return isinstance(plan, list) and any(isinstance(p, str) and _matches(p, pod) for p in plan)


def _matches(key: str, pod: str) -> bool:
    return key == pod or key.split("/", 1)[-1] == pod


class WhyFold:
    """``tide audit why POD`` over a stream: :func:`replay.explain.answers` and
    :func:`replay.whynot.why_not` in one pass.

    ``decisions`` are every decision record of the log in offset order; then every
    record of the log is :meth:`feed` in offset order. ``world``: the why-not fold's start
    state (:class:`replay.whynot.WhyNot`), a World folded up to its ``position``; then
    only the records after it are fed (the answers still need the decisions' causes and
    effects among them: give a start before the pod's first decision's cause).
    """

    def __init__(self, pod: str, decisions: Iterable[Event], *, world: World | None = None) -> None:
        decided = [e for e in decisions if e.type in DECISION_TYPES]
        self._about: list[tuple[Event, str]] = []
        for event in decided:
            key = _decision_pod(event)
            if key is not None and (key == pod or key.split("/", 1)[1] == pod):
                self._about.append((event, key))
        self._causes = {e.cause for e, _ in self._about if e.cause}
        self._ids = {e.id for e, _ in self._about}
        self._evicted = {key for e, key in self._about if as_decision(e).get("kind") == "evict"}
        # the other decisions the answer reads: a preemption nominating the pod, a
        # pressure round planning it (both about other pods)
        others = [e for e in decided if _names_pod(e, pod)]
        #: the offset of the first decision the answer reads (None: it reads none)
        self.first: int | None = min(
            (e.offset for e in [*others, *(e for e, _ in self._about)]), default=None
        )
        #: the ids of the records that caused them (to be fed for the answer to hold)
        self.needed = frozenset(e.cause for e in others if e.cause) | self._causes
        #: the offset of the last decision the answer reads (-1: none)
        self.last = max((e.offset for e in [*others, *(e for e, _ in self._about)]), default=-1)
        self._nominated = any(_nominates(e, pod) for e in others)
        self._fed: set[str] = set()
        self._by_id: dict[str, Event] = {}
        self._effects: dict[str, Event] = {}
        self._deleted: dict[str, list[Event]] = {}
        self.whynot = WhyNot(pod, decided_by_cause(decided), world=world)

    def feed(self, event: Event) -> None:
        """One record of the log, in offset order."""
        if event.id in self.needed:
            self._fed.add(event.id)
            if event.id in self._causes:
                self._by_id[event.id] = event
        if event.type in EFFECT_TYPES and event.cause in self._ids:
            self._effects[event.cause] = event
        if event.type == "k8s.watch":
            watch = as_watch(event)
            if watch.get("event") == "DELETED" and watch.get("resource") == "pods":
                key = _watched_pod(event)
                if key in self._evicted:
                    self._deleted.setdefault(key, []).append(event)
        self.whynot.feed(event)

    def settled(self) -> bool:
        """Whether the records still to come can change the answer only by naming the pod
        (call it past :attr:`last` and the pod's last record, then stop feeding): every
        cause needed was fed, no preemption nominated the pod (a node deleted later ends
        its nomination) and the why-not part is settled (:meth:`WhyNot.settled`)."""
        return self.complete and not self._nominated and self.whynot.settled()

    @property
    def complete(self) -> bool:
        """Whether every record in :attr:`needed` was fed."""
        return len(self._fed) == len(self.needed)

    def answers(self) -> list[Answer]:
        """What :func:`replay.explain.answers` says about the pod."""
        found = []
        for event, key in self._about:
            d = as_decision(event)
            cause = self._by_id.get(event.cause) if event.cause else None
            gone = None
            if d.get("kind") == "evict":
                later = (e for e in self._deleted.get(key, ()) if e.offset > event.offset)
                gone = next(later, None)
            evidence = evidence_of(d)
            found.append(
                Answer(
                    decision=event,
                    headline=headline(event, cause),
                    cause=describe_cause(cause),
                    outcome=describe_outcome(event, self._effects.get(event.id), gone),
                    evidence=humanize(evidence),
                )
            )
        return found

    def not_decided(self) -> list[str]:
        """What :func:`replay.whynot.why_not` says about the pod."""
        return self.whynot.finish()


class ReportFold:
    """``tide report`` over a stream: the :class:`replay.report.Day` and the few records
    :func:`replay.report.render` looks up (the decisions, their causes and effects).

    ``decisions`` are every decision record of the log; :meth:`records` wraps the stream
    of every record, keeping those it needs as they pass.
    """

    def __init__(self, decisions: Iterable[Event]) -> None:
        self._decisions = [e for e in decisions if e.type in DECISION_TYPES]
        self._causes = {e.cause for e in self._decisions if e.cause}
        self._ids = {e.id for e in self._decisions}
        self._kept: dict[int, Event] = {}
        self.binds: BindFold | None = None

    def records(self, events: Iterable[Event]) -> Iterable[Event]:
        """``events`` unchanged, noting the ones :meth:`needed` returns."""
        for event in events:
            if (
                event.id in self._causes
                or event.id in self._ids
                or (event.type in EFFECT_TYPES and event.cause in self._ids)
            ):
                self._kept[event.offset] = event
            yield event

    def needed(self) -> list[Event]:
        """The kept records in offset order: enough for every
        :func:`replay.explain.answer_for` of a decision."""
        return [self._kept[offset] for offset in sorted(self._kept)]

    def day(
        self,
        events: Iterable[Event],
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        only: tuple[str, ...] = (),
        bind_views: int | None = None,
        before: Before | None = None,
    ) -> Day:
        """:func:`replay.report.collect` of ``events`` (with the views of the range's first
        ``bind_views`` binds, None: all), keeping what :meth:`needed` needs; ``before``:
        ``events`` start at its World's position (:mod:`replay.report_pass`). The binds'
        fold stays as :attr:`binds` (its :meth:`~replay.bindview.BindFold.pending`)."""
        self.binds = BindFold(self._decisions, since=since, until=until, limit=bind_views)
        return collect(
            self.records(events),
            since=since,
            until=until,
            only=only,
            binds=self.binds,
            before=before,
        )


__all__ = ["ReportFold", "WhyFold"]
