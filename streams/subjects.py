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
* ``ns:NAMESPACE`` for a decision naming a namespace;
* for an eviction, ``mention:NAME`` for each other pod its evidence names (the preemptor it
  nominated a node for, the pods its pressure round planned), by bare name, and
  ``job:JOB`` for the job its evidence names (a TDM eviction's): ``tide audit why`` reads
  the evictions that name a pod or its job by them (:func:`mention_keys`), not by a scan.

Version 2 added the last two kinds of key and changed no other: an index of version 1
answers every key but those (:data:`READS`).
"""

from __future__ import annotations

from streams.events import DECISION_TYPES, EFFECT_TYPES, Event
from streams.payloads import as_decision, as_effect, as_node_sample, as_pod_sample, as_watch

#: the version of :func:`subjects_of`: a log indexed under another is indexed again
VERSION = 2
#: the versions whose index holds every key of :func:`subjects_of` but
#: :func:`mention_keys` (which only an index of :data:`VERSION` holds)
READS = (1, 2)


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
    if event.type == "decision.evict":
        keys += mention_keys(data.get("evidence"))
    return keys


def mention_keys(evidence: object) -> list[str]:
    """The ``mention:`` and ``job:`` keys of an eviction's ``evidence`` (the module
    docstring): a superset of the pods it names as preemptor or in a round's plan (by
    bare name) and the job it names; none when it holds no such thing."""
    if not isinstance(evidence, dict):
        return []
    names = [evidence.get("preemptor")]
    held = evidence.get("round")
    plan = held.get("plan") if isinstance(held, dict) else None
    if isinstance(plan, list):
        names += plan
    keys = sorted({mention_key(n) for n in names if isinstance(n, str) and n})
    job = evidence.get("job")
    if isinstance(job, str) and job:
        keys.append(job_key(job))
    return keys


def mention_key(pod: str) -> str:
    """The key of the evictions whose evidence names ``pod`` (by its bare name)."""
    return f"mention:{pod.rsplit('/', 1)[-1]}"


def job_key(job: str) -> str:
    """The key of the evictions whose evidence names job ``job``."""
    return f"job:{job}"


def pod_keys(pod: str) -> list[str]:
    """The keys of the records about ``pod`` (``namespace/name``, or a bare name: any
    namespace): every record whose pod key is ``pod`` or whose pod's name is."""
    return [f"pod:{pod}", f"podname:{pod}"]


def name_key(pod: str) -> str:
    """The key of the records about every pod named as ``pod`` is (``namespace/name`` or
    a bare name), in any namespace."""
    return f"podname:{pod.rsplit('/', 1)[-1]}"


def node_key(node: str) -> str:
    """The key of the records about node ``node``."""
    return f"node:{node}"


def zone_key(zone: str) -> str:
    """The key of the triggers of revocable zone ``zone``."""
    return f"zone:{zone}"


def namespace_key(namespace: str) -> str:
    """The key of the decisions naming ``namespace``."""
    return f"ns:{namespace}"
