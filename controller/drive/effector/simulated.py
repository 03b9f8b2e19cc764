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

Determinism: the simulator's only state is a fold of the watch records it observed, in log
order; :meth:`SimulatedCluster.answer` computes an answer from the decision and the raw
objects alone, so the same log prefix gives the same answers. The price: future events are
computed when the decision is handled and assume nothing else touches the pod in between
(e.g. a pod evicted within ``startup_delay`` of its bind would still get its "Running"
update). Watch events carry ``cause`` = the decision id so that an audit can link them.
"""

from __future__ import annotations

from collections.abc import Mapping
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
        """Answer ``decision`` from the observed state (the effector port)."""
        now, later = self.answer(decision, self.state.pods, self.state.nodes)
        return Effects(now, later)

    def answer(
        self,
        decision: Event,
        pods: Mapping[str, JSON],
        nodes: Mapping[str, JSON] | None = None,
    ) -> Answer:
        """Answer ``decision`` given the current raw pods (``"ns/name"``) and nodes.

        Returns ``(immediate, future)``; immediate events are at ``decision.at``, future
        ones later (sorted by ``at``). Non-decision events get ``([], [])``.
        """
        nodes = nodes if nodes is not None else {}
        if decision.type == "decision.evict":
            return self._evict(decision, pods)
        if decision.type == "decision.bind":
            return self._bind(decision, pods, nodes)
        if decision.type in ("decision.taint", "decision.untaint"):
            return self._taint(decision, nodes)
        return [], []

    # -- evict --------------------------------------------------------------------------

    def _evict(self, decision: Event, pods: Mapping[str, JSON]) -> Answer:
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
            later = self._eviction(decision, noticed, target, evict_at)
            return [notice], later
        now, later = _split(decision.at, self._eviction(decision, pod, target, decision.at))
        return now + _nomination(decision, pods), later

    def _eviction(self, decision: Event, pod: JSON, target: str, at: datetime) -> list[Event]:
        grace = grace_period(pod, self.grace_default)
        gone = at + grace
        dying = terminating(pod, at, grace)
        events = [
            _effect(decision, at, target),
            _watch(decision, at, "pods", "MODIFIED", dying),
            _watch(decision, gone, "pods", "DELETED", dying),
        ]
        owner = controller_owner(pod)
        if owner is not None and owner.get("kind") in RECREATING_KINDS:
            events.append(_watch(decision, gone, "pods", "ADDED", recreated(pod, gone)))
        return events

    # -- bind ---------------------------------------------------------------------------

    def _bind(self, decision: Event, pods: Mapping[str, JSON], nodes: Mapping[str, JSON]) -> Answer:
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
        events = [
            _effect(decision, at, target),
            _watch(decision, at, "pods", "MODIFIED", placed),
            _watch(decision, run_at, "pods", "MODIFIED", started(placed, run_at)),
        ]
        return _split(at, events)

    # -- taint / untaint ----------------------------------------------------------------

    def _taint(self, decision: Event, nodes: Mapping[str, JSON]) -> Answer:
        data = as_taint(decision)
        name = str(data.get("node", ""))
        node = nodes.get(name)
        if node is None:
            return [_failed(decision, name, f"node {name!r} not found")], []
        taint: object = data.get("taint")
        if not isinstance(taint, Mapping):
            return [_failed(decision, name, "decision has no taint")], []
        kept = [t for t in taints_of(node) if not same_taint(t, taint)]
        if decision.type == "decision.taint":
            kept.append({k: taint[k] for k in sorted(taint) if taint[k] is not None})
        changed = with_taints(node, kept)
        return [
            _effect(decision, decision.at, name),
            _watch(decision, decision.at, "nodes", "MODIFIED", changed),
        ], []


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


def _failed(decision: Event, target: str, error: str) -> Event:
    data: EffectPayload = {
        "decision": decision.id,
        "kind": _kind(decision),
        "target": target,
        "error": error,
    }
    return make_event("effect.failed", decision.at, as_json(data), cause=decision.id)


def _watch(decision: Event, at: datetime, resource: str, kind: str, obj: JSON) -> Event:
    data = {"resource": resource, "event": kind, "object": obj}
    return make_event("k8s.watch", at, data, cause=decision.id)


def _split(now: datetime, events: list[Event]) -> Answer:
    """Events at ``now`` (in the given order), and the later ones sorted stably by time."""
    immediate = [e for e in events if e.at <= now]
    future = sorted((e for e in events if e.at > now), key=lambda e: e.at)
    return immediate, future
