"""A simulation's inputs from a recording: the valid lines, minus time outliers.

The virtual clock runs from the first input to the last, ticking every session tick, so
one record a decade away from the rest (a node whose clock was reset) would make a
simulation tick for a decade. The recording's times are cut into runs wherever two
consecutive inputs are more than :data:`MAX_GAP` apart; the run with the most inputs
(the earliest on a tie) is simulated and the others are set aside, each with its line
and the reason, like any invalid line.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import orjson

from streams.codec import encode
from streams.events import Event, format_time, parse_time
from streams.log import Quarantined
from streams.recording import read_batches
from streams.validation import Extra

MAX_GAP = timedelta(days=1)


@dataclass
class Inputs:
    """The events to simulate, and every line set aside (in line order)."""

    events: list[Event] = field(default_factory=list)
    set_aside: list[Quarantined] = field(default_factory=list)


def read_inputs(path: Path, *, extra: Extra | None = None) -> Inputs:
    """Read a recording for a simulation (see the module docstring)."""
    events: list[Event] = []
    lines: list[int] = []
    bad: list[Quarantined] = []
    for batch in read_batches(path, extra=extra):
        events.extend(batch.events)
        lines.extend(batch.lines)
        bad.extend(batch.bad)
    kept, outliers = drop_outliers(events, lines, source=str(path))
    return Inputs(kept, sorted(bad + outliers, key=lambda q: q.line))


def drop_outliers(
    events: Sequence[Event],
    lines: Sequence[int],
    *,
    source: str,
    max_gap: timedelta = MAX_GAP,
) -> tuple[list[Event], list[Quarantined]]:
    """``events`` without those outside the largest run of times no more than ``max_gap``
    apart, and those, set aside with their line (``lines[i]`` is ``events[i]``'s)."""
    if not events:
        return [], []
    order = sorted(range(len(events)), key=lambda i: (events[i].at, i))
    runs: list[list[int]] = [[order[0]]]
    for before, index in pairwise(order):
        if events[index].at - events[before].at > max_gap:
            runs.append([])
        runs[-1].append(index)
    if len(runs) == 1:
        return list(events), []
    main = max(runs, key=len)  # max keeps the first of equals: the earliest run
    keep = set(main)
    window = (events[main[0]].at, events[main[-1]].at)
    aside = [
        outlier(events[i], lines[i], window, source=source, max_gap=max_gap)
        for i in sorted(set(range(len(events))) - keep)
    ]
    return [e for i, e in enumerate(events) if i in keep], aside


def main_window(path: Path, *, max_gap: timedelta = MAX_GAP) -> tuple[datetime, datetime] | None:
    """The first and last time of a recording's main run (see the module docstring), read
    in one cheap pass over the lines' ``at`` alone, so a simulation that streams the
    recording can set the outliers aside as it meets them; None for no readable time.

    Every input inside the window belongs to the main run (runs are contiguous in time),
    so the streaming reader keeps exactly the events :func:`drop_outliers` keeps.
    """
    stamps = array("d")
    with path.open("rb") as lines:
        for line in lines:
            try:
                at = parse_time(orjson.loads(line)["at"])
            except (ValueError, KeyError, TypeError, IndexError):
                continue
            stamps.append(at.timestamp())
    if not stamps:
        return None
    ordered = sorted(stamps)
    gap = max_gap.total_seconds()
    best, start = (0, 0), 0
    for i in range(1, len(ordered) + 1):
        if i == len(ordered) or ordered[i] - ordered[i - 1] > gap:
            if i - start > best[1] - best[0]:
                best = (start, i)
            start = i
    first, last = ordered[best[0]], ordered[best[1] - 1]
    return datetime.fromtimestamp(first, UTC), datetime.fromtimestamp(last, UTC)


def outlier(
    event: Event,
    line: int,
    window: tuple[datetime, datetime],
    *,
    source: str,
    max_gap: timedelta = MAX_GAP,
) -> Quarantined:
    """``event`` (at ``line``) set aside for lying outside the main run ``window``."""
    span = f"{format_time(window[0])} .. {format_time(window[1])}"
    return Quarantined(
        source,
        line,
        f"'at' {format_time(event.at)} is more than {max_gap} away from the "
        f"recording's main run ({span}): not simulated",
        encode(event).decode(),
    )
