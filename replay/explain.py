"""`tide audit why` in sentences: a headline per reason code, then cause, outcome, evidence.

The log already holds the whole answer to "why was this pod evicted?" — the decision,
the trigger or metric sample that caused it, its evidence and the effect that came of
it — but as raw records. This module turns one decision into an :class:`Answer`: a
headline a person can read (one builder per reason code in :data:`HEADLINES`; a test
holds that every code has one), the cause and the outcome in words, and the evidence
with units (:mod:`replay.units`). ``Answer.as_json`` is the same for scripts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from projections.parsing import milli, units
from replay.units import amount, cores, gib, humanize, number, percent, seconds
from streams.events import DECISION_TYPES, EFFECT_TYPES, JSON, Event, format_time
from streams.evidence import EvidenceDict, PreemptEvidence, PressureEvidence, TdmBudgetEvidence
from streams.payloads import (
    REASON_CODES,
    TaintPayload,
    allocate_evidence,
    as_bind,
    as_decision,
    as_effect,
    as_evict,
    as_node_sample,
    as_taint,
    as_trigger,
    as_watch,
    evidence_of,
    faulty_oom_evidence,
    memory_leak_evidence,
    preempt_evidence,
    pressure_evidence,
    taint_evidence,
    tdm_evidence,
    untaint_evidence,
)


@dataclass(frozen=True)
class Answer:
    """One decision explained: headline, cause, outcome and evidence with units."""

    decision: Event
    headline: str
    cause: str
    outcome: str
    evidence: EvidenceDict
    #: a bind's per-node view (:mod:`replay.bindview`), compact lines and JSON, when derived
    per_node: tuple[str, ...] = ()
    per_node_json: JSON | None = None

    def text(self) -> str:
        """The answer as a person reads it: sentences first, then the evidence as YAML."""
        body = yaml.safe_dump(
            self.evidence, sort_keys=False, default_flow_style=False, allow_unicode=True
        )
        indented = "".join(f"    {line}\n" for line in body.splitlines())
        return (
            f"{self.headline}\n  cause:   {self.cause}\n  outcome: {self.outcome}\n"
            f"  evidence:\n{indented}" + "".join(f"  {line}\n" for line in self.per_node)
        ).rstrip("\n")

    def as_json(self) -> JSON:
        """The answer for scripts: the sentences, the record's ids and the raw evidence."""
        d = as_decision(self.decision)
        return {
            "headline": self.headline,
            "cause": self.cause,
            "outcome": self.outcome,
            "decision": {
                "id": self.decision.id,
                "offset": self.decision.offset,
                "at": format_time(self.decision.at),
                "type": self.decision.type,
                "reason": d.get("reason"),
                "source": d.get("source"),
            },
            "evidence": self.evidence,
            "raw_evidence": dict(d.get("evidence") or {}),
        } | ({"nodes": self.per_node_json} if self.per_node_json is not None else {})


def _pod(d: Mapping[str, Any]) -> str:
    return f"{d.get('namespace')}/{d.get('pod')}"


def _at(event: Event) -> str:
    return event.at.strftime("%H:%M:%S UTC")


def _candidate_words(position: object, candidates: object) -> str:
    return f"it was candidate {position} of {candidates} (lowest priority, newest first)"


def _budget_words(budget: TdmBudgetEvidence) -> str:
    form = str(budget.get("form") or "none")
    value = budget.get("value")
    if form == "none":
        return "no budget annotation"
    if budget.get("error"):
        return f"an unusable budget ({form}={value}: {budget.get('error')})"
    return f"budget {form}={value}"


def _tdm_window_closed(event: Event, cause: Event | None) -> str:
    d = as_evict(event)
    ev = tdm_evidence(d)
    window = str(ev.get("window") or "?")
    end = window.split("-", 1)[-1]
    budget = ev.get("budget") or {}
    order = ev.get("order") or {}
    period = ev.get("evict_period") or "?"
    closed = f" at {end}" if "-" in window else ""
    return (
        f"{_pod(d)} was evicted from {d['node']} at {_at(event)} because revocable zone "
        f"{ev.get('zone')}'s window {window} ({ev.get('timezone') or 'UTC'}) closed{closed}; "
        f"job {ev.get('job')} had {budget.get('running', '?')} running and "
        f"{_budget_words(budget)}, so at most {budget.get('max_evict', '?')} per {period} "
        f"period; {_candidate_words(order.get('position'), order.get('candidates'))}"
    )


