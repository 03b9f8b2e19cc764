"""`tide audit why PREEMPTOR`: the node a preemption nominated the pod to, and what came of it.

Why a module of its own: a preemptor has no decision of its own until it binds — its
nomination is written in the evidence of its victims' ``decision.evict`` records
(``evidence.preemptor``, ``evidence.nominated``; folded by
:mod:`projections.nominations`). Asked about the preemptor, :func:`nomination_answers`
gathers those victims per preemption (one decision point, one node) into one
:class:`replay.explain.Answer`: the nomination in a sentence, the trigger that caused it,
and its outcome — bound there (or elsewhere), released because the pod or the node went
away, or still standing at the end of the log — the same events the fold of
:mod:`projections.nominations` reads.
"""

from __future__ import annotations

from collections.abc import Iterable

from replay.explain import Answer, describe_cause
from replay.units import humanize
from streams.events import JSON, Event, format_time
from streams.payloads import as_decision, as_evict, as_watch, preempt_evidence

__all__ = ["nomination_answers"]


def _matches(key: str, pod: str) -> bool:
    return key == pod or key.split("/", 1)[-1] == pod


def _pod_of(event: Event) -> tuple[str, str]:
    """``(ns/name, spec.nodeName)`` of a pods watch record."""
    obj = as_watch(event).get("object") or {}
    meta = obj.get("metadata") or {}
    node = (obj.get("spec") or {}).get("nodeName") or ""
    return f"{meta.get('namespace')}/{meta.get('name')}", str(node)


def _outcome(records: list[Event], start: int, preemptor: str, node: str) -> str:
    """What ended the nomination made at ``records[start]``, or that it still stands."""
    for event in records[start + 1 :]:
        if event.type == "decision.bind":
            d = as_decision(event)
            if f"{d.get('namespace')}/{d.get('pod')}" == preemptor:
                where = d.get("node")
                same = "there" if where == node else f"on {where}, not on {node}"
                return f"bound {same} at {format_time(event.at)} (decision {event.id})"
        elif event.type == "k8s.watch":
            watch = as_watch(event)
            resource, kind = watch.get("resource"), watch.get("event")
            if resource == "pods":
                key, bound = _pod_of(event)
                if key != preemptor:
                    continue
                if kind == "DELETED":
                    return f"released at {format_time(event.at)}: the preemptor was deleted"
                if bound:
                    return f"released at {format_time(event.at)}: the pod runs on {bound}"
            elif resource == "nodes" and kind == "DELETED":
                name = ((watch.get("object") or {}).get("metadata") or {}).get("name")
                if name == node:
                    return f"released at {format_time(event.at)}: node {node} was deleted"
    return "still standing at the end of the log (the preemptor has not bound)"


def nomination_answers(events: Iterable[Event], pod: str) -> list[Answer]:
    """Every preemption that nominated ``pod`` (``namespace/name`` or a bare name) to a
    node, one :class:`Answer` per decision point and node, in log order."""
    records = list(events)
    by_id = {e.id: e for e in records}
    groups: dict[tuple[str, str, str], list[int]] = {}
    for index, event in enumerate(records):
        if event.type != "decision.evict":
            continue
        evidence = preempt_evidence(as_evict(event))
        preemptor, node = evidence.get("preemptor"), evidence.get("nominated")
        if not isinstance(preemptor, str) or not isinstance(node, str) or not node:
            continue
        if _matches(preemptor, pod):
            groups.setdefault((event.cause or "", preemptor, node), []).append(index)
    found: list[Answer] = []
    for (cause_id, preemptor, node), indexes in groups.items():
        first = records[indexes[0]]
        victims = [_victim(records[i]) for i in indexes]
        evidence = preempt_evidence(as_evict(first))
        shown: JSON = {
            "nominated": node,
            "victims": victims,
            **{k: evidence[k] for k in ("priority", "phase", "mode") if k in evidence},
        }
        if "candidates" in evidence:
            shown["candidates"] = evidence["candidates"]
        found.append(
            Answer(
                decision=first,
                headline=(
                    f"{preemptor} was nominated to {node} at {format_time(first.at)} by the "
                    f"preempt action: {len(victims)} victim(s) evicted there to make room "
                    f"({', '.join(victims)})"
                ),
                cause=describe_cause(by_id.get(cause_id) if cause_id else None),
                outcome=_outcome(records, indexes[-1], preemptor, node),
                evidence=humanize(shown),
            )
        )
    return found


def _victim(event: Event) -> str:
    d = as_decision(event)
    return f"{d.get('namespace')}/{d.get('pod')}"
