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

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.decide import decide, is_decision_source
from controller.framework.config import CURRENT_BEHAVIOUR, LEGACY_BEHAVIOUR, TideConfig
from controller.policy import Policy, load_policy
from controller.pressure.config import EvictionConfig
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
    recorded: Mapping[str, Sequence[Event]] | None = None,
) -> ReplayReport:
    """Re-derive and compare every decision of ``events`` (in offset order).

    The configuration is the log's own (``config.applied``) unless ``override`` (a raw
    configuration) or ``configs`` (already parsed, for logs written without one: a
    :class:`~controller.policy.Policy` or a (scheduler, eviction) pair) is given.
    Only decision points with offset ≥ ``start`` are checked (and only their decisions
    counted); ``world`` is the World to fold into (a fresh one by default).

    ``recorded``: the recorded decisions by cause (:func:`recorded_decisions`), when the
    caller read them apart (a narrow query); ``events`` is then iterated once, lazily, so
    a paged reader keeps only a page in memory. Without it ``events`` is read into a list
    and indexed first.
    """
    records: Iterable[Event] = events
    if recorded is None:
        records = list(events)
        recorded = recorded_decisions(records, start=start)
    ledger = Ledger(start=start)
    report = ReplayReport(decisions=sum(len(v) for v in recorded.values()))
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
        expected = [decision_line(e).decode() for e in recorded.get(event.id, [])]
        got = [decision_line(e).decode() for e in replayed]
        if expected != got:
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


def recorded_decisions(events: Iterable[Event], *, start: int = 0) -> dict[str, list[Event]]:
    """The decisions among ``events`` with offset ≥ ``start``, by the id of their cause."""
    found: dict[str, list[Event]] = defaultdict(list)
    for event in events:
        if event.type in DECISION_TYPES and event.cause is not None and event.offset >= start:
            found[event.cause].append(event)
    return dict(found)
