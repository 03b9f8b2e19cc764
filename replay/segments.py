"""Replay in parallel: a log verified in segments cut at its checkpoints, one process each.

Why: ``tide replay --verify`` folds the whole log on one core. A checkpoint by position
(:mod:`projections.checkpoints`) is the fold of the log's first *P* records, so the
records from *P* on can be verified by another process that starts from it. This module
plans the segments (:func:`plan_cuts`, :func:`segments_at`), verifies one
(:func:`verify_segment`, a top-level function a worker process or a Dask worker runs: it
gets the log's URL and two positions, never a pickled World) and joins them
(:func:`join`).

Soundness, not luck: a segment's answer is trusted only as far as its start is. Segment
0 starts from offset 0; segment *i + 1* starts from the checkpoint at its cut, whose
state digest (the sha256 of the state its bytes hold, computed as the checkpoint
header's ``state`` is: :func:`projections.checkpoint_codec.state_digest`) must equal the
digest of segment *i*'s end state. Each segment's accounting
(:class:`replay.accounting.Ledger`) knows only the decisions before its start that the
checkpoint's ledger names, so it flags everything the serial check would flag (and maybe
more, e.g. a decision naming a cause across the cut). So when every segment is clean and
every digest matches, the serial check is "identical" too; anything else (a difference,
an unaccounted record, a broken chain, a mismatch, a failed worker) makes :func:`join`
say so, and the caller runs the serial check for the exact report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace

from controller.policy.decide import is_decision_source
from projections.checkpoint_codec import VERSION, Snapshot, decode_checked, state_digest
from projections.checkpoints import Warn, checked
from projections.effects import EffectsState
from projections.world import World
from streams.backends.checkpoints import CheckpointStore
from streams.chain_check import ChainChecker, ChainReport
from streams.events import DECISION_TYPES, Event
from streams.gcpause import paced
from streams.log import EventLog

#: how far past a checkpoint :func:`_at_boundary` looks for the next decision source
_LOOK_AHEAD = 512
#: what starting a segment from a checkpoint costs, counted in records folded
#: (:func:`start_cost`): decoding its bytes and digesting its state (measured on the
#: 400-node benchmark: a 2.2 MB checkpoint of 12,000 pods in 0.57 s, the time ~3,900
#: records of its log fold, ~560 bytes a record) ...
BYTES_PER_RECORD = 560
#: ... and handing the segment to a worker (a forked one starts in milliseconds)
START_RECORDS = 200
#: what digesting a segment's end state costs (:func:`end_cost`): encoding it, 0.34 s for
#: the same state, ~2,300 records, ~950 bytes of its checkpoint a record
DIGEST_BYTES_PER_RECORD = 950


@dataclass(frozen=True)
class Cut:
    """A checkpoint the log can be cut at: its position, log time and size in bytes."""

    position: int
    at: str
    size: int = 0
    #: the checkpoint's layout version (its state digest is computed for it)
    version: int = VERSION


@dataclass(frozen=True)
class Segment:
    """The records ``start <= offset < stop`` (``stop`` None: to the head) of the log at
    ``url``, verified from the checkpoint at ``start`` (offset 0: from nothing)."""

    index: int
    url: str
    start: int
    stop: int | None
    #: the log times of the cuts at each end ("" for the log's ends)
    start_at: str = ""
    stop_at: str = ""
    #: the layout version of the checkpoint at ``stop``: the end state is digested as it
    #: was (a checkpoint of version 1 or 2 holds the cluster's rows in format 2)
    stop_version: int = VERSION
    #: the last segment of a chain check: where the log says it ended cleanly, and the
    #: encoded record there when it lies before this segment (:meth:`finishing`)
    seal: tuple[int, str] | None = None
    sealed: str | None = None
    finish: bool = False

    def finishing(self, seal: tuple[int, str] | None, sealed: str | None) -> Segment:
        """This segment, as the last of a chain check (it finishes the chain)."""
        return replace(self, seal=seal, sealed=sealed, finish=True)

    def describe(self) -> str:
        """``segment 2 (positions 400-800, log times A to B)``."""
        stop = "head" if self.stop is None else str(self.stop)
        times = f", log times {self.start_at or 'start'} to {self.stop_at or 'end'}"
        return f"segment {self.index + 1} (positions {self.start}-{stop}{times})"


@dataclass
class SegmentResult:
    """What one segment found (plain data: it crosses process boundaries)."""

    index: int
    checked: int = 0
    decisions: int = 0
    #: anything that makes the segment's answer not "identical" on its own (one line each)
    problems: list[str] = field(default_factory=list)
    #: the digest of the state the segment started from ("" for offset 0) and ended at
    start_state: str = ""
    end_state: str = ""
    #: the chain checked to the log's end (the last segment of a chain check), None
    #: when there was no chain state to check from
    chain: ChainReport | None = None


@dataclass
class Joined:
    """The segments joined: ``exact`` when every one was clean and every cut matched (then
    ``checked``, ``decisions`` and ``chain`` are the serial check's); else ``mismatches``
    names the first segment whose start state is not the previous one's end, and ``problems``
    what the segments found."""

    exact: bool
    checked: int = 0
    decisions: int = 0
    chain: ChainReport | None = None
    mismatches: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


async def plan_cuts(
    log: EventLog, store: CheckpointStore | None, *, jobs: int, warn: Warn
) -> list[Cut]:
    """Where to cut ``log`` into at most ``jobs`` segments of about equal cost: among the
    checkpoints kept, those nearest where equal-cost segments would end (:func:`choose`).
    Only the chosen ones are checked (a good digest, this log's record before it:
    :func:`projections.checkpoints.checked`; at a decision source boundary:
    :func:`_at_boundary`): reading every checkpoint to plan cost the parent ~0.3 s on a
    log of 25. One that fails is dropped for the next nearest; ``warn`` hears one line
    about the bad ones met."""
    if store is None or jobs < 2:
        return []
    head = await log.head()
    kept = {i.position: i for i in await store.stored() if 0 < i.position < head}
    pool = [Cut(i.position, i.at, i.size) for i in kept.values()]
    good: dict[int, int] = {}  # position -> version
    bad: list[tuple[int, str]] = []
    while True:
        chosen = choose(pool, head=head, jobs=jobs)
        for cut in chosen:
            if cut.position in good:
                continue
            listed = await checked(store, log, kept[cut.position])
            problem = listed.problem
            if problem is None and await _at_boundary(log, cut.position):
                good[cut.position] = listed.version
                continue
            if problem is not None:
                bad.append((cut.position, problem))
            pool.remove(cut)
            break
        else:
            break
    if bad:
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        warn(f"warning: not cutting at checkpoint {bad[0][0]}: {bad[0][1]}{more}")
    return [replace(cut, version=good[cut.position]) for cut in chosen]


async def _at_boundary(log: EventLog, position: int) -> bool:
    """Whether no decision in the records after ``position``, up to the next record that
    can cause decisions, names a cause before it. (A decision further on that does makes
    its segment unclean, so the log is then checked serially: never wrong.)"""
    seen: set[str] = set()
    async for event in log.read(position, position + _LOOK_AHEAD):
        if event.type in DECISION_TYPES and event.cause not in seen:
            return False
        if is_decision_source(event):
            return True
        seen.add(event.id)
    return True


def targets(head: int, jobs: int, start: float, end: float = 0.0) -> list[float]:
    """Where ``jobs`` segments of ``head`` records would end if each cost the same: a
    segment costs its records, plus ``start`` unless it is the first (what starting from a
    checkpoint costs, in records) and ``end`` unless it is the last (what digesting its
    end state costs). The two never count for more than half a segment's share."""
    fixed = start + end
    if fixed > head / (2 * jobs):
        scale = head / (2 * jobs) / fixed
        start, end, fixed = start * scale, end * scale, head / (2 * jobs)
    share = (head + (jobs - 1) * fixed) / jobs
    return [share - end + (k - 1) * (share - fixed) for k in range(1, jobs)]


def start_cost(size: int) -> float:
    """What starting a segment from a checkpoint of ``size`` bytes costs, in records
    folded: decoding it, and handing the segment to a worker."""
    return size / BYTES_PER_RECORD + START_RECORDS


def end_cost(size: int) -> float:
    """What digesting a segment's end state costs, in records folded, where the
    checkpoint there is ``size`` bytes (the state is encoded as it is)."""
    return size / DIGEST_BYTES_PER_RECORD


def choose(cuts: Sequence[Cut], *, head: int, jobs: int) -> list[Cut]:
    """At most ``jobs - 1`` of ``cuts`` (ascending), each the nearest to one of
    :func:`targets` after the one before (the start and end costs of the cuts' median
    size)."""
    inside = [c for c in cuts if 0 < c.position < head]
    if not inside or jobs < 2:
        return []
    sizes = sorted(c.size for c in inside)
    chosen: list[Cut] = []
    size = sizes[len(sizes) // 2]
    for target in targets(head, jobs, start_cost(size), end_cost(size)):
        after = chosen[-1].position if chosen else 0
        free = [c for c in inside if c.position > after]
        if not free:
            break
        chosen.append(min(free, key=lambda c: (abs(c.position - target), c.position)))
    return chosen


def segments_at(url: str, cuts: Sequence[Cut], *, head: int) -> list[Segment]:
    """The segments of a log of ``head`` records cut at ``cuts`` (ascending)."""
    bounds = [Cut(0, ""), *(c for c in cuts if 0 < c.position < head)]
    segments = []
    for i, cut in enumerate(bounds):
        after = bounds[i + 1] if i + 1 < len(bounds) else None
        segments.append(
            Segment(
                index=i,
                url=url,
                start=cut.position,
                stop=after.position if after is not None else None,
                start_at=cut.at,
                stop_at=after.at if after is not None else "",
                stop_version=after.version if after is not None else VERSION,
            )
        )
    return segments


def verify_segment(segment: Segment) -> SegmentResult:
    """Verify one segment (a process of its own: opens the log and its checkpoints by URL)."""
    from streams.backends import open_reader
    from streams.paging import LogReader

    with LogReader(lambda: open_reader(segment.url)) as log:
        return _verify(log, segment)


def _verify(log: object, segment: Segment) -> SegmentResult:
    from replay.verify import RecordedDecisions, replay
    from streams.paging import LogReader

    assert isinstance(log, LogReader)
    result = SegmentResult(segment.index)
    start, stop = segment.start, segment.stop
    world, effects, checker = World(), EffectsState(), ChainChecker()
    chain_on = True
    rows = None
    if start > 0:
        warned: list[str] = []
        keep = segment.stop is not None and segment.stop_version == VERSION
        loaded = log.run(_load(segment.url, log, start, warned.append, keep))
        if loaded is None or loaded[0].position != start:
            why = warned[0] if warned else "gone"
            result.problems.append(f"{segment.describe()}: its checkpoint is not usable ({why})")
            return result
        snapshot, result.start_state = loaded
        world, effects, rows = snapshot.world, snapshot.effects, snapshot.rows
        chain_on = snapshot.chain is not None
        state = snapshot.chain
        if state and segment.sealed is not None:  # the log ended cleanly before this segment
            state = {**state, "sealed_at": segment.sealed}
        checker = ChainChecker.resumed(state) if state else ChainChecker()
    known = [*effects.outcomes, *effects.pending]
    recorded = RecordedDecisions.read(
        _until(log.of_types(DECISION_TYPES, start), stop),
        start=start,
        fetch=lambda offset: next(log.records(offset, offset + 1)),
    )
    last: list[Event] = []
    whole = False

    def feed() -> Iterator[Event]:
        nonlocal whole
        for event, payload in log.stored(start):
            if stop is not None and event.offset >= stop:
                break
            effects.apply(event)
            if chain_on:
                checker.feed(event, segment.seal, payload)
            last[:] = [event]
            yield event
        whole = True

    gen = paced(feed())
    try:
        # never stopped at a difference: the end state is still compared with the next
        # checkpoint (a difference sends the caller to the serial check anyway)
        report = replay(
            gen,
            stop_at_first=False,
            start=start,
            world=world,
            recorded=recorded,
            known_decisions=known,
        )
    except Exception as exc:  # a configuration that cannot be loaded, a forged state...
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        result.problems.append(f"{segment.describe()}: {first}")
        return result
    finally:
        gen.close()
    result.checked, result.decisions = report.checked, report.decisions
    result.problems += [d.describe() for d in report.differences]
    result.problems += [u.describe() for u in report.unaccounted]
    if chain_on and checker.report.broken is not None:
        result.problems.append(checker.report.describe())
    if not whole:
        result.problems.append(f"{segment.describe()}: stopped before its end")
        return result
    if segment.stop is not None:  # the last segment's end is compared with nothing
        end = Snapshot(
            position=world.position,
            at="",
            last=last[0].id if last else None,
            world=world,
            effects=effects,
            chain=checker.state() if chain_on else None,
        )
        # the rows of the checkpoint it started from, kept: only those its records touched
        # are encoded again (each row's bytes are its task's, as far as that checkpoint is
        # trusted: by the digest of the segment before, which :func:`join` compares)
        result.end_state = state_digest(end, segment.stop_version, cache=rows)
    if segment.finish and chain_on:
        result.chain = checker.finish(segment.seal)
    return result


def _until(events: Iterator[Event], stop: int | None) -> Iterator[Event]:
    for event in events:
        if stop is not None and event.offset >= stop:
            return
        yield event


async def _load(
    url: str, log: object, position: int, warn: Callable[[str], None], keep: bool = False
) -> tuple[Snapshot, str] | None:
    """The checkpoint at ``position`` and the sha256 of the state it holds, computed from
    its bytes (not the header's word for it: a forged state shows); ``keep``: with the
    cluster's rows kept (:attr:`~projections.checkpoint_codec.Snapshot.rows`). The caller planned
    the cut at a good checkpoint (:func:`plan_cuts` checked its digest and last record)."""
    from streams.backends.checkpoints import open_log_store
    from streams.paging import LogReader

    assert isinstance(log, LogReader)
    store = await open_log_store(log.log.url or url, create=False)
    if store is None:
        return None
    async with store:
        data = await store.load_at(position)
    if data is None:
        return None
    try:
        snapshot, state = decode_checked(data, keep_rows=keep)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        warn(str(exc))
        return None
    return snapshot, state


def join(segments: Sequence[Segment], results: Sequence[SegmentResult], *, chain: bool) -> Joined:
    """The segments' results joined in order (see :class:`Joined`)."""
    joined = Joined(exact=True)
    for segment, result in zip(segments, results, strict=True):
        joined.checked += result.checked
        joined.decisions += result.decisions
        joined.problems += result.problems
        if segment.index > 0 and not joined.mismatches:  # the first: the rest follow from it
            before = results[segment.index - 1]
            if not before.end_state or not result.start_state:
                joined.mismatches.append(
                    f"{segment.describe()}: the checkpoint it starts from could not be "
                    "compared with the fold of the records before it (a segment did not finish)"
                )
            elif before.end_state != result.start_state:
                joined.mismatches.append(
                    f"{segment.describe()}: the checkpoint it starts from does not match the "
                    f"fold of the records before it (state {result.start_state[:12]}, the "
                    f"fold's {before.end_state[:12]})"
                )
    if joined.problems or joined.mismatches:
        joined.exact = False
        return joined
    if chain:
        joined.chain = results[-1].chain
        if joined.chain is None:
            joined.exact = False
            joined.problems.append("the chain cannot be checked from the checkpoints")
    return joined


def execute(
    segments: Sequence[Segment], executor: Executor, *, here: bool = False
) -> list[SegmentResult]:
    """Every segment through ``executor`` (a process pool, or a Dask client's executor),
    the results in segment order; a worker that fails gives a result naming its segment
    and the error's first line (so the caller checks the log serially). ``here``: the
    first segment is verified in this process while the executor verifies the others
    (a local pool then needs one process fewer, and this one, its modules loaded, does
    not sit idle waiting)."""
    rest = segments[1:] if here else segments
    futures = [executor.submit(verify_segment, s) for s in rest]
    results = [_guarded(segments[0], lambda: verify_segment(segments[0]))] if here else []
    for segment, future in zip(rest, futures, strict=True):
        results.append(_guarded(segment, future.result))
    return results


def _guarded(segment: Segment, result: Callable[[], SegmentResult]) -> SegmentResult:
    try:
        return result()
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return SegmentResult(segment.index, problems=[f"{segment.describe()}: {first}"])
