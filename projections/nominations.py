"""Nominations: the node a preemption freed for its preemptor, until the preemptor binds.

Volcano pipelines a preemptor onto the node its victims leave and sets the pod's
``status.nominatedNodeName``; the room must not be taken by another pod on the next
session before the preemptor binds there. tide writes the nomination on the log, in the
evidence of each victim's ``decision.evict`` (``evidence.preemptor`` = the preemptor's
``namespace/name``, ``evidence.preemptor_uid``, ``evidence.nominated`` = the node), and
this fold keeps them. Allocate reserves each nominated node's room for its preemptor, and
preempt does not try again for a preemptor whose nomination still stands (upstream:
volcano-sh/volcano pkg/scheduler/actions/preempt/preempt.go, ``taskEligibleToPreempt``).

A nomination is released when:

* the preemptor is bound (a ``decision.bind`` for it, or a pod watch showing
  ``spec.nodeName``);
* the preemptor is deleted, or its pod is replaced (another UID under the same name);
* the node is deleted (the nomination became impossible: the preemptor may preempt
  again elsewhere).

A later nomination of the same preemptor replaces the earlier one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from projections.base import BaseProjection, decode_state, encode_state, handles
from streams.events import Event
from streams.payloads import as_bind, as_evict, as_watch


class Nominations(BaseProjection):
    """Preemptor ``namespace/name`` → nominated node (and the preemptor's UID)."""

    name = "nominations"

    def __init__(self) -> None:
        super().__init__()
        #: preemptor key -> nominated node
        self.nodes: dict[str, str] = {}
        #: preemptor key -> its UID when nominated
        self.uids: dict[str, str] = {}

    def release(self, key: str) -> None:
        self.nodes.pop(key, None)
        self.uids.pop(key, None)

    @handles("decision.evict")
    def _on_evict(self, event: Event) -> None:
        evidence = as_evict(event).get("evidence")
        if not isinstance(evidence, dict):
            return
        preemptor = evidence.get("preemptor")
        node = evidence.get("nominated")
        if isinstance(preemptor, str) and isinstance(node, str) and preemptor and node:
            self.nodes[preemptor] = node
            self.uids[preemptor] = str(evidence.get("preemptor_uid") or "")

    @handles("decision.bind")
    def _on_bind(self, event: Event) -> None:
        if self.nodes:
            data = as_bind(event)
            self.release(f"{data.get('namespace')}/{data.get('pod')}")

    @handles("k8s.watch")
    def _on_watch(self, event: Event) -> None:
        if not self.nodes:
            return
        # the payload typed without a call per record (a TypedDict is the dict itself)
        if TYPE_CHECKING:
            data = as_watch(event)
        else:
            data = event.data
        obj: Any = data.get("object")
        if not isinstance(obj, dict):
            return
        meta = obj.get("metadata") or {}
        resource = data.get("resource")
        if resource == "nodes":
            if data.get("event") == "DELETED":
                gone = meta.get("name")
                for key in sorted(k for k, n in self.nodes.items() if n == gone):
                    self.release(key)
            return
        if resource != "pods":
            return
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if key not in self.nodes:
            return
        uid = self.uids.get(key, "")
        if (
            data.get("event") == "DELETED"
            or (uid and meta.get("uid") and meta.get("uid") != uid)
            or (obj.get("spec") or {}).get("nodeName")
        ):
            self.release(key)

    def dump(self) -> bytes:
        body = {"nodes": dict(sorted(self.nodes.items())), "uids": dict(sorted(self.uids.items()))}
        return encode_state(self.name, self.position, body)

    def load(self, state: bytes) -> None:
        position, body = decode_state(self.name, state)
        nodes = body.get("nodes") or {}
        uids = body.get("uids") or {}
        self.nodes = {str(k): str(v) for k, v in sorted(nodes.items())}
        self.uids = {str(k): str(v) for k, v in sorted(uids.items())}
        self.position = position
