"""What the log already says about each watched object: the recorder's own small fold.

Why a separate fold (not the ClusterState): a relist after a 410, a reconnect or a restart
must append only the *differences* between the API server and the log — a DELETED for an
object that vanished, an ADDED / MODIFIED for one whose resourceVersion changed, nothing
for an unchanged one — and it needs every watched resource (PodDisruptionBudgets too) by
key, with no policy semantics. Only identity is kept (namespace, name, uid,
resourceVersion), never the whole object, so it stays small on a 150,000-pod cluster; a
DELETED written by a relist carries that identity as its object, which is all a fold of a
deletion reads. Metric samples are folded too: the last ``timestamp`` of each object, so
a sample that did not advance is not written twice (also across a restart). ``versions``
keeps the resourceVersion of each resource's last record (an event, or the BOOKMARK the
recorder writes after a list with the list's version): a restart watches on from there.
``config`` is the payload of the log's last ``config.applied`` (a restart appends its own
only when it differs).

A checkpoint by position holds this fold too (:meth:`KnownObjects.dump` /
:meth:`KnownObjects.load`, the part ``known`` of :mod:`projections.checkpoint_codec`), so a
restarted recorder folds the log from its latest checkpoint, not from offset 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

import orjson

from projections.base import CheckpointError
from streams.events import JSON, Event
from streams.payloads import ObjectMeta, RawObject, as_node_sample, as_watch

__all__ = ["Identity", "KnownObjects", "identity_of", "key_of"]


class Identity(NamedTuple):
    """An object as the log last saw it (a tuple: made for every watch record folded)."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    api_version: str
    kind: str

    def stub(self) -> RawObject:
        """The object a relist's DELETED carries: its identity and last version."""
        meta: ObjectMeta = {"name": self.name, "resourceVersion": self.resource_version}
        if self.namespace:
            meta["namespace"] = self.namespace
        if self.uid:
            meta["uid"] = self.uid
        stub: RawObject = {"metadata": meta}
        if self.api_version:
            stub["apiVersion"] = self.api_version
        if self.kind:
            stub["kind"] = self.kind
        return stub


def key_of(obj: Mapping[str, object]) -> str:
    """``namespace/name`` (``name`` for a cluster-scoped object), "" if it has no name."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return ""
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return ""
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name


#: a tuple made at once (a NamedTuple's __new__ is a call of its own: once per record)
_TUPLE = tuple.__new__


def identity_of(obj: Mapping[str, object]) -> Identity:
    """The identity of a raw object (fields it lacks, or that are not text, are "")."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        get = meta.get
        namespace, name, uid, version = (
            get("namespace"),
            get("name"),
            get("uid"),
            get("resourceVersion"),
        )
    else:
        namespace = name = uid = version = None
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    return _TUPLE(
        Identity,
        (
            namespace if isinstance(namespace, str) else "",
            name if isinstance(name, str) else "",
            uid if isinstance(uid, str) else "",
            version if isinstance(version, str) else "",
            api_version if isinstance(api_version, str) else "",
            kind if isinstance(kind, str) else "",
        ),
    )


class KnownObjects:
    """resource → key → :class:`Identity` of every object on the log, resource → the
    version of its last record, and the last metric timestamp of every (type, key)."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Identity]] = {}
        self.versions: dict[str, str] = {}
        self.samples: dict[tuple[str, str], str] = {}
        self.config: JSON | None = None

    def of(self, resource: str) -> dict[str, Identity]:
        """The objects of one resource (a live dict: the caller must not change it)."""
        return self.objects.setdefault(resource, {})

    def fold(self, events: Iterable[Event]) -> None:
        """Fold records of the log (``k8s.watch``, ``metrics.*`` and ``config.applied``;
        others are ignored)."""
        for event in events:
            self.fold_one(event)

    def fold_one(self, event: Event) -> None:
        """Fold one record of the log (as :meth:`fold`)."""
        kind = event.type
        # the payloads typed without a call per record (a TypedDict is the dict itself)
        if kind == "k8s.watch":
            if TYPE_CHECKING:
                data = as_watch(event)
            else:
                data = event.data
            obj = data.get("object")
            resource = data.get("resource")
            if isinstance(obj, dict) and isinstance(resource, str):
                self.note(resource, str(data.get("event")), obj)
        elif kind == "metrics.node" or kind == "metrics.pod":
            if TYPE_CHECKING:  # a pod sample's metadata and timestamp read the same
                sample = as_node_sample(event)
            else:
                sample = event.data
            stamp = sample.get("timestamp")
            key = key_of(sample)
            if isinstance(stamp, str) and key:
                self.samples[kind, key] = stamp
        elif kind == "config.applied":
            self.config = event.data

    def note(self, resource: str, event: str, obj: RawObject) -> None:
        """Fold one watch event."""
        identity = identity_of(obj)
        if identity.resource_version:
            self.versions[resource] = identity.resource_version
        name = identity.name  # key_of(obj), from what identity_of read
        if not name or event == "BOOKMARK":
            return
        key = f"{identity.namespace}/{name}" if identity.namespace else name
        known = self.of(resource)
        if event == "DELETED":
            known.pop(key, None)
        else:
            known[key] = identity

    def dump(self) -> bytes:
        """The fold as canonical JSON (keys sorted: equal folds give equal bytes)."""
        return orjson.dumps(
            {
                # each identity an array of its six fields (``default``: a tuple's subclass)
                "objects": self.objects,
                "versions": self.versions,
                "samples": sorted(
                    [type_, key, stamp] for (type_, key), stamp in self.samples.items()
                ),
                "config": self.config,
            },
            default=tuple,
            option=orjson.OPT_SORT_KEYS,
        )

    @classmethod
    def load(cls, data: bytes) -> KnownObjects:
        """The fold :meth:`dump` wrote (raises CheckpointError naming what is wrong)."""
        try:
            state = orjson.loads(data)
            known = cls()
            for resource, objects in state["objects"].items():
                into = known.of(_text(resource))
                for key, fields in objects.items():
                    if not isinstance(fields, list) or len(fields) != 6:
                        raise ValueError(f"the identity of {resource} {key} is not 6 fields")
                    into[key] = Identity(*(_text(field) for field in fields))
            known.versions = {str(r): _text(v) for r, v in state["versions"].items()}
            for type_, key, stamp in state["samples"]:
                known.samples[_text(type_), _text(key)] = _text(stamp)
            config = state["config"]
            if config is not None and not isinstance(config, dict):
                raise ValueError("its config is not an object")
            known.config = config
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CheckpointError(f"the checkpoint's known objects are malformed: {exc}") from exc
        return known


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    return value