def _preemptor(ev: PreemptEvidence) -> str:
    who = ev.get("preemptor") or ev.get("for")
    return f" for {who}" if who else ""


def _tdm_preempt(event: Event, cause: Event | None) -> str:
    d = as_evict(event)
    ev = preempt_evidence(d)
    zone = ev.get("zone")
    where = f" in revocable zone {zone}" if zone else ""
    return (
        f"{_pod(d)} was evicted from {d['node']} at {_at(event)} by the preempt action"
        f"{_preemptor(ev)}: a preemptable pod{where} made room for a pod that may not be "
        "preempted"
    )


def _preempt(event: Event, cause: Event | None) -> str:
    d = as_evict(event)
    ev = preempt_evidence(d)
    return (
        f"{_pod(d)} was evicted from {d['node']} at {_at(event)} to make room{_preemptor(ev)}: "
        "a higher-priority pod could not be placed otherwise"
    )


def _num(value: object) -> str:
    return number(float(value)) if isinstance(value, int | float) else "?"


def _allocate(event: Event, cause: Event | None) -> str:
    d = as_bind(event)
    ev = allocate_evidence(d)
    feasible = ev.get("feasible", "?")
    gradient = "idle" if ev.get("gradient") == "idle" else "soon-to-be-free"
    return (
        f"{_pod(d)} was bound to {d['node']} at {_at(event)}: the best-scoring of {feasible} "
        f"feasible node(s) (score {_num(ev.get('score'))}, on {gradient} resources) for job "
        f"{ev.get('job')} in queue {ev.get('queue')}"
    )


def _low_node_utilization(event: Event, cause: Event | None) -> str:
    d = as_evict(event)
    return (
        f"{_pod(d)} was evicted from {d['node']} at {_at(event)} to rebalance: the node was "
        "above its high utilization thresholds while others were below their low ones"
    )


def _pressure_round(ev: PressureEvidence, pod: str) -> str:
    held = ev.get("round")
    plan = list(held.get("plan") or []) if held else []
    victim: Mapping[str, object] = ev.get("victim") or {}
    place = f"number {plan.index(pod) + 1} of {len(plan)} in the plan" if pod in plan else ""
    who = f"{victim.get('qos', '?')}, priority {victim.get('priority', '?')}"
    return f"{place} ({who})" if place else f"({who})"


def _streak(ev: PressureEvidence) -> str:
    streak = ev.get("streak")
    return f" for {len(streak)} checks in a row" if isinstance(streak, list) else ""


def _reactive(event: Event, cause: Event | None) -> str:
    d = as_evict(event)
    ev = pressure_evidence(d)
    resource = str(ev.get("resource") or "?")
    reason = d["reason"]
    what = "memory use" if resource == "memory" else "CPU use"
    of = "of allocatable" if reason == "oom-risk" else "of capacity"
    limit = "OOM-risk threshold" if reason == "oom-risk" else "threshold"
    need = ev.get("target")
    frees = f" (about {amount(resource, float(need))})" if isinstance(need, int | float) else ""
    level = ev.get("level")
    down = f"; the round frees down to {percent(float(level))}{frees}" if level else ""
    return (
        f"{_pod(d)} was evicted from {d['node']} at {_at(event)} because {what} was "
        f"{percent(float(ev.get('pressure') or 0))} {of}, above the "
        f"{percent(float(ev.get('threshold') or 0))} {limit}{_streak(ev)}{down}; "
        f"it was {_pressure_round(ev, _pod(d))}"
    )


