"""Records a tool generates (a scenario's expansion) are held to the same checks as
imported ones, so that a simulated log always re-imports.

A scenario value that yields an invalid object (a negative request, a name Kubernetes
forbids, a time outside the sane range) is reported against the scenario, naming the
record, instead of reaching the log.
"""

from __future__ import annotations

from collections.abc import Iterable

from streams.events import Event, format_time
from streams.limits import LimitError, bounded_payload, check_time
from streams.validation import ValidationError, validate


def generated_problem(events: Iterable[Event]) -> str | None:
    """Why the first of ``events`` that an import would set aside would be (None: all pass)."""
    for event in events:
        try:
            check_time(event.at)
            bounded_payload(event.data)
            validate(event.type, event.data)
        except (LimitError, ValidationError) as exc:
            return f"generated {event.type} at {format_time(event.at)}: {exc.reason}"
    return None
