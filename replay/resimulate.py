"""What a log's *inputs* are, for re-running them under another configuration.

``tide replay LOG --config OTHER`` re-decides the recorded decision points; it cannot
show a decision the recorded run never had a trigger for (a window moved to 22:00 has
no 22:00 boundary on the old log). ``--resimulate`` instead feeds the log's inputs to the
simulator under the other configuration, so the new configuration's own triggers fire,
and compares the two decision streams with :func:`replay.whatif.compare`.

The inputs are the records the world sent in: ``k8s.watch``, ``metrics.node`` and
``metrics.pod`` records that have **no** ``cause``. A record with a cause is tide's own
effect answering a decision (the simulated cluster's watch events of an evicted pod
terminating, its owner recreating it, a bound pod starting; the effect outcomes); under
another configuration those answers differ, and the simulator produces its own.
Triggers, decisions, effects and ``config.applied`` are never inputs: the simulation
writes its own. On a recording of a real cluster, a watch event the cluster produced
because of a decision carries no cause, so it is kept as an input (a known limit: the
new run sees that pod go even if it would not have evicted it). Likewise node samples
are inputs as recorded: on a real cluster, or a simulated log whose scenario had
``evictionFreesUsage`` on, samples after an eviction already show what that run's
eviction freed.

This module only selects and compares; the CLI runs the simulator
(``controller.simulate``, which replay may not import).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from replay.whatif import WhatIf, compare
from streams.events import DECISION_TYPES, JSON, Event, format_time

INPUT_TYPES = frozenset({"k8s.watch", "metrics.node", "metrics.pod"})
"""Record types that can be inputs (when they carry no ``cause``)."""


def is_input(event: Event) -> bool:
    """True for a record the world sent in, not one tide's effects produced."""
    return event.type in INPUT_TYPES and event.cause is None


def select_inputs(events: Iterable[Event]) -> list[Event]:
    """The log's inputs, in log order, as fresh records (no offsets)."""
    return [
        Event(type=e.type, at=e.at, id=e.id, data=e.data, cause=None, v=e.v)
        for e in events
        if is_input(e)
    ]


def horizon(events: list[Event]) -> datetime | None:
    """Where the re-run stops: the time of the log's last record (None on an empty log)."""
    return max((e.at for e in events), default=None)


def decision_dicts(events: Iterable[Event]) -> list[JSON]:
    """Decision records as the decision output's dicts (``at`` plus the payload)."""
    return [
        {"at": format_time(e.at), **e.data}
        for e in events
        if e.type in DECISION_TYPES and e.cause is not None
    ]


def diff_runs(recorded: Iterable[Event], resimulated: Iterable[Event]) -> WhatIf:
    """The what-if of a re-run: the recorded decisions against the re-run's."""
    return compare(decision_dicts(recorded), decision_dicts(resimulated))