def _predicted(event: Event, cause: Event | None) -> str:
    d = as_evict(event)
    ev = pressure_evidence(d)
    p = ev.get("prediction") or {}
    resource = str(ev.get("resource") or "cpu")
    what = "memory use" if resource == "memory" else "CPU use"
    window = seconds(float(p.get("prediction_window") or 0))
    return (
        f"{_pod(d)} was evicted from {d['node']} at {_at(event)} because {what} was "
        f"forecast to reach {percent(float(p.get('predicted') or 0))} of capacity within "
        f"{window} (now {percent(float(p.get('current') or 0))}, trend "
        f"{number(float(p.get('trend_per_minute') or 0))} %/min), above the "
        f"{percent(float(p.get('advance_threshold') or 0))} threshold; "
        f"it was {_pressure_round(ev, _pod(d))}"
    )


def _faulty_oom(event: Event, cause: Event | None) -> str:
    d = as_evict(event)
    ev = faulty_oom_evidence(d)
    return (
        f"{_pod(d)} was evicted from {d['node']} at {_at(event)} because its last "
        f"{ev.get('oom_count_threshold', '?')} container terminations were all OOMKilled "
        f"({ev.get('oom_kills', '?')} OOM kills in all)"
    )


def _faulty_leak(event: Event, cause: Event | None) -> str:
    d = as_evict(event)
    ev = memory_leak_evidence(d)
    first = ev.get("first") or {}
    last = ev.get("last") or {}
    return (
        f"{_pod(d)} was evicted from {d['node']} at {_at(event)} because its memory kept "
        f"growing: {gib(float(first.get('memory') or 0))} at {first.get('at')} to "
        f"{gib(float(last.get('memory') or 0))} at {last.get('at')} "
        f"(×{number(float(ev.get('growth') or 0))} within "
        f"{seconds(float(ev.get('memory_leak_duration') or 0))})"
    )


def _taint(event: Event, cause: Event | None) -> str:
    d: TaintPayload = as_taint(event)
    taint = d["taint"]
    name = f"{taint.get('key')}:{taint.get('effect')}"
    if d["kind"] == "untaint":
        ev = untaint_evidence(d)
        return (
            f"{d['node']}'s taint {name} was removed at {_at(event)}: it was put on at "
            f"{ev.get('tainted_at')} while pods were evicted, held until {ev.get('until')}"
        )
    te = taint_evidence(d)
    pods = ", ".join(te.get("evictions") or []) or "pods"
    return (
        f"{d['node']} was tainted {name} at {_at(event)} so that no new pod lands there "
        f"while {pods} {'is' if len(te.get('evictions') or []) == 1 else 'are'} evicted; "
        f"held until {te.get('until')}"
    )


Headline = Callable[[Event, Event | None], str]

HEADLINES: dict[str, Headline] = {
    "tdm-window-closed": _tdm_window_closed,
    "tdm-preempt": _tdm_preempt,
    "preempt": _preempt,
    "allocate": _allocate,
    "low-node-utilization": _low_node_utilization,
    "cpu-pressure": _reactive,
    "memory-pressure": _reactive,
    "oom-risk": _reactive,
    "faulty-oom": _faulty_oom,
    "faulty-memory-leak": _faulty_leak,
    "predicted-pressure": _predicted,
    "eviction-taint": _taint,
}
"""One headline builder per reason code (see :data:`streams.payloads.REASON_CODES`)."""

assert set(HEADLINES) == REASON_CODES, "every reason code needs a headline"


def headline(decision: Event, cause: Event | None = None) -> str:
    """The sentence that says what ``decision`` did and why."""
    d = as_decision(decision)
    build = HEADLINES.get(str(d.get("reason")))
    if build is None:
        target = _pod(d) if d.get("pod") else d.get("node")
        return f"{d.get('kind')} {target} at {_at(decision)} (reason {d.get('reason')})"
    try:
        return build(decision, cause)
    except (KeyError, TypeError, ValueError):  # an imported record with odd evidence
        target = _pod(d) if d.get("pod") else d.get("node")
        return f"{d.get('kind')} {target} at {_at(decision)} (reason {d.get('reason')})"


