"""Checking a log's hash chain (written by ``streams.chain.ChainWriter``).

Why a module of its own: the writer and the checker share only the link format
(``streams/seal.py``); the checker is what ``tide log verify`` and ``tide replay
--verify`` run, over a log, an exported recording or a Kafka topic alike. It walks the
records once, in offset order, and stops at the first break: a record whose link does not
match the record it should follow (the one before it, or for a writer's own chain the
anchor of that writer's records before it), a seal naming another record, a chain that
does not start where it should. At the end it says whether every chain ends in its seal
(complete) or names the offset a tail may have been cut after.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from streams.codec import decode, encode
from streams.events import JSON, Event
from streams.payloads import as_seal
from streams.seal import (
    RUN_PREFIX,
    digest,
    group_anchor,
    is_seal,
    parse_genesis,
    split_writer_link,
)


@dataclass
class ChainReport:
    """What :func:`check_chain` found."""

    records: int = 0
    chained: bool = False
    run: str | None = None
    complete: bool = False
    #: the chain says it ends in a seal record (``streams/seal.py``)
    sealing: bool = False
    #: writers that chained their own records (several writers on one log)
    writers: list[str] = field(default_factory=list)
    #: a sealing chain without its final seal: the offset its tail may be cut after
    unsealed_after: int | None = None
    #: the first bad offset and why, or None
    broken: tuple[int, str] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.broken is None

    @property
    def cut(self) -> bool:
        """A sealing chain that does not end in its seal (a cut tail, or a writer that
        did not end cleanly)."""
        return self.unsealed_after is not None

    def describe(self, *, sealable: bool = True) -> str:
        """One line: the first break, or what the chain says about the log (``sealable``:
        whether it could say it is complete; an exported recording keeps no seal)."""
        if self.broken is not None:
            offset, why = self.broken
            return f"chain broken at offset {offset}: {why}"
        if not self.chained:
            return f"{self.records} records; written before the hash chain: no chain to check"
        whose = f"run {self.run}" + (f", {len(self.writers)} writers" if self.writers else "")
        if self.unsealed_after is not None:
            return (
                f"{self.records} records, chain intact ({whose}), not sealed: the tail "
                f"after offset {self.unsealed_after} was cut, or its writer did not end cleanly"
            )
        if self.sealing or self.complete:
            return f"{self.records} records, chain intact ({whose}), complete"
        state = (
            ("complete" if self.complete else "not marked complete")
            if sealable
            else "not sealed (its chain was started before logs carried their seal)"
        )
        return f"{self.records} records, chain intact ({whose}), {state}"


class ChainChecker:
    """Walks a chain one record at a time (in offset order) and stops at the first break."""

    def __init__(self) -> None:
        self.report = ChainReport()
        self._previous: Event | None = None
        #: the hash of the previous record's line around its stored payload, if given
        self._previous_line: str | None = None
        #: the last record of the log's own chain (links to the record before it)
        self._main: Event | None = None
        self._main_sealing = False
        #: each writer's last record (links of the form ``@<writer>/...``)
        self._writers: dict[str, Event] = {}
        #: each writer's current anchor and the digests of the records that carried it
        self._groups: dict[str, tuple[str, list[str]]] = {}
        self._sealed_at: Event | None = None

    def feed(
        self, event: Event, seal: tuple[int, str] | None = None, payload: bytes | None = None
    ) -> bool:
        """Check the next record; False once the chain is broken (stop feeding then).

        ``payload``: ``event.data``'s bytes as stored, when the reader has them
        (:meth:`streams.paging.LogReader.stored`). The next record's link is first
        compared with the hash of the line built around them, which costs no
        serialisation; only when that differs (bytes that are not the canonical encoding,
        as an old log may hold, or a break) is the payload encoded canonically. Stored
        bytes that are not canonical cannot make a link match that the canonical line
        would not: the writer hashed the canonical line."""
        report, previous = self.report, self._previous
        if report.broken is not None:
            return False
        report.records += 1
        own = split_writer_link(event.prev)
        if own is not None:
            self._writer_record(event, *own)
        elif previous is None:
            report.chained = event.prev is not None
            if report.chained and not (event.prev or "").startswith(RUN_PREFIX):
                report.broken = (event.offset, "the first record does not start a chain")
            report.run, self._main_sealing = parse_genesis(event.prev)
            report.sealing = self._main_sealing
            if is_seal(event):
                report.broken = (event.offset, "a seal with no record before it")
            self._main = event if report.chained else None
        elif not report.chained:
            if event.prev is not None:
                report.broken = (event.offset, "a chain link on a log written without a chain")
        elif event.prev != self._previous_line and event.prev != digest(previous):
            report.broken = (
                event.offset,
                f"its link does not match the record at offset {previous.offset} (a record "
                "was deleted, inserted, moved or altered here)",
            )
        elif is_seal(event) and as_seal(event).get("head") != event.prev:
            report.broken = (event.offset, "the seal names another record than the one before it")
        else:
            self._main = event
        if seal is not None and event.offset == seal[0]:
            self._sealed_at = event
        self._previous = event
        self._previous_line = None if payload is None else digest(event, payload)
        return report.broken is None

    def linked(self, event: Event) -> None:
        """Take the next record as one whose link its writer has just computed from the
        record before it (:class:`streams.chain.ChainWriter` on the log's own chain):
        the state moves on as :meth:`feed` would move it over an intact link, without
        hashing the record (the writer hashed it already, for the next record's link).
        A record of a writer's own chain, a seal, or one when the checker is broken or
        not started is fed as :meth:`feed` feeds it."""
        report = self.report
        if (
            report.broken is not None
            or not report.chained
            or self._previous is None
            or event.prev is None
            or is_seal(event)
            or split_writer_link(event.prev) is not None
        ):
            self.feed(event)
            return
        report.records += 1
        self._main = self._previous = event
        self._previous_line = None

    def state(self) -> JSON:
        """What the checker holds after the records fed so far, as JSON: a checker
        :meth:`resumed` from it checks the records after them as this one would (a
        checkpoint keeps it, so a segment of a log is checked from where it starts). The
        hash of the last record's stored line is left out (a cache: the next link is then
        compared with the last record's canonical hash), so the state does not depend on
        whether the feeder had the stored bytes."""

        def line(event: Event | None) -> str | None:
            return None if event is None else encode(event).decode()

        return {
            "report": asdict(self.report),
            "previous": line(self._previous),
            "main": line(self._main),
            "main_sealing": self._main_sealing,
            "writers": {name: line(event) for name, event in self._writers.items()},
            "groups": {name: [anchor, list(ds)] for name, (anchor, ds) in self._groups.items()},
            "sealed_at": line(self._sealed_at),
        }

    @classmethod
    def resumed(cls, state: Any) -> ChainChecker:
        """A checker in the :meth:`state` given.

        Raises:
            ValueError: ``state`` is not such a state (a ``KeyError`` or ``TypeError``
                inside is turned into it).
        """

        def event(text: Any) -> Event | None:
            return None if text is None else decode(str(text))

        try:
            checker = cls()
            report = dict(state["report"])
            broken = report.pop("broken")
            checker.report = ChainReport(
                **report, broken=None if broken is None else (int(broken[0]), str(broken[1]))
            )
            checker._previous = event(state["previous"])
            checker._main = event(state["main"])
            checker._main_sealing = bool(state["main_sealing"])
            writers = {str(k): event(v) for k, v in dict(state["writers"]).items()}
            checker._writers = {k: v for k, v in writers.items() if v is not None}
            checker._groups = {
                str(k): (str(v[0]), [str(d) for d in v[1]])
                for k, v in dict(state["groups"]).items()
            }
            checker._sealed_at = event(state["sealed_at"])
        except (KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"not a chain checker's state: {exc!r}") from exc
        return checker

    def _writer_record(self, event: Event, writer: str, link: str) -> None:
        report = self.report
        group = self._groups.get(writer)
        if group is None:
            run, _ = parse_genesis(link)
            if run is None:
                report.broken = (
                    event.offset,
                    f"writer {writer}'s earlier records are not on the log (deleted or moved)",
                )
            elif is_seal(event):
                report.broken = (event.offset, f"writer {writer}'s seal has no record before it")
            report.chained = report.sealing = True
            report.run = report.run or run
            report.writers.append(writer)
            self._groups[writer] = (link, [digest(event)])
        elif link == group[0] and not is_seal(event):
            group[1].append(digest(event))
        elif link == group_anchor(*group):
            if is_seal(event) and as_seal(event).get("head") != link:
                report.broken = (event.offset, f"writer {writer}'s seal names another record")
            self._groups[writer] = (link, [digest(event)])
        else:
            report.broken = (
                event.offset,
                f"its link does not match writer {writer}'s records up to offset "
                f"{self._writers[writer].offset} (a record was deleted, inserted, moved or "
                "altered here)",
            )
        self._writers[writer] = event

    def finish(self, seal: tuple[int, str] | None = None) -> ChainReport:
        """The report, with the tail checked against ``seal`` (from
        ``streams.chain.Sealable.sealed``): a seal past the last record means the tail was
        cut; a seal whose hash differs from its record's means that record was altered."""
        report, previous, sealed_at = self.report, self._previous, self._sealed_at
        if report.broken is not None or not report.chained:
            return report
        ends = list(self._writers.values())
        if self._main_sealing and self._main is not None:
            ends.append(self._main)
        if report.sealing:
            unsealed = [end.offset for end in ends if not is_seal(end)]
            report.complete = not unsealed
            if unsealed:
                report.unsealed_after = max(unsealed)
        if seal is None:
            return report
        if sealed_at is None:
            after = previous.offset + 1 if previous is not None else 0
            report.broken = (after, f"the log ended cleanly at offset {seal[0]}: its tail was cut")
        elif digest(sealed_at) != seal[1]:
            report.broken = (seal[0], "the record where the log ended cleanly was altered")
        elif previous is not None and previous.offset != seal[0]:
            report.notes.append(f"records after offset {seal[0]} were appended since it ended")
        elif not report.sealing:
            report.complete = True
        return report


def check_chain(events: Iterable[Event], seal: tuple[int, str] | None = None) -> ChainReport:
    """Walk the chain of ``events`` (in offset order); see :class:`ChainChecker`."""
    checker = ChainChecker()
    for event in events:
        if not checker.feed(event, seal):
            break
    return checker.finish(seal)
