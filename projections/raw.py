"""Raw Kubernetes objects kept compactly: a read-only mapping of key → JSON.

The simulated cluster turns decisions into watch events and needs the pod as the API server
would hold it. Kept as Python dicts, a 6 KB pod costs about 30 KB of memory and slows the fold
(every retained object is new memory for the allocator and the garbage collector), so each
object is stored as its canonical JSON bytes without ``metadata.managedFields`` (server-side
apply bookkeeping nothing here reads) and decoded on access. Every access therefore returns a
fresh dict that the caller may change freely.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import orjson

JSON = dict[str, Any]


def trimmed(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object without ``metadata.managedFields`` (a shallow copy only when needed)."""
    meta = obj.get("metadata")
    if isinstance(meta, Mapping) and "managedFields" in meta:
        return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}
    return obj


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
