"""Container terminations per pod, folded from pod watch events: OOM kill counts.

The kubelet reports a container's previous run in
``status.containerStatuses[].lastState.terminated`` (and a container that has stopped and
not been restarted in ``state.terminated``). A *termination* is identified by its
signature ``(containerID, startedAt, finishedAt)``; when all three are missing (hand-made
objects) the restart count stands in (``lastState`` of restart *n* is the same termination
as ``state`` before restart *n*, so ``state`` uses restartCount + 1). A signature not seen
before for that container is a new termination; repeated MODIFIED events, or the same
termination moving from ``state`` to ``lastState`` when the container restarts, are not
counted twice.

For each pod the projection keeps:

* ``kills``: how many new terminations had reason ``OOMKilled``;
* ``reasons``: the reasons of the last :data:`KEEP_REASONS` terminations, oldest first
  (several new terminations in one event are ordered by ``finishedAt``, then container);
* ``streak``: how many of the newest terminations in a row were ``OOMKilled`` (so "the
  last ``oomCountThreshold`` terminations were all OOMKilled" is ``streak >= threshold``);
* the pod's node, and an index node → pods with a positive streak, so the faulty-pod
  check of one node reads only the pods that may qualify.

A pod seen for the first time with a terminated ``lastState`` counts that termination
(it happened, tide just had not watched it): the restart count before it is unknown and
is not guessed. A DELETED pod, or a pod whose uid changes (a new incarnation with the
same name), starts over. ``initContainerStatuses`` are not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from projections.base import BaseProjection, decode_state, encode_state, handles
from streams.events import JSON, Event
from streams.payloads import as_watch

OOM_KILLED = "OOMKilled"
#: how many termination reasons are kept per pod
KEEP_REASONS = 16
#: how many termination signatures are remembered per container
KEEP_SIGNATURES = 8
_EMPTY: Mapping[str, Any] = {}


class PodTerminations:
    """What the projection knows about one pod's container terminations."""

    __slots__ = ("kills", "node", "reasons", "seen", "uid")

    def __init__(self, uid: str, node: str) -> None:
        self.uid = uid
        self.node = node
        self.kills = 0
        self.reasons: list[str] = []
        self.seen: dict[str, list[str]] = {}  # container -> recent signatures

    @property
    def streak(self) -> int:
        count = 0
        for reason in reversed(self.reasons):
            if reason != OOM_KILLED:
                break
            count += 1
        return count

    def to_json(self) -> JSON:
        return {
            "uid": self.uid,
            "node": self.node,
            "kills": self.kills,
            "reasons": list(self.reasons),
            "seen": {k: list(self.seen[k]) for k in sorted(self.seen)},
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> PodTerminations:
        pod = cls(str(body["uid"]), str(body["node"]))
        pod.kills = int(body["kills"])
        pod.reasons = [str(r) for r in body["reasons"]]
        pod.seen = {str(k): [str(s) for s in v] for k, v in body["seen"].items()}
        return pod


def _signature(terminated: Mapping[str, Any], restarts: int) -> str:
    parts = [str(terminated.get(k) or "") for k in ("containerID", "startedAt", "finishedAt")]
    if not any(parts):
        return f"#restart-{restarts}"
    return "|".join(parts)


def terminations(pod: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(finishedAt, container, signature, reason)`` of every termination the pod shows."""
    status = pod.get("status") or _EMPTY
    statuses = status.get("containerStatuses")
    if not statuses:
        return []
    found: list[tuple[str, str, str, str]] = []
    for cs in statuses:
        # (type checks first: isinstance against the Mapping ABC costs ~0.3 µs a call)
        if type(cs) is not dict and not isinstance(cs, Mapping):
            continue
        last = (cs.get("lastState") or _EMPTY).get("terminated")
        current = (cs.get("state") or _EMPTY).get("terminated")
        if last is None and current is None:  # the common case: nothing terminated
            continue
        name = str(cs.get("name") or "")
        restarts = cs.get("restartCount")
        restarts = restarts if isinstance(restarts, int) else 0
        if type(last) is dict or isinstance(last, Mapping):
            found.append(
                (
                    str(last.get("finishedAt") or ""),
                    name,
                    _signature(last, restarts),
                    str(last.get("reason") or ""),
                )
            )
        if type(current) is dict or isinstance(current, Mapping):
            found.append(
                (
                    str(current.get("finishedAt") or ""),
                    name,
                    _signature(current, restarts + 1),
                    str(current.get("reason") or ""),
                )
            )
    found.sort()
    return found


class OOMState(BaseProjection):
    """Per-pod termination history and OOM kill counts (see the module docstring)."""

    name = "oom"

    def __init__(self) -> None:
        super().__init__()
        self.pods: dict[str, PodTerminations] = {}  # "namespace/name" -> history
        self.streaking: dict[str, set[str]] = {}  # node -> pods whose streak > 0

    # ---- folds -----------------------------------------------------------------------

    @handles("k8s.watch")
    def _watch(self, event: Event) -> None:
        # the payload typed without a call per record (a TypedDict is the dict itself)
        if TYPE_CHECKING:
            data = as_watch(event)
        else:
            data = event.data
        if data.get("resource") != "pods":
            return
        obj = data.get("object") or _EMPTY
        meta = obj.get("metadata") or _EMPTY
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if data.get("event") == "DELETED":
            uid = str(meta.get("uid") or "")
            held = self.pods.get(key)
            if held is not None and (not uid or held.uid == uid or not held.uid):
                self._drop(key)
            return
        held = self.pods.get(key)
        found = terminations(obj)
        if held is None and not found:
            return  # nothing to remember about a pod that never terminated
        uid = str(meta.get("uid") or "")
        node = str((obj.get("spec") or _EMPTY).get("nodeName") or "")
        if held is not None and uid and held.uid and held.uid != uid:
            self._drop(key)
            held = None
            if not found:
                return
        if held is None:
            held = self.pods[key] = PodTerminations(uid, node)
        if held.node != node:
            self._unindex(key, held)
            held.node = node
        for _finished, container, signature, reason in found:
            seen = held.seen.setdefault(container, [])
            if signature in seen:
                continue
            seen.append(signature)
            del seen[:-KEEP_SIGNATURES]
            held.reasons.append(reason)
            if reason == OOM_KILLED:
                held.kills += 1
        del held.reasons[:-KEEP_REASONS]
        self._index(key, held)

    def _index(self, key: str, held: PodTerminations) -> None:
        if held.streak > 0 and held.node:
            self.streaking.setdefault(held.node, set()).add(key)
        else:
            self._unindex(key, held)

    def _unindex(self, key: str, held: PodTerminations) -> None:
        pods = self.streaking.get(held.node)
        if pods is not None:
            pods.discard(key)
            if not pods:
                del self.streaking[held.node]

    def _drop(self, key: str) -> None:
        held = self.pods.pop(key)
        self._unindex(key, held)

    # ---- queries ---------------------------------------------------------------------

    def kills(self, key: str) -> int:
        """How many OOM kills of ``namespace/name`` the log has shown."""
        held = self.pods.get(key)
        return held.kills if held is not None else 0

    def last_reasons(self, key: str) -> tuple[str, ...]:
        """The last termination reasons of the pod, oldest first."""
        held = self.pods.get(key)
        return tuple(held.reasons) if held is not None else ()

    def streak(self, key: str) -> int:
        """How many of the pod's newest terminations in a row were OOMKilled."""
        held = self.pods.get(key)
        return held.streak if held is not None else 0

    def all_oom(self, key: str, count: int) -> bool:
        """Whether the last ``count`` terminations of the pod were all OOMKilled."""
        return count > 0 and self.streak(key) >= count

    def repeated_oom_on(self, node: str, count: int) -> list[str]:
        """Pods on ``node`` whose last ``count`` terminations were all OOMKilled, sorted."""
        pods = self.streaking.get(node)
        if not pods:
            return []
        return sorted(k for k in pods if self.pods[k].streak >= count)

    # ---- checkpoint ------------------------------------------------------------------

    def dump(self) -> bytes:
        body = {"pods": {k: self.pods[k].to_json() for k in sorted(self.pods)}}
        return encode_state(self.name, self.position, body)

    def load(self, state: bytes) -> None:
        position, body = decode_state(self.name, state)
        self.pods = {k: PodTerminations.from_json(v) for k, v in body["pods"].items()}
        self.streaking = {}
        for key in sorted(self.pods):
            self._index(key, self.pods[key])
        self.position = position
