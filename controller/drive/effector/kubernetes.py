"""The Kubernetes effector of ``tide run``: a decision in, one outcome record out.

Why its own adapter: the simulated cluster (:mod:`controller.drive.effector.simulated`) answers
synchronously from its own state; a real API server is asynchronous, refuses (a
PodDisruptionBudget's 429, a resourceVersion conflict, a 5xx) and may already have done
what a restarted process is about to do again. Every call goes through
:class:`controller.drive.kube.client.KubeClient` as raw JSON:

* **evict**: a ``policy/v1`` Eviction with the pod's uid as a precondition and the grace
  period of the settings (None: the pod's own); a pressure eviction's ``evict_at``
  (``preStopDelaySeconds``) is waited for by the caller. A preemption's eviction then
  sets the preemptor's ``status.nominatedNodeName`` (a pod-status patch);
* **bind**: the Binding subresource (its answer is a Status, read raw);
* **taint** / **untaint**: a JSON patch of the node that first *tests* its
  resourceVersion and then replaces ``spec.taints`` with the node's own list plus or minus
  the one taint, so no other taint is lost; when another writer changed the node between
  the read and the patch (the real API answers the failed ``test`` with 422, a merge
  precondition with 409), the node is read again and the patch tried again.

Outcomes (``cause`` and ``data.decision`` name the decision; the record's id is derived
from the decision id alone, so appending an outcome twice is a no-op): ``effect.applied``;
``effect.failed`` with the API's reason (429 of a budget — the policy retries on its next
round —, 404, 409, a permanent 5xx such as a pod under two budgets after one call, a 5xx
or a throttling 429 after the retries, each retry after the server's ``Retry-After``);
``effect.skipped`` (the pod is already gone, a guard rail of
:mod:`controller.drive.effector.limits`, ``dry-run``).
:meth:`KubernetesEffector.reconcile` answers a decision found without an outcome on a
start: already done (terminating or gone, bound there, taint present) → applied, without a
call; otherwise it is applied now. Every applied effect also gets a core/v1 Event on the
pod or node (reason code and a one-line why), named after the decision so a retry cannot
create two; an Event the API refuses (other than the 409 of one that exists) leaves the
outcome applied, and is logged (one warning line naming the decision) and counted
(``event_failed``, the observer's counter).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, cast

from controller.drive.effector.limits import EvictionLimits, LimitGuard
from controller.drive.kube.client import KubeClient
from controller.drive.kube.errors import (
    Conflict,
    Invalid,
    KubeError,
    NotFound,
    TooManyRequests,
)
from controller.drive.kube.retry import Backoff
from streams.events import Event, format_time, make_event
from streams.payloads import (
    DecisionKind,
    EffectPayload,
    EffectReason,
    RawObject,
    as_decision,
    as_evict,
    as_json,
    as_pod_decision,
    as_taint,
)

__all__ = ["EffectorOptions", "KubernetesEffector", "outcome_event", "outcome_id"]

JSON = RawObject  # a Kubernetes object as raw JSON
T = TypeVar("T")
log = logging.getLogger(__name__)
_APPLIED, _FAILED, _SKIPPED = "effect.applied", "effect.failed", "effect.skipped"


@dataclass(frozen=True, slots=True)
class EffectorOptions:
    """How the effector acts.

    Attributes:
        dry_run: call nothing that changes the cluster; every outcome is ``dry-run``.
        grace_seconds: the eviction grace period; None: the pod's own.
        attempts: tries of a call failing with a 5xx, a throttling 429 or no answer.
        conflicts: tries of a node patch answered 409 (the node changed meanwhile).
        backoff_base: the first retry delay's bound, in seconds.
        backoff_cap: the largest retry delay's bound, in seconds.
        limits: the global eviction guard rails.
        events: create core/v1 Events on the objects acted on.
    """

    dry_run: bool = False
    grace_seconds: int | None = None
    attempts: int = 4
    conflicts: int = 5
    backoff_base: float = 0.2
    backoff_cap: float = 5.0
    limits: EvictionLimits = field(default_factory=EvictionLimits)
    events: bool = True


def outcome_id(decision_id: str) -> str:
    """The id of a decision's outcome record: a function of the decision id alone."""
    return hashlib.blake2b(f"outcome:{decision_id}".encode(), digest_size=12).hexdigest()


