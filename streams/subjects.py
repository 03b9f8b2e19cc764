"""What a record is about: the pod and the node it names, as index keys.

``tide audit timeline``, ``tide audit decisions --node/--namespace`` read only the records
about one pod, node or namespace. :func:`target_of` says which pod and node a record names
(the one definition the timeline matches on, moved here from ``replay.audit`` so the log's
writer can use it); :func:`subjects_of` turns that into the keys a log indexes each record
under when it is appended (``streams.backends.sqlite_subjects``). A reader asks for the
records under some keys (:func:`pod_keys`, :func:`node_key`, ...) and then applies its own
filter to them, so the index only has to hold *at least* the records the filter takes:

* ``pod:NS/NAME`` and ``podname:NAME`` for the pod key :func:`target_of` gives (a bare
  pod name asked for matches the second: the timeline's ``key.split("/", 1)[-1] == pod``);
* ``node:NAME`` for its node name;
* ``zone:ZONE`` for a ``trigger.fired`` of a zone (a node's timeline shows its zone's);
* ``ns:NAMESPACE`` for a decision naming a namespace.
"""

from __future__ import annotations

from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from streams.payloads import as_decision, as_effect, as_node_sample, as_pod_sample, as_watch

#: the version of :func:`subjects_of`: a log indexed under another is indexed again
VERSION = 1


def target_of(event: Event) -> tuple[str, str]:
    """(pod key or "", node name or "") an event is about."""
    if event.type in DECISION_TYPES:
        d = as_decision(event)
        pod = f"{d.get('namespace')}/{d.get('pod')}" if d.get("pod") else ""
        return pod, str(d.get("node") or "")
    if event.type == "k8s.watch":
        w = as_watch(event)
        obj = w.get("object") or {}
        meta = obj.get("metadata") or {}
        if w.get("resource") == "pods":
            return f"{meta.get('namespace')}/{meta.get('name')}", str(
                (obj.get("spec") or {}).get("nodeName") or ""
            )
        if w.get("resource") == "nodes":
            return "", str(meta.get("name") or "")
    if event.type == "metrics.node":
        return "", str((as_node_sample(event).get("metadata") or {}).get("name") or "")
    if event.type == "metrics.pod":
        meta = as_pod_sample(event).get("metadata") or {}
        return f"{meta.get('namespace')}/{meta.get('name')}", ""
    if event.type in EFFECT_TYPES:
        target = str(as_effect(event).get("target") or "")
        return (target, "") if "/" in target else ("", target)
    return "", ""


def subjects_of(event: Event) -> list[str]:
    """The index keys of ``event`` (see the module docstring); none for most triggers."""
    try:
        pod, node = target_of(event)
    except (AttributeError, TypeError):  # a payload of the wrong shape names nothing
        pod, node = "", ""
    keys = []
    if pod:
        keys += [f"pod:{pod}", f"podname:{pod.split('/', 1)[-1]}"]
    if node:
        keys.append(f"node:{node}")
    data = event.data if isinstance(event.data, dict) else {}
    if event.type == "trigger.fired" and data.get("zone"):
        keys.append(f"zone:{data.get('zone')}")
    if event.type in DECISION_TYPES and data.get("namespace") is not None:
        keys.append(f"ns:{data.get('namespace')}")
    return keys


def pod_keys(pod: str) -> list[str]:
    """The keys of the records about ``pod`` (``namespace/name``, or a bare name: any
    namespace): every record whose pod key is ``pod`` or whose pod's name is."""
    return [f"pod:{pod}", f"podname:{pod}"]


def node_key(node: str) -> str:
    """The key of the records about node ``node``."""
    return f"node:{node}"


def zone_key(zone: str) -> str:
    """The key of the triggers of revocable zone ``zone``."""
    return f"zone:{zone}"


def namespace_key(namespace: str) -> str:
    """The key of the decisions naming ``namespace``."""
    return f"ns:{namespace}"
