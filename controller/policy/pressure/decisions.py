"""The decision records pressure eviction writes, and the per-victim evidence.

``decision.evict`` data: ``kind``, ``namespace``, ``pod``, ``uid``, ``node``, ``reason``,
``source`` (``"pressure"``), ``notice_at`` (= the decision's ``at``: the pod is told) and
``evict_at`` (= ``at`` + ``preStopDelaySeconds``: the Eviction API call; equal to ``at``
when graceful eviction is off), and ``evidence``. The evidence names everything the
decision rests on (pressure, threshold, target, order, limits) and what
:mod:`projections.pressure` folds (``round``, ``cooldown``, ``taint_until``, ``reserve``).

``decision.taint`` / ``decision.untaint`` carry the taint
``koordinator.sh/eviction:NoSchedule`` (empty value) and reason ``eviction-taint``.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast

from controller.policy.pressure.candidates import Candidate
from controller.policy.pressure.config import EvictionConfig
from projections.behaviour import TAINT_FROM_DECISION
from projections.pressure import SOURCE
from projections.world import PolicyInputs
from streams.events import Event, format_time, make_event
from streams.payloads import (
    EvictPayload,
    EvidenceDict,
    ReasonCode,
    ReserveEvidence,
    Taint,
    TaintEvidence,
    TaintPayload,
    UntaintEvidence,
    VictimEvidence,
    as_json,
)

TAINT: Taint = {"key": "koordinator.sh/eviction", "value": "", "effect": "NoSchedule"}
TAINT_REASON: ReasonCode = "eviction-taint"


def owner_of(world: PolicyInputs, key: str) -> str:
    """``Kind/name`` of the pod's controller owner ("" when none is known)."""
    task = world.cluster.tasks.get(key)
    return task.owner if task is not None else ""


def taint_start(world: PolicyInputs, *, at: datetime, evict_at: datetime) -> datetime:
    """When an eviction taint's ``taintDuration`` starts counting.

    From :data:`~projections.behaviour.TAINT_FROM_DECISION` (behaviour level 2) the taint
    lives ``taintDuration`` from the decision that places it (or that extends it, for a
    later eviction on the same node), so a 300 s taint is on the node for 300 s. Logs
    written before that count from the eviction's ``evict_at`` (the decision time plus the
    pre-stop delay).
    """
    rules = getattr(world.cluster, "rules", None)
    return at if rules is not None and rules.has(TAINT_FROM_DECISION) else evict_at


def victim_evidence(
    world: PolicyInputs,
    candidate: Candidate,
    *,
    cpu: float,
    memory: float,
    at: datetime,
    evict_at: datetime,
    config: EvictionConfig,
) -> EvidenceDict:
    """The per-victim part: its numbers, the taint and reservation it extends."""
    task = candidate.task
    victim: VictimEvidence = {
        "qos": task.qos,
        "priority": task.pod_priority,
        "cpu_milli": cpu,
        "memory": memory,
        "started": format_time(candidate.started) if candidate.started else None,
        "oom_kills": candidate.oom_kills,
    }
    out: EvidenceDict = {"victim": victim, "owner": owner_of(world, task.key)}
    scheduling = config.scheduling
    if scheduling.eviction_taint:
        start = taint_start(world, at=at, evict_at=evict_at)
        out["taint_until"] = format_time(start + scheduling.taint_duration)
    if scheduling.resource_reservation:
        reserve: ReserveEvidence = {
            "cpu_milli": max(cpu, task.resreq.milli_cpu),
            "memory": max(memory, task.resreq.memory),
            "until": format_time(at + scheduling.reservation_duration),
        }
        out["reserve"] = reserve
    return out


def evict_event(
    candidate: Candidate,
    *,
    node: str,
    reason: str,
    at: datetime,
    evict_at: datetime,
    cause: str,
    evidence: EvidenceDict,
) -> Event:
    """The ``decision.evict`` of one pressure victim (``reason``: a pressure reason code)."""
    task = candidate.task
    data: EvictPayload = {
        "kind": "evict",
        "namespace": task.namespace,
        "pod": task.name,
        "uid": task.uid,
        "node": node,
        "reason": cast(ReasonCode, reason),
        "source": SOURCE,
        "notice_at": format_time(at),
        "evict_at": format_time(evict_at),
        "evidence": evidence,
    }
    return make_event("decision.evict", at, as_json(data), cause=cause)


def taint_event(
    *, node: str, at: datetime, until: datetime, cause: str, evictions: list[str]
) -> Event:
    """The ``decision.taint`` that keeps new pods off ``node`` until ``until``."""
    evidence: TaintEvidence = {"until": format_time(until), "evictions": evictions}
    data: TaintPayload = {
        "kind": "taint",
        "node": node,
        "taint": TAINT.copy(),
        "reason": TAINT_REASON,
        "source": SOURCE,
        "evidence": evidence,
    }
    return make_event("decision.taint", at, as_json(data), cause=cause)


def untaint_event(
    *, node: str, at: datetime, since: datetime, until: datetime, cause: str
) -> Event:
    """The ``decision.untaint`` that removes the taint held on ``node`` since ``since``."""
    evidence: UntaintEvidence = {"tainted_at": format_time(since), "until": format_time(until)}
    data: TaintPayload = {
        "kind": "untaint",
        "node": node,
        "taint": TAINT.copy(),
        "reason": TAINT_REASON,
        "source": SOURCE,
        "evidence": evidence,
    }
    return make_event("decision.untaint", at, as_json(data), cause=cause)