def outcome_event(
    decision: Event,
    type_: str,
    at: datetime,
    error: str | None = None,
    reason: EffectReason | None = None,
) -> Event:
    """The outcome record ``type_`` of ``decision`` at ``at`` (``error`` and its ``reason``
    in a word, :data:`streams.payloads.EffectReason`, unless applied)."""
    # a decision record's type names its kind (validated when it was written)
    kind = str(as_decision(decision).get("kind") or decision.type.removeprefix("decision."))
    if decision.type in ("decision.evict", "decision.bind"):
        pod = as_pod_decision(decision)
        target = f"{pod.get('namespace')}/{pod.get('pod')}"
    else:
        target = str(as_taint(decision).get("node"))
    payload: EffectPayload = {
        "decision": decision.id,
        "kind": cast(DecisionKind, kind),
        "target": target,
    }
    if error is not None:
        payload["error"] = error
    if reason is not None:
        payload["reason"] = reason
    return make_event(type_, at, as_json(payload), cause=decision.id, id=outcome_id(decision.id))


class _Refused(Exception):
    """A call the API refused for good: the outcome type, the error and its reason code."""

    def __init__(self, type_: str, error: str, code: EffectReason) -> None:
        super().__init__(error)
        self.type = type_
        self.error = error
        self.code = code


def _code_of(exc: KubeError) -> EffectReason:
    """The reason code of an API error the caller did not judge itself."""
    if isinstance(exc, NotFound):
        return "not-found"
    if isinstance(exc, Conflict):
        return "conflict"
    return "rejected"


