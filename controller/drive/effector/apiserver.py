"""The simulated cluster's API-server state: raw Kubernetes objects kept compactly.

The simulated cluster turns decisions into watch events and needs the pod as the API server
would hold it; it keeps its own copy of every pod and node, fed by the watch records it
observes (:class:`ApiServerState`), so the policy projections carry no raw objects.
Kept as Python dicts, a 6 KB pod costs about 30 KB of memory and slows the fold
(every retained object is new memory for the allocator and the garbage collector), so each
object is stored as its canonical JSON bytes without ``metadata.managedFields`` (server-side
apply bookkeeping nothing here reads) and decoded on access. Every access therefore returns a
fresh dict that the caller may change freely.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from streams.payloads import RawObject

JSON = RawObject  # a Kubernetes object as raw JSON


def trimmed(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object without ``metadata.managedFields`` (a shallow copy only when needed)."""
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj


def object_bytes(data: Mapping[str, Any], payload: bytes) -> bytes | None:
    """What :meth:`RawObjects.put` would keep of a watch payload's object, cut out of
    ``payload`` (the payload's canonical bytes, which are also its own key order, so the
    object's sorted bytes are its ``orjson.dumps``); None unless the payload is just
    ``event``, ``object`` and ``resource`` and the object needs no trimming."""
    kind, obj, resource = data.get("event"), data.get("object"), data.get("resource")
    if len(data) != 3 or not isinstance(kind, str) or not isinstance(resource, str):
        return None
    if not isinstance(obj, dict) or trimmed(obj) is not obj:
        return None
    head = b'{"event":' + orjson.dumps(kind) + b',"object":'
    tail = b',"resource":' + orjson.dumps(resource) + b"}"
    if not (payload.startswith(head) and payload.endswith(tail)):
        return None
    return payload[len(head) : -len(tail)]  # an exact copy (see :meth:`RawObjects.put`)


class RawObjects(Mapping[str, JSON]):
    """``key -> raw JSON``; values are decoded on access (a new dict each time)."""

    __slots__ = ("_data",)

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}

    def __getitem__(self, key: str) -> JSON:
        value: JSON = orjson.loads(self._data[key])
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def put(self, key: str, obj: Mapping[str, Any]) -> None:
        """Keep ``obj`` (trimmed) under ``key``."""
        # orjson returns a bytes object shrunk from a larger buffer; kept by the thousand,
        # those fragment the heap (16 KB resident per 6 KB pod). An exact copy does not.
        self._data[key] = bytes(memoryview(orjson.dumps(trimmed(obj))))

    def put_bytes(self, key: str, raw: bytes) -> None:
        """Keep already-encoded JSON under ``key``."""
        self._data[key] = raw

    def discard(self, key: str) -> None:
        self._data.pop(key, None)

    def raw(self, key: str) -> bytes:
        """The stored JSON bytes of ``key``."""
        return self._data[key]

    def clear(self) -> None:
        self._data.clear()


class ApiServerState:
    """The pods (``"ns/name"``) and nodes an API server would hold, folded from watch records.

    A DELETED pod whose uid differs from the kept one (an older incarnation's late delete)
    leaves the newer pod in place, as the cluster projection does.
    """

    __slots__ = ("nodes", "pods")

    def __init__(self) -> None:
        self.pods = RawObjects()
        self.nodes = RawObjects()

    def observe(
        self, resource: object, kind: object, obj: object, raw: bytes | None = None
    ) -> None:
        """Fold one watch event (``resource``, ``ADDED``/``MODIFIED``/``DELETED``, object);
        ``raw``: the bytes to keep of the object, when already known (:func:`object_bytes`)."""
        if kind not in ("ADDED", "MODIFIED", "DELETED") or not isinstance(obj, dict):
            return
        meta = obj.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            return
        if resource == "pods":
            key, store = f"{meta.get('namespace') or 'default'}/{meta['name']}", self.pods
        elif resource == "nodes":
            key, store = meta["name"], self.nodes
        else:
            return
        if kind != "DELETED":
            if raw is None:
                store.put(key, obj)
            else:
                store.put_bytes(key, raw)
            return
        uid = meta.get("uid")
        if resource == "pods" and uid and key in store:
            kept = (store[key].get("metadata") or {}).get("uid")
            if kept and kept != uid:
                return
        store.discard(key)
