"""The simulated cluster: decisions in, the watch events a real cluster would produce out.

Why: the embedded default (``tide demo``, ``tide simulate``) has no API server, yet the
controller must see the consequences of its own decisions the way it would live, through
``k8s.watch`` records on the log. It is one adapter of the effector port
(:mod:`controller.drive.effector.port`): it plays the API server, keeping its own copy of every
pod and node from the watch records it observes (:class:`~.apiserver.ApiServerState`), and
:meth:`SimulatedCluster.apply` answers one decision with

* *immediate* events at the decision's ``at``: the effect outcome (``effect.applied`` or
  ``effect.failed``, ``cause`` = decision id) and the watch events the API call causes;
* *future* events, each with its own ``at``, which the caller merges into its time-ordered
  stream: pods terminating after their grace period, controllers recreating them, bound
  pods starting.

Behaviour:

* **evict**: the pod gets ``deletionTimestamp`` (MODIFIED at decision time); after
  ``terminationGracePeriodSeconds`` (default 30 s) it is DELETED; a pod with a controller
  owner (ReplicaSet, StatefulSet, batch Job, Volcano Job) is recreated at that moment as a
  new Pending pod (:func:`controller.drive.effector.simulated_objects.recreated`). If the decision
  carries an
  ``evict_at`` later than its ``at`` (graceful eviction), the pod is annotated
  ``tide.io/eviction-notice`` at decision time and all of the above happens at
  ``evict_at`` (the ``effect.applied`` too).
* **preempt**: an eviction whose evidence names a preemptor and the node it is
  ``nominated`` to also sets the preemptor pod's ``status.nominatedNodeName`` (MODIFIED
  at decision time), unless it is gone, bound, or already nominated there.
* **bind**: ``spec.nodeName`` set (MODIFIED, still Pending); after ``startup_delay``
  (default 5 s) the pod is Running with ``startTime``.
* **taint** / **untaint**: the node's ``spec.taints`` gains or loses the taint (matched by
  key and effect) — MODIFIED node.
* Failures (``effect.failed``, no watch event): pod or node not found, a pod whose uid
  differs from the decision's (another incarnation), a pod already terminating, a bind of
  a pod already bound, an eviction a PodDisruptionBudget forbids (the Eviction API's 429,
  the budget named; :mod:`controller.drive.effector.budgets`).

The cluster answers only for the object it acted on. A future event is planned when the
decision is handled but checked again when it is due (:meth:`SimulatedCluster.due`, which the
virtual loop calls as it takes the event from its heap): it is dropped if its pod is gone,
has another uid (a new incarnation), or has changed in a way that voids it — a bound pod
that is terminating or on another node does not start; a pod gone before its delete comes
is not deleted again, and its owner does not recreate it (the recording's own controller
does). A graceful eviction whose pod is gone at ``evict_at`` ends in ``effect.failed``
(the Eviction API's 404 then), with nothing after it. The events kept are rebuilt from the
pod as it is then (a start keeps the labels the recording gave it meanwhile). Once one
event of a decision is dropped, the later ones of the same decision are too.

Determinism: the simulator's state is a fold of the watch records it observed, in log
order, plus the future events it planned (keyed by id, until due); :meth:`answer` computes
an answer from the decision and the raw objects alone and :meth:`due` from the planned
event and the raw objects, so the same log prefix gives the same answers. Watch events
carry ``cause`` = the decision id so that an audit can link them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from controller.drive.effector.apiserver import ApiServerState, object_bytes
from controller.drive.effector.budgets import BudgetGuard
from controller.drive.effector.port import Effects
from controller.drive.effector.simulated_objects import (
    JSON,
    RECREATING_KINDS,
    bound,
    controller_owner,
    grace_period,
    metadata,
    nominated,
    recreated,
    same_taint,
    spec_of,
    started,
    taints_of,
    terminating,
    with_notice,
    with_taints,
)
from streams.events import Event, make_event, parse_time
from streams.payloads import (
    DecisionKind,
    EffectPayload,
    as_bind,
    as_decision,
    as_evict,
    as_json,
    as_pod_decision,
    as_taint,
    as_watch,
)

DEFAULT_GRACE = timedelta(seconds=30)
DEFAULT_STARTUP_DELAY = timedelta(seconds=5)

Answer = tuple[list[Event], list[Event]]

#: what a future event becomes when due, given the pods then: the event to write, or None
Guard = Callable[[Mapping[str, JSON]], Event | None]
#: an answer's events, each future one with its guard (None: always written as planned)
Plan = tuple[list[Event], list[tuple[Event, Guard | None]]]


class SimulatedCluster:
    """Turns decision events into effect outcomes and watch events (see module doc).

    Args:
        grace_default: the grace period of a pod that names none.
        startup_delay: from a bind to the pod running.
    """

    def __init__(
        self,
        *,
        grace_default: timedelta = DEFAULT_GRACE,
        startup_delay: timedelta = DEFAULT_STARTUP_DELAY,
    ) -> None:
        self.grace_default = grace_default
        self.startup_delay = startup_delay
        self.state = ApiServerState()
        self.budgets = BudgetGuard()
        #: planned future event id -> (its decision's id, its guard)
        self._planned: dict[str, tuple[str, Guard | None]] = {}
        #: decision id -> how many of its future events are still planned
        self._open: dict[str, int] = {}
        #: decisions one of whose future events was dropped (the rest go too)
        self._ended: set[str] = set()

    def observe(self, record: Event) -> None:
        """Keep the API server's copy of pods and nodes current (``k8s.watch`` records)."""
        self._observe(record, None)

    def observe_encoded(self, record: Event, payload: bytes) -> None:
        """:meth:`observe` of a record whose payload's canonical bytes, also its own key
        order, are ``payload``: the object's bytes are cut out of them, not encoded."""
        self._observe(record, payload)

    def _observe(self, record: Event, payload: bytes | None) -> None:
        if record.type == "k8s.watch":
            # the payload typed without a call per record (a TypedDict is the dict itself)
            if TYPE_CHECKING:
                data = as_watch(record)
            else:
                data = record.data
            resource, kind, obj = data.get("resource"), data.get("event"), data.get("object")
            raw = object_bytes(data, payload) if payload is not None else None
            self.state.observe(resource, kind, obj, raw)
            if resource == "poddisruptionbudgets":
                self.budgets.observe(kind, obj)
            elif resource == "pods" and kind == "ADDED" and isinstance(obj, dict):
                meta = metadata(obj)
                self.budgets.readmit(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")

    def apply(self, decision: Event) -> Effects:
        """Answer ``decision`` from the observed state (the effector port); its future
        events are planned, to be checked again by :meth:`due`."""
        now, later = self._plan(decision, self.state.pods, self.state.nodes)
        if later:
            self._open[decision.id] = self._open.get(decision.id, 0) + len(later)
            for event, guard in later:
                self._planned[event.id] = (decision.id, guard)
        return Effects(now, [event for event, _ in later])

    def due(self, record: Event) -> Event | None:
        """A future event of :meth:`apply` as it is when due: the event to write (itself,
        or rebuilt from the pod as it is now), or None to drop it (see the module doc).
        A record this cluster did not plan is returned as it is."""
        planned = self._planned.pop(record.id, None)
        if planned is None:
            return record
        decision, guard = planned
        left = self._open[decision] - 1
        if left:
            self._open[decision] = left
        else:
            del self._open[decision]
        if decision in self._ended:
            if not left:
                self._ended.discard(decision)
            return None
        kept = record if guard is None else guard(self.state.pods)
        if (kept is None or kept.type == "effect.failed") and left:
            self._ended.add(decision)
        return kept

    @property
    def planned(self) -> int:
        """How many future events are planned and not yet due."""
        return len(self._planned)

    def answer(
        self,
        decision: Event,
        pods: Mapping[str, JSON],
        nodes: Mapping[str, JSON] | None = None,
    ) -> Answer:
        """Answer ``decision`` given the current raw pods (``"ns/name"``) and nodes.

        Returns ``(immediate, future)``; immediate events are at ``decision.at``, future
        ones later (sorted by ``at``), as planned (what :meth:`due` checks is not applied).
        Non-decision events get ``([], [])``.
        """
        now, later = self._plan(decision, pods, nodes)
        return now, [event for event, _ in later]

    def _plan(
        self, decision: Event, pods: Mapping[str, JSON], nodes: Mapping[str, JSON] | None
    ) -> Plan:
        nodes = nodes if nodes is not None else {}
        if decision.type == "decision.evict":
            return self._evict(decision, pods)
        if decision.type == "decision.bind":
            return self._bind(decision, pods, nodes)
        if decision.type in ("decision.taint", "decision.untaint"):
            return self._taint(decision, nodes), []
        return [], []

    # -- evict --------------------------------------------------------------------------

    def _evict(self, decision: Event, pods: Mapping[str, JSON]) -> Plan:
        pod, target, error = _find_pod(decision, pods)
        if pod is None:
            return [_failed(decision, target, error)], []
        if metadata(pod).get("deletionTimestamp"):
            return [_failed(decision, target, f"pod {target} is already terminating")], []
        budget = self.budgets.blocking(target, pod, pods)
        if budget is not None:
            error = (
                f"429 TooManyRequests: evicting pod {target} would violate the pod's"
                f" disruption budget {budget}"
            )
            return [_failed(decision, target, error)], []
        self.budgets.grant(target, pod)
        evict_at = _time(as_evict(decision).get("evict_at"))
        if evict_at is not None and evict_at > decision.at:
            noticed = with_notice(pod, evict_at)
            notice = _watch(decision, decision.at, "pods", "MODIFIED", noticed)
            later = self._eviction(decision, noticed, target, evict_at, noticed=True)
            return [notice], later
        now, later = _split(decision.at, self._eviction(decision, pod, target, decision.at))
        return [event for event, _ in now] + _nomination(decision, pods), later

    def _eviction(
        self, decision: Event, pod: JSON, target: str, at: datetime, *, noticed: bool = False
    ) -> list[tuple[Event, Guard | None]]:
        """The eviction's events from ``at``; those due later than the decision guarded:
        at a noticed ``evict_at``, the pod must still be there (else the Eviction API's
        404), and at its end of grace, the pod must not be gone already."""
        grace = grace_period(pod, self.grace_default)
        gone = at + grace
        dying = terminating(pod, at, grace)
        uid = metadata(pod).get("uid")

        def evicted(pods: Mapping[str, JSON]) -> Event | None:
            if _current(pods, target, uid) is None:
                return _failed(decision, target, f"pod {target} not found", at=at)
            return _effect(decision, at, target)

        def marked(pods: Mapping[str, JSON]) -> Event | None:
            current = _current(pods, target, uid)
            if current is None:
                return None
            return _watch(decision, at, "pods", "MODIFIED", terminating(current, at, grace))

        def deleted(pods: Mapping[str, JSON]) -> Event | None:
            current = _current(pods, target, uid)
            return None if current is None else _watch(decision, gone, "pods", "DELETED", current)

        events: list[tuple[Event, Guard | None]] = [
            (_effect(decision, at, target), evicted if noticed else None),
            (_watch(decision, at, "pods", "MODIFIED", dying), marked if noticed else None),
            (
                _watch(decision, gone, "pods", "DELETED", dying),
                deleted if gone > decision.at else None,
            ),
        ]
        owner = controller_owner(pod)
        if owner is not None and owner.get("kind") in RECREATING_KINDS:
            # due right after its DELETED (same time, planned after it): kept only with it
            events.append((_watch(decision, gone, "pods", "ADDED", recreated(pod, gone)), None))
        return events

    # -- bind ---------------------------------------------------------------------------

    def _bind(self, decision: Event, pods: Mapping[str, JSON], nodes: Mapping[str, JSON]) -> Plan:
        pod, target, error = _find_pod(decision, pods)
        if pod is None:
            return [_failed(decision, target, error)], []
        node = str(as_bind(decision).get("node", ""))
        if node not in nodes:
            return [_failed(decision, target, f"node {node!r} not found")], []
        if metadata(pod).get("deletionTimestamp"):
            return [_failed(decision, target, f"pod {target} is terminating")], []
        current = spec_of(pod).get("nodeName")
        if current:
            return [_failed(decision, target, f"pod {target} is already bound to {current}")], []
        placed = bound(pod, node)
        at = decision.at
        run_at = at + self.startup_delay
        uid = metadata(pod).get("uid")

        def start(pods: Mapping[str, JSON]) -> Event | None:
            """The kubelet starts the pod it was given: still there, same uid, on this
            node, not terminating."""
            now = _current(pods, target, uid)
            if now is None or spec_of(now).get("nodeName") != node:
                return None
            if metadata(now).get("deletionTimestamp"):
                return None
            return _watch(decision, run_at, "pods", "MODIFIED", started(now, run_at))

        events: list[tuple[Event, Guard | None]] = [
            (_effect(decision, at, target), None),
            (_watch(decision, at, "pods", "MODIFIED", placed), None),
            (_watch(decision, run_at, "pods", "MODIFIED", started(placed, run_at)), start),
        ]
        now, later = _split(at, events)
        return [event for event, _ in now], later

    # -- taint / untaint ----------------------------------------------------------------

    def _taint(self, decision: Event, nodes: Mapping[str, JSON]) -> list[Event]:
        data = as_taint(decision)
        name = str(data.get("node", ""))
        node = nodes.get(name)
        if node is None:
            return [_failed(decision, name, f"node {name!r} not found")]
        taint: object = data.get("taint")
        if not isinstance(taint, Mapping):
            return [_failed(decision, name, "decision has no taint")]
        kept = [t for t in taints_of(node) if not same_taint(t, taint)]
        if decision.type == "decision.taint":
            kept.append({k: taint[k] for k in sorted(taint) if taint[k] is not None})
        changed = with_taints(node, kept)
        return [
            _effect(decision, decision.at, name),
            _watch(decision, decision.at, "nodes", "MODIFIED", changed),
        ]


# -- helpers ------------------------------------------------------------------------------


def _nomination(decision: Event, pods: Mapping[str, JSON]) -> list[Event]:
    """The preemptor's ``status.nominatedNodeName`` update an eviction implies, if any."""
    evidence = as_evict(decision).get("evidence")
    if not isinstance(evidence, dict):
        return []
    preemptor, node = evidence.get("preemptor"), evidence.get("nominated")
    if not isinstance(preemptor, str) or not isinstance(node, str) or not node:
        return []
    pod = pods.get(preemptor)
    if pod is None or spec_of(pod).get("nodeName"):
        return []
    uid = evidence.get("preemptor_uid")
    if uid and metadata(pod).get("uid") != uid:
        return []
    if (pod.get("status") or {}).get("nominatedNodeName") == node:
        return []
    return [_watch(decision, decision.at, "pods", "MODIFIED", nominated(pod, node))]


def _current(pods: Mapping[str, JSON], target: str, uid: object) -> JSON | None:
    """The pod ``target`` now, if it is the incarnation ``uid`` (any, if that is unknown)."""
    pod = pods.get(target)
    if pod is None or (uid and metadata(pod).get("uid") != uid):
        return None
    return pod


def _find_pod(decision: Event, pods: Mapping[str, JSON]) -> tuple[JSON | None, str, str]:
    data = as_pod_decision(decision)
    namespace = str(data.get("namespace", ""))
    name = str(data.get("pod", ""))
    target = f"{namespace}/{name}"
    pod = pods.get(target)
    if pod is None:
        return None, target, f"pod {target} not found"
    uid = data.get("uid")
    have = metadata(pod).get("uid")
    if uid and have and uid != have:
        return None, target, f"pod {target} not found (uid {uid} is gone; now {have})"
    return pod, target, ""


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return parse_time(value)
        except ValueError:
            return None
    return None


def _kind(decision: Event) -> DecisionKind:
    # a decision record's type names its kind (validated when it was written)
    return cast(
        DecisionKind,
        str(as_decision(decision).get("kind") or decision.type.removeprefix("decision.")),
    )


def _effect(decision: Event, at: datetime, target: str) -> Event:
    data: EffectPayload = {"decision": decision.id, "kind": _kind(decision), "target": target}
    return make_event("effect.applied", at, as_json(data), cause=decision.id)


def _failed(decision: Event, target: str, error: str, *, at: datetime | None = None) -> Event:
    data: EffectPayload = {
        "decision": decision.id,
        "kind": _kind(decision),
        "target": target,
        "error": error,
    }
    when = decision.at if at is None else at
    return make_event("effect.failed", when, as_json(data), cause=decision.id)


def _watch(decision: Event, at: datetime, resource: str, kind: str, obj: JSON) -> Event:
    data = {"resource": resource, "event": kind, "object": obj}
    return make_event("k8s.watch", at, data, cause=decision.id)


def _split(
    now: datetime, events: list[tuple[Event, Guard | None]]
) -> tuple[list[tuple[Event, Guard | None]], list[tuple[Event, Guard | None]]]:
    """Events at ``now`` (in the given order), and the later ones sorted stably by time."""
    immediate = [e for e in events if e[0].at <= now]
    future = sorted((e for e in events if e[0].at > now), key=lambda e: e[0].at)
    return immediate, future
