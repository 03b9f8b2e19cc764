"""Pressure-eviction state as a fold of the log: cooldowns, rate windows, rounds, taints.

Koordinator keeps this in koordlet memory (``lastEvictTime``, an evicted-UID cache); here
every piece is derived from decision records written by ``controller.policy.pressure`` (``source
== "pressure"``), whose ``evidence`` carries what the fold needs, so the projection never
reads the configuration:

* per node and resource (``cpu`` / ``memory``) a :class:`Cooldown`: until when no new
  round may start (``evidence.cooldown.until``, the latest of a round's batches), the
  adaptive factor used, and the *verification*: at the node's first ``metrics.node``
  sample at or after ``until`` the pressure is compared with the round's threshold and
  margin (``recovered`` below threshold − margin, ``still-high`` above the threshold,
  else ``steady``); the next round halves, doubles or keeps the factor accordingly;
* per node the ``evict_at`` times of its pressure evictions (the 60 s rate window; an
  eviction whose effect failed still counts there and in the cooldown: it was attempted,
  as the koordlet counts attempts);
* the uids evicted and not yet gone (no pod is evicted twice), dropped when the pod's
  DELETED watch arrives or the eviction's ``effect.failed``;
* graceful rounds with later batches (:class:`Round`): the plan, the victims done, and
  ``next_due``. A round is *pending* while ``next_due`` is not before the log's clock
  (the newest ``at`` folded) and no ``eviction-batch`` trigger at or after ``next_due``
  was folded; a due batch that produced no decision (dropped by verification, or its
  trigger never written) ends the round;
* the eviction taints held (:class:`Taint`, only active ones; ``until`` grows with every
  eviction's ``evidence.taint_until``), dropped by ``decision.untaint`` or the taint's
  ``effect.failed``;
* reservations for LS pods (``evidence.reserve``), queried with :meth:`reserved`.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from projections.base import BaseProjection, decode_state, encode_state, handles
from projections.model import Resource
from projections.parsing import milli, time_or_none, units
from streams.events import JSON, Event, format_time
from streams.payloads import (
    CooldownEvidence,
    RoundEvidence,
    TriggerKind,
    as_effect,
    as_evict,
    as_node_sample,
    as_taint,
    as_trigger,
    as_watch,
    pressure_evidence,
    taint_evidence,
)

SOURCE = "pressure"
BATCH_KIND: TriggerKind = "eviction-batch"
UNTAINT_KIND: TriggerKind = "untaint"
RATE_WINDOW = timedelta(seconds=60)
RECOVERED, STEADY, STILL_HIGH = "recovered", "steady", "still-high"


@dataclass(slots=True)
class Cooldown:
    """The rate-control state of one resource on one node."""

    until: datetime
    factor: float
    configured: float  # seconds, as configured when the round ran
    threshold: float
    margin: float
    capacity: float
    verdict: str = ""  # "" until verified
    after: float | None = None  # pressure at verification


@dataclass(slots=True)
class Round:
    """A graceful eviction round with batches still to go."""

    id: str
    node: str
    resource: str
    reason: str
    plan: list[str]
    done: list[str] = field(default_factory=list)
    batch: int = 0
    next_due: datetime | None = None
    fired: bool = False

    def remaining(self) -> list[str]:
        done = set(self.done)
        return [key for key in self.plan if key not in done]


@dataclass(slots=True)
class Taint:
    since: datetime
    until: datetime
    decision: str


@dataclass(slots=True)
class Reservation:
    since: datetime
    until: datetime
    cpu: float
    memory: float
    pod: str
    owner: str


def _time(value: Any, default: datetime) -> datetime:
    return time_or_none(value) or default


#: the fields of the records a checkpoint holds, in order
_FIELDS: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls)) for cls in (Cooldown, Round, Taint, Reservation)
}


def _fields(record: Cooldown | Round | Taint | Reservation) -> JSON:
    """``dataclasses.asdict`` of a record, times as RFC 3339 (its fields are times, plain
    values and lists of strings; written at once, so nothing is copied)."""
    out: JSON = {}
    for name in _FIELDS[type(record)]:
        value = getattr(record, name)
        out[name] = format_time(value) if isinstance(value, datetime) else value
    return out


class PressureState(BaseProjection):
    """Rate control, rounds, taints and reservations of pressure eviction."""

    name = "pressure"

    def __init__(self) -> None:
        super().__init__()
        self.clock: datetime | None = None
        self.cooldowns: dict[tuple[str, str], Cooldown] = {}
        self.awaiting: dict[str, set[str]] = {}  # node -> resources awaiting verification
        self.window: dict[str, list[datetime]] = {}  # node -> evict_at times
        self.evicted: dict[str, str] = {}  # uid -> "ns/name"
        self.rounds: dict[str, Round] = {}
        self.taints: dict[str, Taint] = {}
        self.reservations: dict[str, list[Reservation]] = {}
        self.decisions: dict[str, tuple[str, str, str]] = {}  # id -> (kind, node, uid)
        #: bumped whenever rounds or taints may have changed (not checkpointed): what the
        #: pressure follow-ups are computed from, so a cache of them knows when to recompute
        self.changes = 0

    def apply(self, event: Event) -> None:
        at = event.at
        clock = self.clock
        if clock is None or at > clock:
            self.clock = at
        BaseProjection.apply(self, event)

    # ---- folds -----------------------------------------------------------------------

    @handles("decision.evict")
    def _evict(self, event: Event) -> None:
        data = as_evict(event)
        if data.get("source") != SOURCE:
            return
        self.changes += 1
        node, uid = str(data.get("node") or ""), str(data.get("uid") or "")
        key = f"{data.get('namespace')}/{data.get('pod')}"
        evidence = pressure_evidence(data)
        evict_at = _time(data.get("evict_at"), event.at)
        times = self.window.setdefault(node, [])
        insort(times, evict_at)
        del times[: bisect_right(times, event.at - RATE_WINDOW)]
        if uid:
            self.evicted[uid] = key
        self.decisions[event.id] = ("evict", node, uid)
        cooldown = evidence.get("cooldown")
        if isinstance(cooldown, dict):
            self._cooldown(node, cooldown, event.at)
        plan = evidence.get("round")
        if isinstance(plan, dict) and plan.get("id"):
            self._round(node, key, str(data.get("reason") or ""), plan)
        taint = self.taints.get(node)
        taint_until = time_or_none(evidence.get("taint_until"))
        if taint is not None and taint_until and taint_until > taint.until:
            taint.until = taint_until
        reserve = evidence.get("reserve")
        if isinstance(reserve, dict):
            until = _time(reserve.get("until"), event.at)
            held = [r for r in self.reservations.get(node, ()) if r.until > event.at]
            held.append(
                Reservation(
                    since=event.at,
                    until=until,
                    cpu=float(reserve.get("cpu_milli") or 0),
                    memory=float(reserve.get("memory") or 0),
                    pod=key,
                    owner=str(evidence.get("owner") or ""),
                )
            )
            self.reservations[node] = held

    def _cooldown(self, node: str, body: CooldownEvidence, at: datetime) -> None:
        resource = str(body.get("resource") or "")
        until = _time(body.get("until"), at)
        held = self.cooldowns.get((node, resource))
        if held is not None and held.until > until:
            until = held.until
        self.cooldowns[(node, resource)] = Cooldown(
            until=until,
            factor=float(body.get("factor") or 1.0),
            configured=float(body.get("configured") or 0.0),
            threshold=float(body.get("threshold") or 0.0),
            margin=float(body.get("margin") or 0.0),
            capacity=float(body.get("capacity") or 0.0),
        )
        self.awaiting.setdefault(node, set()).add(resource)

    def _gc_rounds(self) -> None:
        """Forget rounds whose next batch is in the past: they ended (see the docstring)."""
        clock = self.clock
        if clock is None:
            return
        for round_id in [i for i, r in self.rounds.items() if r.next_due and r.next_due < clock]:
            del self.rounds[round_id]

    def _round(self, node: str, key: str, reason: str, body: RoundEvidence) -> None:
        self._gc_rounds()
        round_id = str(body["id"])
        held = self.rounds.get(round_id)
        if held is None:
            held = Round(
                id=round_id,
                node=node,
                resource=str(body.get("resource") or ""),
                reason=reason,
                plan=[str(k) for k in body.get("plan") or ()],
            )
        held.done.append(key)
        held.batch = int(body.get("batch") or 0)
        held.next_due = time_or_none(body.get("next_at"))
        held.fired = False
        if held.next_due is None or not held.remaining():
            self.rounds.pop(round_id, None)
        else:
            self.rounds[round_id] = held

    @handles("decision.taint")
    def _taint(self, event: Event) -> None:
        data = as_taint(event)
        if data.get("source") != SOURCE:
            return
        self.changes += 1
        node = str(data.get("node") or "")
        until = _time(taint_evidence(data).get("until"), event.at)
        self.taints[node] = Taint(since=event.at, until=until, decision=event.id)
        self.decisions[event.id] = ("taint", node, "")

    @handles("decision.untaint")
    def _untaint(self, event: Event) -> None:
        data = as_taint(event)
        if data.get("source") != SOURCE:
            return
        self.changes += 1
        self.taints.pop(str(data.get("node") or ""), None)

    @handles("effect.applied", "effect.failed", "effect.skipped")
    def _effect(self, event: Event) -> None:
        data = as_effect(event)
        held = self.decisions.pop(str(data.get("decision") or event.cause or ""), None)
        if held is None or event.type == "effect.applied":
            return
        kind, node, uid = held
        if kind == "evict":
            self.evicted.pop(uid, None)
        elif kind == "taint":
            taint = self.taints.get(node)
            if taint is not None and taint.decision == str(data.get("decision")):
                del self.taints[node]
                self.changes += 1

    @handles("k8s.watch")
    def _watch(self, event: Event) -> None:
        # the payload typed without a call per record (a TypedDict is the dict itself)
        if TYPE_CHECKING:
            data = as_watch(event)
        else:
            data = event.data
        if data.get("resource") == "pods" and data.get("event") == "DELETED":
            uid = ((data.get("object") or {}).get("metadata") or {}).get("uid")
            if uid:
                self.evicted.pop(str(uid), None)

    @handles("trigger.fired")
    def _trigger(self, event: Event) -> None:
        if as_trigger(event).get("kind") != BATCH_KIND:
            return
        self.changes += 1
        self._gc_rounds()
        for held in self.rounds.values():
            if held.next_due is not None and held.next_due <= event.at:
                held.fired = True

    @handles("metrics.node")
    def _sample(self, event: Event) -> None:
        if TYPE_CHECKING:
            sample = as_node_sample(event)
        else:
            sample = event.data
        node = (sample.get("metadata") or {}).get("name")
        resources = self.awaiting.get(node) if isinstance(node, str) else None
        if not resources or not isinstance(node, str):
            return
        usage = sample.get("usage") or {}
        for resource in sorted(resources):
            held = self.cooldowns.get((node, resource))
            if held is None or event.at < held.until:
                continue
            used = (
                milli(usage.get("cpu", 0)) if resource == "cpu" else units(usage.get("memory", 0))
            )
            pressure = 100.0 * used / held.capacity if held.capacity > 0 else 0.0
            held.after = pressure
            if pressure < held.threshold - held.margin:
                held.verdict = RECOVERED
            elif pressure > held.threshold:
                held.verdict = STILL_HIGH
            else:
                held.verdict = STEADY
            resources.discard(resource)
        if not resources:
            del self.awaiting[node]

    # ---- queries ---------------------------------------------------------------------

    def cooldown(self, node: str, resource: str) -> Cooldown | None:
        return self.cooldowns.get((node, resource))

    def cooling(self, node: str, resource: str, now: datetime) -> bool:
        """Whether a round of ``resource`` on ``node`` is still cooling down at ``now``."""
        held = self.cooldowns.get((node, resource))
        return held is not None and now < held.until

    def evictions_since(self, node: str, after: datetime) -> int:
        """Pressure evictions on ``node`` with ``evict_at`` later than ``after``."""
        times = self.window.get(node)
        if not times:
            return 0
        return len(times) - bisect_right(times, after)

    def is_evicted(self, uid: str) -> bool:
        return uid in self.evicted

    def pending_rounds(self) -> list[Round]:
        """Rounds whose next batch is still to come, by due time then id."""
        clock = self.clock
        found = [
            r
            for r in self.rounds.values()
            if r.next_due is not None and not r.fired and (clock is None or r.next_due >= clock)
        ]
        found.sort(key=lambda r: (r.next_due or clock, r.id))
        return found

    def planned(self, node: str) -> set[str]:
        """Victims planned for later batches of pending rounds on ``node``."""
        out: set[str] = set()
        for held in self.pending_rounds():
            if held.node == node:
                out.update(held.remaining())
        return out

    def active_taint(self, node: str) -> Taint | None:
        return self.taints.get(node)

    def reserved(self, node: str, now: datetime) -> Resource:
        """The resources held for LS pods on ``node`` at ``now`` (BE pods may not use them)."""
        total = Resource()
        for held in self.reservations.get(node, ()):
            if held.since <= now < held.until:
                total.milli_cpu += held.cpu
                total.memory += held.memory
        return total

    def evicted_owners(self, node: str, now: datetime) -> frozenset[str]:
        """Owners (``Kind/name``) of pods evicted from ``node`` whose reservation holds."""
        return frozenset(
            r.owner for r in self.reservations.get(node, ()) if r.owner and r.since <= now < r.until
        )

    # ---- checkpoint ------------------------------------------------------------------

    def dump(self) -> bytes:
        body = {
            "clock": format_time(self.clock) if self.clock else None,
            "cooldowns": [
                [n, r, _fields(self.cooldowns[(n, r)])] for n, r in sorted(self.cooldowns)
            ],
            "awaiting": {n: sorted(self.awaiting[n]) for n in sorted(self.awaiting)},
            "window": {n: [format_time(t) for t in self.window[n]] for n in sorted(self.window)},
            "evicted": {u: self.evicted[u] for u in sorted(self.evicted)},
            "rounds": {i: _fields(self.rounds[i]) for i in sorted(self.rounds)},
            "taints": {n: _fields(self.taints[n]) for n in sorted(self.taints)},
            "reservations": {
                n: [_fields(r) for r in self.reservations[n]] for n in sorted(self.reservations)
            },
            "decisions": {i: list(self.decisions[i]) for i in sorted(self.decisions)},
        }
        return encode_state(self.name, self.position, body)

    def load(self, state: bytes) -> None:
        position, body = decode_state(self.name, state)

        def when(value: Any) -> datetime:
            parsed = time_or_none(value)
            if parsed is None:
                raise ValueError(f"bad time {value!r} in pressure checkpoint")
            return parsed

        self.clock = time_or_none(body["clock"])
        self.cooldowns = {
            (n, r): Cooldown(**{**c, "until": when(c["until"])}) for n, r, c in body["cooldowns"]
        }
        self.awaiting = {n: set(v) for n, v in body["awaiting"].items()}
        self.window = {n: [when(t) for t in v] for n, v in body["window"].items()}
        self.evicted = dict(body["evicted"])
        self.rounds = {
            i: Round(**{**r, "next_due": time_or_none(r["next_due"])})
            for i, r in body["rounds"].items()
        }
        self.taints = {
            n: Taint(**{**t, "since": when(t["since"]), "until": when(t["until"])})
            for n, t in body["taints"].items()
        }
        self.reservations = {
            n: [
                Reservation(**{**r, "since": when(r["since"]), "until": when(r["until"])})
                for r in v
            ]
            for n, v in body["reservations"].items()
        }
        self.decisions = {i: (v[0], v[1], v[2]) for i, v in body["decisions"].items()}
        self.position = position
        self.changes += 1
