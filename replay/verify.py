"""Deterministic replay: re-derive every recorded decision from the log and compare.

The log is folded record by record into a fresh :class:`~projections.world.World`. At
each record that can cause decisions (``trigger.fired``, ``metrics.node``) the decisions
are computed again with the configuration in force at that point (the latest
``config.applied``, or an override) and compared with the decisions recorded with that
record as their ``cause``. Recorded decisions are then folded as recorded, so one
difference does not cascade into every later comparison.

Every decision and effect the comparison cannot account for (no cause on the log, an
effect naming no decision) is reported too (``replay.accounting``).

With an override configuration the comparison is counterfactual: at each recorded
trigger, what the other configuration would have decided on the same recorded state.

``start`` verifies only the decision points at or after that offset; the records before
it are folded unchecked, into ``world`` when the caller resumed one from a checkpoint
(records it already holds are skipped by its position).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.policy.decide import decide, is_decision_source
from controller.policy.framework.config import CURRENT_BEHAVIOUR, LEGACY_BEHAVIOUR, TideConfig
from controller.policy.loader import Policy, load_policy
from controller.policy.pressure.config import EvictionConfig
from projections.world import World
from replay.accounting import Ledger, Unaccounted, loading
from streams.codec import decision_line
from streams.events import DECISION_TYPES, Event


@dataclass(frozen=True)
class Difference:
    """The first place where replay and record disagree."""

    offset: int
    cause_id: str
    cause_type: str
    at: str
    recorded: list[str]
    replayed: list[str]

    def describe(self) -> str:
        where = f"{self.cause_type} {self.cause_id}, {self.at}"
        lines = [f"decisions differ at offset {self.offset} ({where}):"]
        rec, rep = set(self.recorded), set(self.replayed)
        lines += [f"  - recorded only: {line}" for line in self.recorded if line not in rep]
        lines += [f"  + replayed only: {line}" for line in self.replayed if line not in rec]
        if rec == rep:
            lines.append("  (same decisions in a different order)")
        return "\n".join(lines)


@dataclass
class ReplayReport:
    """What a replay found."""

    checked: int = 0
    decisions: int = 0
    differences: list[Difference] = field(default_factory=list)
    unaccounted: list[Unaccounted] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences and not self.unaccounted


Configs = tuple[TideConfig, EvictionConfig | None]


class _ConfigCache:
    """Loads each distinct ``config.applied`` payload once, with the one policy loader."""

    def __init__(self, override: Mapping[str, Any] | None, parsed: Policy | None) -> None:
        self.override = override
        self.fixed = parsed
        self._key: tuple[int, int] | None = None
        self._parsed: Policy | None = None

    def get(
        self, raw: Mapping[str, Any] | None, stamped: int = LEGACY_BEHAVIOUR, offset: int = -1
    ) -> Policy:
        """The policy in force: ``stamped`` is the ``config.applied`` record's own level.

        A log's own configuration replays at the level its record was stamped with (one
        without a stamp was written before there were levels: the plugins tide had then); a
        ``behaviour`` key inside the configuration still wins (logs of the first level-2
        writers carry it there).
        """
        if self.fixed is not None:
            return self.fixed
        level = CURRENT_BEHAVIOUR if self.override is not None else stamped
        source = self.override if self.override is not None else (raw or {})
        if self._parsed is None or self._key != (id(source), level):
            what = f"the configuration in force at offset {offset}"
            parsed = loading(what, lambda: load_policy(source, default_behaviour=level))
            self._key, self._parsed = (id(source), level), parsed
        return self._parsed


def replay(
    events: Iterable[Event],
    *,
    override: Mapping[str, Any] | None = None,
    configs: Policy | Configs | None = None,
    stop_at_first: bool = True,
    start: int = 0,
    world: World | None = None,
    progress: Callable[[int], None] | None = None,
    recorded: RecordedDecisions | Mapping[str, Sequence[Event]] | None = None,
    known_decisions: Iterable[str] = (),
) -> ReplayReport:
    """Re-derive and compare every decision of ``events`` (in offset order).

    The configuration is the log's own (``config.applied``) unless ``override`` (a raw
    configuration) or ``configs`` (already parsed, for logs written without one: a
    :class:`~controller.policy.loader.Policy` or a (scheduler, eviction) pair) is given.
    Only decision points with offset ≥ ``start`` are checked (and only their decisions
    counted); ``world`` is the World to fold into (a fresh one by default).

    ``recorded``: the recorded decisions by cause (:class:`RecordedDecisions`, or a
    mapping as :func:`recorded_decisions` gives), when the caller read them apart (a
    narrow query); ``events`` is then iterated once, lazily, so a paged reader keeps only
    a page in memory. Without it ``events`` is read into a list and indexed first.

    ``known_decisions``: the ids of decisions on the log before ``events`` (a segment
    verified from a checkpoint: its ledger's), which effects among ``events`` may name.
    """
    records: Iterable[Event] = events
    if recorded is None:
        records = list(events)
        recorded = recorded_decisions(records, start=start)
    index = recorded if isinstance(recorded, RecordedDecisions) else RecordedDecisions.of(recorded)
    # only the ids some checked decision names as its cause need remembering
    ledger = Ledger(start=start, causes=index.causes, decisions=known_decisions)
    report = ReplayReport(decisions=index.count)
    report.unaccounted = ledger.found
    world = World() if world is None else world
    fixed = Policy.of(*configs) if isinstance(configs, tuple) else configs
    cache = _ConfigCache(override, fixed)
    for i, event in enumerate(records):
        if progress is not None and not i & 1023:
            progress(i)
        ledger.see(event)
        if 0 <= event.offset < start:
            world.apply(event)
            continue
        if event.type == "trigger.fired":
            policy = cache.get(world.config, world.cluster.rules.behaviour, event.offset)
            replayed = decide(world, event, policy.config, policy.eviction)
            world.apply(event)
        else:
            world.apply(event)
            if not is_decision_source(event):
                continue
            policy = cache.get(world.config, world.cluster.rules.behaviour, event.offset)
            replayed = decide(world, event, policy.config, policy.eviction)
        report.checked += 1
        got_lines = [decision_line(e) for e in replayed]
        if not index.matches(event.id, got_lines):
            expected = index.lines(event.id)
            got = [line.decode() for line in got_lines]
            report.differences.append(
                Difference(
                    offset=event.offset,
                    cause_id=event.id,
                    cause_type=event.type,
                    at=event.at.isoformat(),
                    recorded=expected,
                    replayed=got,
                )
            )
            if stop_at_first:
                # the rest is still accounted for (a forged decision after the first
                # difference is reported too)
                if isinstance(records, list):
                    for rest in records[i + 1 :]:
                        ledger.see(rest)
                break
    return report


class RecordedDecisions:
    """The recorded decisions by the id of their cause, kept compact: per cause, a digest
    of its decisions' lines (:func:`streams.codec.decision_line`, in offset order) and
    their offsets. A replay compares the lines it re-derives with the digest; the
    recorded lines themselves are read back (``fetch``, by offset) only to describe a
    difference. About 200 bytes per decision point instead of the decoded decisions
    (~5 KB each with their evidence), so a streamed replay's memory does not grow with the
    number of decisions on the log.

    ``fetch`` None keeps the decisions themselves (an in-memory log's, which are held
    anyway).
    """

    __slots__ = ("_by_cause", "_fetch", "_kept", "count")

    def __init__(self, *, fetch: Callable[[int], Event] | None = None) -> None:
        self._by_cause: dict[str, tuple[bytes, list[int]]] = {}
        self._fetch = fetch
        self._kept: dict[int | tuple[str, int], Event] | None = None if fetch is not None else {}
        #: how many decisions
        self.count = 0

    @classmethod
    def read(
        cls,
        events: Iterable[Event],
        *,
        start: int = 0,
        fetch: Callable[[int], Event] | None = None,
    ) -> RecordedDecisions:
        """The decisions among ``events`` (in offset order) with offset ≥ ``start``."""
        index = cls(fetch=fetch)
        for event in events:
            if event.type in DECISION_TYPES and event.cause is not None and event.offset >= start:
                index.add(event)
        return index

    @classmethod
    def of(cls, recorded: Mapping[str, Sequence[Event]]) -> RecordedDecisions:
        """From decisions already grouped by cause (:func:`recorded_decisions`)."""
        index = cls()
        for decisions in recorded.values():
            for event in decisions:
                index.add(event)
        return index

    def add(self, event: Event) -> None:
        """One more decision of its cause (decisions of one cause in offset order)."""
        cause = event.cause
        if cause is None:
            raise ValueError("a recorded decision names no cause")
        held = self._by_cause.get(cause)
        digest = _chain(held[0] if held else b"", decision_line(event))
        offsets = held[1] if held else []
        offsets.append(event.offset)
        self._by_cause[cause] = (digest, offsets)
        if self._kept is not None:
            self._kept[_key(event.offset, len(offsets), cause)] = event
        self.count += 1

    @property
    def causes(self) -> Container[str]:
        """The ids of the records that caused a recorded decision."""
        return self._by_cause.keys()

    def matches(self, cause: str, lines: Sequence[bytes]) -> bool:
        """Whether ``lines`` are the recorded decisions' lines of ``cause``, in order."""
        held = self._by_cause.get(cause)
        if held is None:
            return not lines
        if len(lines) != len(held[1]):
            return False
        digest = b""
        for line in lines:
            digest = _chain(digest, line)
        return digest == held[0]

    def lines(self, cause: str) -> list[str]:
        """The recorded decisions' lines of ``cause`` (read back: for a difference)."""
        held = self._by_cause.get(cause)
        if held is None:
            return []
        out = []
        for n, offset in enumerate(held[1], 1):
            if self._kept is not None:
                event = self._kept[_key(offset, n, cause)]
            else:
                assert self._fetch is not None
                event = self._fetch(offset)
            out.append(decision_line(event).decode())
        return out


def _chain(digest: bytes, line: bytes) -> bytes:
    return hashlib.blake2b(digest + b"\n" + line, digest_size=16).digest()


def _key(offset: int, n: int, cause: str) -> int | tuple[str, int]:
    # an in-memory log's decisions may not be on a log yet (offset -1): keyed apart
    return offset if offset >= 0 else (cause, n)


def recorded_decisions(events: Iterable[Event], *, start: int = 0) -> dict[str, list[Event]]:
    """The decisions among ``events`` with offset ≥ ``start``, by the id of their cause."""
    found: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        if event.type in DECISION_TYPES and event.cause is not None and event.offset >= start:
            found[event.cause].append(event)
    return dict(found)
