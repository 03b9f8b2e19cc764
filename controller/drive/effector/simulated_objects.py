"""Raw-object edits the simulated cluster makes, as the API server and controllers would.

Pure functions from a raw Pod/Node dict (as the cluster projection holds it) to the new
raw dict; nothing here keeps state. A recreated pod's name and uid are derived from the old
pod (its name, uid and an incarnation counter kept in an annotation), never from a random
source, so a simulation is a pure function of its inputs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from streams.events import format_time
from streams.payloads import RawObject

JSON = RawObject  # a Kubernetes object as raw JSON

#: annotation written when an eviction is announced ahead of time (graceful eviction)
NOTICE_ANNOTATION = "tide.io/eviction-notice"
#: annotations the simulated controllers keep on recreated pods
INCARNATION_ANNOTATION = "tide.io/incarnation"
BASE_NAME_ANNOTATION = "tide.io/base-name"

#: controller kinds whose pods come back after deletion (apps/v1 ReplicaSet and
#: StatefulSet, batch/v1 Job, Volcano's batch.volcano.sh Job)
RECREATING_KINDS = frozenset({"ReplicaSet", "StatefulSet", "Job"})
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' utilrand alphabet


def metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def controller_owner(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference with ``controller: true``, if any."""
    owners = metadata(pod).get("ownerReferences")
    if not isinstance(owners, list):
        return None
    for owner in owners:
        if isinstance(owner, Mapping) and owner.get("controller") is True:
            return owner
    return None


def grace_period(pod: Mapping[str, Any], default: timedelta) -> timedelta:
    """``spec.terminationGracePeriodSeconds`` (a non-negative integer), else ``default``."""
    value = spec_of(pod).get("terminationGracePeriodSeconds")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return timedelta(seconds=value)
    return default


def _mutable_meta(obj: JSON) -> JSON:
    return _mutable(obj, "metadata")


def _mutable(obj: JSON, key: str) -> JSON:
    """``obj[key]`` replaced by a shallow copy of itself (a new dict if it is none), to edit.

    The edits below copy only the path to what they change: the rest of the new object
    shares its lists and dicts with the old one, so neither may be changed in place
    afterwards (raw objects are never edited in place: every edit here copies).
    """
    value = obj.get(key)
    value = dict(value) if isinstance(value, Mapping) else {}
    obj[key] = value
    return value


def with_notice(pod: Mapping[str, Any], evict_at: datetime) -> JSON:
    """The pod with the eviction-notice annotation (value: when it will be evicted)."""
    out = dict(pod)
    annotations = _mutable(_mutable_meta(out), "annotations")
    annotations[NOTICE_ANNOTATION] = format_time(evict_at)
    return out


def terminating(pod: Mapping[str, Any], at: datetime, grace: timedelta) -> JSON:
    """The pod after an eviction at ``at``: ``deletionTimestamp`` = ``at + grace``."""
    out = dict(pod)
    meta = _mutable_meta(out)
    meta["deletionTimestamp"] = format_time(at + grace)
    meta["deletionGracePeriodSeconds"] = int(grace.total_seconds())
    return out


def bound(pod: Mapping[str, Any], node: str) -> JSON:
    """The pod after a Binding: ``spec.nodeName`` set, still Pending."""
    out = dict(pod)
    _mutable(out, "spec")["nodeName"] = node
    status = _mutable(out, "status")
    status["phase"] = "Pending"
    return out


def nominated(pod: Mapping[str, Any], node: str) -> JSON:
    """The preemptor after its victims' eviction: ``status.nominatedNodeName`` = ``node``
    (as the Kubernetes scheduler and Volcano's preempt set it)."""
    out = dict(pod)
    _mutable(out, "status")["nominatedNodeName"] = node
    return out


def started(pod: Mapping[str, Any], at: datetime) -> JSON:
    """The bound pod once its containers run: phase Running with ``startTime``."""
    out = dict(pod)
    status = _mutable(out, "status")
    status["phase"] = "Running"
    status["startTime"] = format_time(at)
    return out


def _suffix(seed: str) -> str:
    digest = hashlib.blake2b(seed.encode(), digest_size=8).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])


def _incarnation(annotations: Mapping[str, Any]) -> int:
    value = annotations.get(INCARNATION_ANNOTATION)
    try:
        return int(value) if isinstance(value, str) else 0
    except ValueError:
        return 0


def recreated(pod: Mapping[str, Any], at: datetime) -> JSON:
    """The replacement pod a controller creates at ``at`` for the deleted ``pod``.

    A StatefulSet keeps the name; the others get ``<base>-<5 chars>``, the suffix a hash of
    the base, the old name and the incarnation (``tide.io/incarnation``, counted from 0).
    The base is ``tide.io/base-name`` if set, else ``metadata.generateName`` without its
    trailing dash, else the old name. The uid is a UUID-shaped hash of the same seed.
    ``spec.nodeName`` is cleared and the status is a fresh ``Pending``.
    """
    old_meta = metadata(pod)
    old_name = str(old_meta.get("name", ""))
    namespace = str(old_meta.get("namespace", ""))
    annotations = dict(old_meta.get("annotations") or {})
    annotations.pop(NOTICE_ANNOTATION, None)
    incarnation = _incarnation(annotations) + 1
    owner = controller_owner(pod)
    generate = old_meta.get("generateName")
    base = annotations.get(BASE_NAME_ANNOTATION) or (
        generate.rstrip("-") if isinstance(generate, str) and generate.strip("-") else old_name
    )
    seed = f"{namespace}/{base}/{old_name}/{old_meta.get('uid', '')}/{incarnation}"
    if owner is not None and owner.get("kind") == "StatefulSet":
        name = old_name
    else:
        name = f"{base}-{_suffix(seed)}"
        annotations[BASE_NAME_ANNOTATION] = str(base)
    annotations[INCARNATION_ANNOTATION] = str(incarnation)
    meta: JSON = {
        key: value
        for key, value in old_meta.items()
        if key
        not in (
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "resourceVersion",
            "managedFields",
            "uid",
            "name",
            "annotations",
            "creationTimestamp",
        )
    }
    digest = hashlib.blake2b(seed.encode(), digest_size=16).hexdigest()
    uid = f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:]}"
    meta.update(
        name=name,
        uid=uid,
        annotations=annotations,
        creationTimestamp=format_time(at),
    )
    spec = dict(spec_of(pod))
    spec.pop("nodeName", None)
    out: JSON = {
        key: value for key, value in pod.items() if key not in ("metadata", "spec", "status")
    }
    out.update(metadata=meta, spec=spec, status={"phase": "Pending"})
    return out


def taints_of(node: Mapping[str, Any]) -> list[JSON]:
    taints = spec_of(node).get("taints")
    return [dict(t) for t in taints if isinstance(t, Mapping)] if isinstance(taints, list) else []


def same_taint(left: Mapping[str, Any], right: Mapping[str, Any]) -> bool:
    """Kubernetes' ``Taint.MatchTaint``: same key and effect."""
    return left.get("key") == right.get("key") and left.get("effect") == right.get("effect")


def with_taints(node: Mapping[str, Any], taints: list[JSON]) -> JSON:
    out = dict(node)
    spec = _mutable(out, "spec")
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)
    return out
