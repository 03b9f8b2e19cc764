"""Questions over a log: why was this pod evicted or bound, and what was decided when
and where (the timeline of one pod or node is :mod:`replay.timeline`).

Everything is answered from the records alone: a decision names its cause (the trigger
or metric sample), carries its evidence, and its outcome is the effect whose cause is
the decision.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from streams.events import DECISION_TYPES, EFFECT_TYPES, Event, format_time
from streams.payloads import (
    as_decision,
    as_effect,
    as_node_sample,
    as_pod_sample,
    as_trigger,
)
from streams.subjects import namespace_key, node_key, target_of

__all__ = ["Explanation", "decision_keys", "explain", "select_decisions", "target_of"]


@dataclass(frozen=True)
class Explanation:
    """A decision with what caused it and what came of it."""

    decision: Event
    cause: Event | None
    outcome: Event | None

    def lines(self) -> list[str]:
        d = as_decision(self.decision)
        target = (d.get("pod") and f"{d.get('namespace')}/{d.get('pod')}") or d.get("node")
        out = [
            f"{format_time(self.decision.at)}  {d.get('kind')} {target}"
            + (f" on {d.get('node')}" if d.get("pod") else "")
            + f"  reason={d.get('reason')} source={d.get('source')}"
            + f"  (offset {self.decision.offset})"
        ]
        if self.cause is not None:
            out.append(f"  caused by {_describe(self.cause)}")
        for key, value in sorted((d.get("evidence") or {}).items()):
            out.append(f"  evidence.{key} = {_short(value)}")
        if self.outcome is None:
            out.append("  outcome: no effect recorded (pending, or dry run)")
        else:
            err = as_effect(self.outcome).get("error")
            out.append(
                f"  outcome: {self.outcome.type} at {format_time(self.outcome.at)}"
                + (f": {err}" if err else "")
            )
        return out


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 160 else text[:157] + "..."


def _describe(event: Event) -> str:
    if event.type == "trigger.fired":
        trigger = as_trigger(event)
        zone = f" zone={trigger['zone']}" if trigger.get("zone") else ""
        return (
            f"trigger {trigger.get('trigger')} ({trigger.get('kind')}{zone})"
            f" at {format_time(event.at)}"
        )
    if event.type.startswith("metrics."):
        usage: object = None  # a pod sample's usage is per container, none at the top
        if event.type == "metrics.node":
            sample = as_node_sample(event)
            meta, usage = sample.get("metadata") or {}, sample.get("usage")
        else:
            meta = as_pod_sample(event).get("metadata") or {}
        name = meta.get("name")
        return f"{event.type} sample of {name} at {format_time(event.at)}: {usage}"
    return f"{event.type} {event.id} at {format_time(event.at)}"


def explain(events: Iterable[Event], pod: str) -> list[Explanation]:
    """Every decision about ``pod`` (``namespace/name`` or a bare name), explained."""
    records = list(events)
    by_id = {e.id: e for e in records}
    outcomes = {e.cause: e for e in records if e.type in EFFECT_TYPES and e.cause}
    found = []
    for event in records:
        if event.type not in DECISION_TYPES:
            continue
        key, _ = target_of(event)
        if key and (key == pod or key.split("/", 1)[1] == pod):
            cause = by_id.get(event.cause) if event.cause else None
            found.append(Explanation(event, cause, outcomes.get(event.id)))
    return found


def decision_keys(*, node: str | None, namespace: str | None) -> list[str] | None:
    """The subject keys (:mod:`streams.subjects`) under which every decision
    :func:`select_decisions` can take with these filters is filed; None when they name
    neither a node nor a namespace (every decision may be taken)."""
    if node:
        return [node_key(node)]
    if namespace:
        return [namespace_key(namespace)]
    return None


def select_decisions(
    events: Iterable[Event],
    *,
    reason: str | None = None,
    node: str | None = None,
    namespace: str | None = None,
    kind: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Iterator[Event]:
    """Decisions filtered by reason, node, namespace, kind and time range (inclusive)."""
    for event in events:
        if event.type not in DECISION_TYPES:
            continue
        d = as_decision(event)
        if reason and d.get("reason") != reason:
            continue
        if node and d.get("node") != node:
            continue
        if namespace and d.get("namespace") != namespace:
            continue
        if kind and d.get("kind") != kind:
            continue
        if since and event.at < since:
            continue
        if until and event.at > until:
            continue
        yield event