def describe_cause(event: Event | None) -> str:
    """What caused a decision, in words."""
    if event is None:
        return "no cause recorded"
    at = format_time(event.at)
    if event.type == "trigger.fired":
        t = as_trigger(event)
        kinds = {
            "window-end": f"revocable zone {t.get('zone')}'s window closed",
            "window-start": f"revocable zone {t.get('zone')}'s window opened",
            "evict-period": f"the next evict period of zone {t.get('zone')} began",
            "eviction-batch": "the next graceful batch of a pressure round was due",
            "untaint": "a pressure taint's hold ended",
            "tick": "the scheduling session ran",
        }
        what = kinds.get(str(t.get("kind")), f"trigger {t.get('kind')}")
        return f"{what} (trigger {t.get('trigger')} at {at}, record {event.id})"
    if event.type == "metrics.node":
        sample = as_node_sample(event)
        usage = sample.get("usage") or {}
        name = (sample.get("metadata") or {}).get("name")
        return f"a metrics sample of node {name} at {at}: {_usage_words(usage)}"
    return f"{event.type} {event.id} at {at}"


def _usage_words(usage: Mapping[str, Any]) -> str:
    parts = []
    try:
        if "cpu" in usage:
            parts.append(f"CPU {cores(milli(usage['cpu']))}")
        if "memory" in usage:
            parts.append(f"memory {gib(units(usage['memory']))}")
    except (TypeError, ValueError):
        return str(dict(usage))
    return ", ".join(parts) or "no usage"


def describe_outcome(decision: Event, effect: Event | None, gone: Event | None) -> str:
    """What came of a decision: applied, failed or not (yet) carried out, and the pod gone."""
    if effect is None:
        text = "skipped: no effect recorded (still pending, or a dry run)"
    elif effect.type == "effect.failed":
        text = f"failed at {format_time(effect.at)}: {as_effect(effect).get('error')}"
    else:
        text = f"applied at {format_time(effect.at)}"
    if gone is not None:
        text += f"; the pod was gone at {format_time(gone.at)}"
    return text


def _deleted_pod(event: Event) -> str | None:
    """``namespace/name`` of the pod a ``k8s.watch`` DELETED record removes, else None."""
    if event.type != "k8s.watch":
        return None
    watch = as_watch(event)
    if watch.get("event") != "DELETED" or watch.get("resource") != "pods":
        return None
    meta = (watch.get("object") or {}).get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def answers(events: Iterable[Event], pod: str) -> list[Answer]:
    """Every decision about ``pod`` (``namespace/name`` or a bare name), as an Answer."""
    records = list(events)
    by_id = {e.id: e for e in records}
    effects = {e.cause: e for e in records if e.type in EFFECT_TYPES and e.cause}
    found: list[Answer] = []
    for index, event in enumerate(records):
        if event.type not in DECISION_TYPES:
            continue
        d = as_decision(event)
        if not d.get("pod"):
            continue
        key = _pod(d)
        if key != pod and key.split("/", 1)[1] != pod:
            continue
        cause = by_id.get(event.cause) if event.cause else None
        gone = None
        if d.get("kind") == "evict":
            gone = next(
                (
                    e
                    for e in records[index + 1 :]
                    if e.type == "k8s.watch" and _deleted_pod(e) == key
                ),
                None,
            )
        evidence = evidence_of(d)
        found.append(
            Answer(
                decision=event,
                headline=headline(event, cause),
                cause=describe_cause(cause),
                outcome=describe_outcome(event, effects.get(event.id), gone),
                evidence=humanize(evidence),
            )
        )
    return found


def answer_for(event: Event, records: Iterable[Event]) -> Answer:
    """The Answer for one decision ``event`` of ``records`` (pod or node decision)."""
    items = list(records)
    by_id = {e.id: e for e in items}
    effect = next((e for e in items if e.type in EFFECT_TYPES and e.cause == event.id), None)
    cause = by_id.get(event.cause) if event.cause else None
    d = as_decision(event)
    return Answer(
        decision=event,
        headline=headline(event, cause),
        cause=describe_cause(cause),
        outcome=describe_outcome(event, effect, None),
        evidence=humanize(evidence_of(d)),
    )


__all__ = [
    "HEADLINES",
    "Answer",
    "answer_for",
    "answers",
    "describe_cause",
    "describe_outcome",
    "headline",
]