class KubernetesEffector:
    """Applies decisions through the API (see the module docstring).

    Args:
        client: the API connection (None only with ``dry_run``).
        now: the clock's ``now`` (stamps outcomes, feeds the guard rails).
        options: how to act.
        sleep: how to wait between retries (a test passes a fake).
        event_failed: told of each Event the API refused (the decision and the error):
            ``tide run`` passes its observer's counter.
    """

    def __init__(
        self,
        client: KubeClient | None,
        *,
        now: Callable[[], datetime],
        options: EffectorOptions = EffectorOptions(),
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        event_failed: Callable[[Event, str], None] | None = None,
    ) -> None:
        if client is None and not options.dry_run:
            raise ValueError("a Kubernetes effector needs a client unless it is a dry run")
        self.client = client
        self.now = now
        self.options = options
        self.guard = LimitGuard(options.limits)
        self._sleep = sleep
        self._event_failed = event_failed

    # ---- the two entry points --------------------------------------------------------

    async def apply(self, decision: Event) -> Event:
        """Carry ``decision`` out now; its outcome record."""
        if self.options.dry_run:
            return outcome_event(decision, _SKIPPED, self.now(), "dry-run", "dry-run")
        try:
            if decision.type == "decision.evict":
                await self._evict(decision)
            elif decision.type == "decision.bind":
                await self._bind(decision)
            elif decision.type in ("decision.taint", "decision.untaint"):
                await self._taint(decision)
            else:
                raise _Refused(
                    _FAILED, f"{decision.type} is not a decision tide applies", "unsupported"
                )
        except _Refused as refused:
            return outcome_event(decision, refused.type, self.now(), refused.error, refused.code)
        except KubeError as exc:  # a 404 or 409 the step did not judge itself
            return outcome_event(decision, _FAILED, self.now(), str(exc), _code_of(exc))
        await self._describe(decision)
        return outcome_event(decision, _APPLIED, self.now())

    async def reconcile(self, decision: Event) -> Event:
        """A decision found without an outcome: applied if the API shows it done, else now."""
        if self.options.dry_run:
            return outcome_event(decision, _SKIPPED, self.now(), "dry-run", "dry-run")
        try:
            done = await self._done(decision)
        except _Refused as refused:
            return outcome_event(decision, refused.type, self.now(), refused.error, refused.code)
        except KubeError as exc:
            return outcome_event(decision, _FAILED, self.now(), str(exc), _code_of(exc))
        if done:
            return outcome_event(decision, _APPLIED, self.now())
        return await self.apply(decision)

    # ---- evict ------------------------------------------------------------------------

    async def _evict(self, decision: Event) -> None:
        data = as_evict(decision)
        namespace, name = str(data.get("namespace")), str(data.get("pod"))
        node = str(data.get("node") or "")
        refusal = self.guard.refusal(node=node, namespace=namespace, now=self.now())
        if refusal is not None:
            raise _Refused(_SKIPPED, refusal, "guard-rail")
        client = self._client()
        uid = str(data.get("uid") or "") or None
        try:
            await self._call(
                lambda: client.evict(
                    namespace, name, uid=uid, grace_seconds=self.options.grace_seconds
                ),
                budget_refusal=True,
            )
        except NotFound:
            raise _Refused(_SKIPPED, f"pod {namespace}/{name} is already gone", "gone") from None
        self.guard.applied(node=node, namespace=namespace, now=self.now())
        await self._nominate(decision)

    async def _nominate(self, decision: Event) -> None:
        evidence = as_evict(decision).get("evidence")
        if not isinstance(evidence, dict):
            return
        preemptor, node = evidence.get("preemptor"), evidence.get("nominated")
        if not isinstance(preemptor, str) or "/" not in preemptor or not node:
            return
        namespace, name = preemptor.split("/", 1)
        client = self._client()
        try:
            pod = await self._call(
                lambda: client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
            )
            if (pod.get("spec") or {}).get("nodeName"):
                return
            if (pod.get("status") or {}).get("nominatedNodeName") == node:
                return
            await self._call(
                lambda: client.patch_pod_status(namespace, name, {"nominatedNodeName": node})
            )
        except KubeError:
            return  # the nomination is advice; the eviction itself was applied

    # ---- bind -------------------------------------------------------------------------

    async def _bind(self, decision: Event) -> None:
        data = as_pod_decision(decision)
        namespace, name, node = str(data.get("namespace")), str(data.get("pod")), str(data["node"])
        client = self._client()
        uid = str(data.get("uid") or "") or None
        try:
            await self._call(lambda: client.bind(namespace, name, uid=uid, node=node))
        except Conflict as exc:
            if await self._bound_to(namespace, name, node):
                return  # our own bind, answered after a lost reply
            raise _Refused(_FAILED, str(exc), "conflict") from None

    async def _bound_to(self, namespace: str, name: str, node: str) -> bool:
        client = self._client()
        try:
            pod = await self._call(
                lambda: client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
            )
        except KubeError:
            return False
        return bool((pod.get("spec") or {}).get("nodeName") == node)

    # ---- taint / untaint --------------------------------------------------------------

    async def _taint(self, decision: Event) -> None:
        data = as_taint(decision)
        name = str(data.get("node"))
        taint: object = data.get("taint")
        if not isinstance(taint, dict):
            raise _Refused(_FAILED, f"{decision.type} names no taint", "unsupported")
        adding = decision.type == "decision.taint"
        client = self._client()
        refused: tuple[str, Invalid] | None = None  # the version a 422 answered, and it
        for _ in range(self.options.conflicts):
            node = await self._call(lambda: client.get(f"/api/v1/nodes/{name}"))
            taints = list((node.get("spec") or {}).get("taints") or [])
            kept = [t for t in taints if not _same_taint(t, taint)]
            if adding:
                kept.append({k: taint[k] for k in sorted(taint) if taint[k] is not None})
            if kept == taints:
                return  # already as wanted
            version = str((node.get("metadata") or {}).get("resourceVersion") or "")
            if refused is not None and refused[0] == version:
                # the node did not change, so the 422 was not the test's: refused for good
                raise _Refused(_FAILED, str(refused[1]), "rejected")
            ops: list[JSON] = [
                {"op": "test", "path": "/metadata/resourceVersion", "value": version},
                {"op": "add", "path": "/spec/taints", "value": kept},
            ]
            try:
                await self._patch(name, ops)
                return
            except Conflict:
                continue
            except Invalid as exc:
                # a failed ``test`` answers 422 as a malformed patch does: read the node
                # again; if its version moved, someone else wrote it meanwhile
                refused = (version, exc)
        raise _Refused(
            _FAILED,
            f"node {name}: changed under the patch {self.options.conflicts} times",
            "conflict",
        )

    async def _patch(self, name: str, ops: list[JSON]) -> None:
        client = self._client()
        await self._call(lambda: client.patch_node(name, ops))

    # ---- reconciliation ---------------------------------------------------------------

    async def _done(self, decision: Event) -> bool:
        client = self._client()
        if decision.type in ("decision.evict", "decision.bind"):
            data = as_pod_decision(decision)
            namespace, name = str(data.get("namespace")), str(data.get("pod"))
            try:
                pod = await self._call(
                    lambda: client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
                )
            except NotFound:
                if decision.type == "decision.evict":
                    return True
                raise _Refused(_FAILED, f"pod {namespace}/{name} not found", "not-found") from None
            meta = pod.get("metadata") or {}
            uid = data.get("uid")
            if decision.type == "decision.evict":
                return bool(meta.get("deletionTimestamp")) or bool(uid and meta.get("uid") != uid)
            return bool((pod.get("spec") or {}).get("nodeName") == data.get("node"))
        change = as_taint(decision)
        node = await self._call(lambda: client.get(f"/api/v1/nodes/{change.get('node')}"))
        taints = (node.get("spec") or {}).get("taints") or []
        present = any(_same_taint(t, change.get("taint") or {}) for t in taints)
        return present if decision.type == "decision.taint" else not present

    # ---- Events -----------------------------------------------------------------------

    async def _describe(self, decision: Event) -> None:
        if not self.options.events:
            return
        data = as_decision(decision)
        uid = None
        if decision.type in ("decision.evict", "decision.bind"):
            pod = as_pod_decision(decision)
            namespace, name, kind = str(pod.get("namespace")), str(pod.get("pod")), "Pod"
            uid = pod.get("uid")
        else:
            namespace, name, kind = "default", str(data.get("node")), "Node"
        reason = str(data.get("reason") or decision.type)
        verb = decision.type.removeprefix("decision.")
        where = f" on {data.get('node')}" if kind == "Pod" and data.get("node") else ""
        message = f"tide: {verb}{where} ({reason}, {data.get('source', 'tide')})"
        stamp = format_time(self.now())
        body: JSON = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"tide.{decision.id}", "namespace": namespace},
            "involvedObject": {"kind": kind, "name": name, "apiVersion": "v1"},
            "reason": _camel(reason),
            "message": message,
            "type": "Normal",
            "source": {"component": "tide"},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        if kind == "Pod":
            body["involvedObject"]["namespace"] = namespace
            if uid:
                body["involvedObject"]["uid"] = uid
        client = self._client()
        try:
            await client.create_event(namespace, body)
        except Conflict:
            return  # named after the decision: a retry's Event exists already
        except KubeError as exc:  # a courtesy: the effect stands, the operator is told
            log.warning(
                "event for decision %s not created: %s",
                decision.id,
                exc,
                extra={"decision": decision.id},
            )
            if self._event_failed is not None:
                self._event_failed(decision, str(exc))

    # ---- calls ------------------------------------------------------------------------

    def _client(self) -> KubeClient:
        assert self.client is not None
        return self.client

    async def _call(self, call: Callable[[], Awaitable[T]], *, budget_refusal: bool = False) -> T:
        """``await call()``: retriable errors retried up to ``attempts``, each after the wait
        the server asked for (``Retry-After``, as client-go's ``checkWait``) or else the
        backoff's; a budget's 429 (``budget_refusal``), other 4xx, a permanent 5xx and the
        last error raise :class:`_Refused` (404, 409 and 422 are re-raised as they are for
        the caller to judge). A call the server asked to wait is never given up before that
        wait has passed once: the attempt after it is made whatever ``attempts`` says."""
        backoff = Backoff(self.options.backoff_base, self.options.backoff_cap)
        tried, waited_as_asked = 0, False
        while True:
            tried += 1
            try:
                return await call()
            except (NotFound, Conflict, Invalid):
                raise
            except KubeError as exc:
                if isinstance(exc, TooManyRequests) and budget_refusal and exc.budget:
                    raise _Refused(
                        _FAILED, f"429 TooManyRequests: {exc.message}", "budget"
                    ) from None
                if not exc.retriable:
                    raise _Refused(_FAILED, str(exc), "rejected") from None
                asked = exc.retry_after
                if tried >= self.options.attempts and (asked is None or waited_as_asked):
                    raise _Refused(
                        _FAILED, f"{exc} (after {tried} attempts)", "unavailable"
                    ) from None
                delay = backoff.next_delay() if asked is None else asked
                waited_as_asked = waited_as_asked or asked is not None
            await self._sleep(delay)


def _same_taint(a: Any, b: Any) -> bool:
    return (
        isinstance(a, dict) and a.get("key") == b.get("key") and a.get("effect") == b.get("effect")
    )


def _camel(reason: str) -> str:
    """``tdm-window-closed`` → ``TdmWindowClosed`` (an Event's reason is CamelCase)."""
    return "".join(part[:1].upper() + part[1:] for part in reason.replace("_", "-").split("-"))
