"""Scenario YAML → recording: a small language for describing a co-located cluster.

A scenario names nodes, queues, workloads (replicas with requests, QoS, priority,
annotations, an optional PodGroup, either placed on nodes or left Pending for the
scheduler) and usage profiles (piecewise-linear, sampled at a fixed interval), and
expands to the ``k8s.watch`` / ``metrics.*`` events of a recording. Everything is
deterministic: no clock, no randomness. Errors name the key and the value.

Example::

    start: "2026-11-21T06:00:00Z"
    until: "+24h"
    nodes:
      - {name: shared, count: 2, cpu: "32", memory: 128Gi,
         labels: {volcano.sh/revocable-zone: rz1}}
    workloads:
      - {name: batch, replicas: 3, cpu: "4", memory: 8Gi, qos: BE,
         annotations: {volcano.sh/revocable-zone: "*"}, nodes: [shared-0]}
    usage:
      - node: shared-0
        every: 60s
        points: [["+0m", {cpu: 30%, memory: 40%}], ["+8h", {cpu: 96%}]]
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.policy.framework.durations import parse_duration
from controller.policy.framework.safe_yaml import YAMLLimitError, load_yaml
from controller.simulate.generated import generated_problem
from streams.events import Event, format_time, make_event, parse_time
from streams.payloads import RawObject
from streams.quantity import QuantityError, parse_quantity

JSON = RawObject  # a Kubernetes object as raw JSON
_OFFSET = re.compile(r"^\+(.+)$")
#: the shortest interval a usage profile is sampled at (metrics-server scrapes every
#: 15 s or more; a second is already finer than any cluster reports)
MIN_EVERY = timedelta(seconds=1)
#: the most samples one usage profile expands to (a year of one node every minute is
#: ~526,000): a scenario that would write more is an error naming the key
MAX_SAMPLES = 1_000_000


class ScenarioError(ValueError):
    """A scenario value that cannot be used; the message names the key and the value."""


def _time(value: object, start: datetime, key: str) -> datetime:
    if isinstance(value, datetime):
        return value
    text = str(value)
    match = _OFFSET.match(text)
    try:
        if match:
            return start + parse_duration(match.group(1))
        return parse_time(text)
    except ValueError as exc:
        raise ScenarioError(f"{key}: {value!r}: {exc}") from exc


def _every(usage: Mapping[str, Any], key: str) -> timedelta:
    """A usage profile's sampling interval (``every``, 60s by default): at least
    :data:`MIN_EVERY`, as ``sessionTick`` has a floor, so a typo (``1us``) is an error
    naming the key, not a run that never ends."""
    given = usage.get("every", "60s")
    every = parse_duration(str(given))
    if every <= timedelta(0):
        raise ScenarioError(f"{key}.every: {given!r}: must be positive")
    if every < MIN_EVERY:
        raise ScenarioError(
            f"{key}.every: {given!r}: must be at least {MIN_EVERY.total_seconds():g}s"
        )
    return every


def _quantity(value: object, key: str) -> Fraction:
    try:
        return parse_quantity(str(value))
    except QuantityError as exc:
        raise ScenarioError(f"{key}: {value!r}: {exc}") from exc


def _node(spec: Mapping[str, Any], name: str) -> JSON:
    alloc = {
        "cpu": str(spec.get("cpu", "16")),
        "memory": str(spec.get("memory", "64Gi")),
        "pods": str(spec.get("pods", "110")),
    }
    node: JSON = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": f"node-{name}", "labels": dict(spec.get("labels") or {})},
        "spec": {},
        "status": {
            "allocatable": alloc,
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    if spec.get("taints"):
        node["spec"]["taints"] = list(spec["taints"])
    return node


def _pod(w: Mapping[str, Any], index: int, created: datetime, node: str | None) -> JSON:
    name = f"{w['name']}-{index}"
    namespace = str(w.get("namespace", "default"))
    requests = {k: str(w[k]) for k in ("cpu", "memory") if w.get(k) is not None}
    labels = dict(w.get("labels") or {})
    labels.setdefault("app", str(w["name"]))
    if w.get("qos"):
        labels["koordinator.sh/qosClass"] = str(w["qos"])
    annotations = {str(k): str(v) for k, v in (w.get("annotations") or {}).items()}
    if w.get("podgroup") is not None:
        annotations["scheduling.k8s.io/group-name"] = str(w["name"])
    owner = str(w.get("owner", "ReplicaSet"))
    meta: JSON = {
        "name": name,
        "namespace": namespace,
        "uid": f"{namespace}-{name}",
        "creationTimestamp": format_time(created),
        "labels": labels,
        "annotations": annotations,
    }
    if owner != "none":
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner,
                "name": str(w["name"]),
                "uid": f"{owner.lower()}-{namespace}-{w['name']}",
                "controller": True,
            }
        ]
    container: JSON = {"name": "main", "image": str(w.get("image", "registry.local/app:1"))}
    if requests:
        container["resources"] = {"requests": requests}
    spec: JSON = {
        "schedulerName": str(w.get("schedulerName", "volcano")),
        "containers": [container],
        "terminationGracePeriodSeconds": int(w.get("grace", 30)),
    }
    if w.get("priority") is not None:
        spec["priority"] = int(w["priority"])
    status: JSON = {"phase": "Pending"}
    if node:
        spec["nodeName"] = node
        status = {"phase": "Running", "startTime": format_time(created)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _watch(resource: str, obj: JSON, at: datetime) -> Event:
    return make_event("k8s.watch", at, {"resource": resource, "event": "ADDED", "object": obj})


def _interpolate(
    points: Sequence[tuple[datetime, Mapping[str, object]]], when: datetime, dim: str
) -> Any:
    """Piecewise-linear value of ``dim`` at ``when`` (each point may set some dims)."""
    known = [(t, p[dim]) for t, p in points if dim in p]
    if not known:
        return None
    if when <= known[0][0]:
        return known[0][1]
    for (t0, v0), (t1, v1) in itertools.pairwise(known):
        if t0 <= when <= t1:
            if (
                isinstance(v0, str)
                and v0.endswith("%")
                and isinstance(v1, str)
                and v1.endswith("%")
            ):
                a, b = Fraction(v0[:-1]), Fraction(v1[:-1])
                frac = Fraction(int((when - t0).total_seconds()), int((t1 - t0).total_seconds()))
                return f"{float(a + (b - a) * frac):.4f}%"
            a, b = parse_quantity(str(v0)), parse_quantity(str(v1))
            frac = Fraction(int((when - t0).total_seconds()), int((t1 - t0).total_seconds()))
            return a + (b - a) * frac
    return known[-1][1]


def _usage_value(value: Any, capacity: Fraction, dim: str) -> str:
    if isinstance(value, str) and value.endswith("%"):
        amount = capacity * Fraction(value[:-1]) / 100
    else:
        amount = value if isinstance(value, Fraction) else parse_quantity(str(value))
    if dim == "cpu":
        return f"{round(amount * 1000)}m"
    return f"{round(amount / 1024)}Ki"


def expand(doc: Mapping[str, Any]) -> tuple[list[Event], datetime, datetime | None]:
    """The events a scenario describes, its start, and its end (``until``) if given."""
    if "start" not in doc:
        raise ScenarioError("start: missing (an RFC 3339 time, e.g. 2026-11-21T06:00:00Z)")
    start = _time(doc["start"], datetime.min, "start")
    until = _time(doc["until"], start, "until") if doc.get("until") else None
    events: list[Event] = []
    capacity: dict[str, tuple[Fraction, Fraction]] = {}
    for i, spec in enumerate(doc.get("nodes") or []):
        count = int(spec.get("count", 1))
        names = (
            [spec["name"]]
            if count == 1 and not spec.get("indexed")
            else [f"{spec['name']}-{k}" for k in range(count)]
        )
        for name in names:
            node = _node(spec, name)
            capacity[name] = (
                _quantity(node["status"]["capacity"]["cpu"], f"nodes[{i}].cpu"),
                _quantity(node["status"]["capacity"]["memory"], f"nodes[{i}].memory"),
            )
            events.append(_watch("nodes", node, start))
    for q in doc.get("queues") or [{"name": "default"}]:
        queue = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {
                "name": q["name"],
                "uid": f"queue-{q['name']}",
                "creationTimestamp": format_time(start),
            },
            "spec": {
                "weight": int(q.get("weight", 1)),
                **({"capability": q["capability"]} if q.get("capability") else {}),
            },
            "status": {"state": "Open"},
        }
        events.append(_watch("queues", queue, start))
    for i, w in enumerate(doc.get("workloads") or []):
        if "name" not in w:
            raise ScenarioError(f"workloads[{i}].name: missing")
        created = _time(w.get("at", "+0s"), start, f"workloads[{i}].at")
        ns = str(w.get("namespace", "default"))
        if w.get("podgroup") is not None:
            pg = w["podgroup"] or {}
            events.append(
                _watch(
                    "podgroups",
                    {
                        "apiVersion": "scheduling.volcano.sh/v1beta1",
                        "kind": "PodGroup",
                        "metadata": {
                            "name": w["name"],
                            "namespace": ns,
                            "uid": f"pg-{ns}-{w['name']}",
                            "creationTimestamp": format_time(created),
                            "annotations": {
                                str(k): str(v) for k, v in (pg.get("annotations") or {}).items()
                            },
                        },
                        "spec": {
                            "minMember": int(pg.get("minMember", 1)),
                            "queue": str(pg.get("queue", "default")),
                        },
                        "status": {"phase": "Running"},
                    },
                    created,
                )
            )
        placed = list(w.get("nodes") or [])
        for k in range(int(w.get("replicas", 1))):
            target = str(placed[k % len(placed)]) if placed else None
            if target is not None and target not in capacity:
                raise ScenarioError(f"workloads[{i}].nodes: {target!r}: no such node")
            events.append(_watch("pods", _pod(w, k, created, target), created))
    for i, u in enumerate(doc.get("usage") or []):
        key = f"usage[{i}]"
        every = _every(u, key)
        points = [(_time(t, start, f"{key}.points"), dict(v)) for t, v in u.get("points") or []]
        if not points:
            raise ScenarioError(f"{key}.points: empty")
        end = (
            _time(u["until"], start, f"{key}.until") if u.get("until") else (until or points[-1][0])
        )
        # frozenAt: from then on metrics-server re-serves the point it had (its timestamp
        # and values stop), as for a node whose kubelet stopped answering
        frozen = _time(u["frozenAt"], start, f"{key}.frozenAt") if u.get("frozenAt") else None
        when = points[0][0]
        if (end - when) // every >= MAX_SAMPLES:
            raise ScenarioError(
                f"{key}.every: {u.get('every', '60s')!r}: {(end - when) // every + 1:,} samples "
                f"from {format_time(when)} to {format_time(end)}; at most {MAX_SAMPLES:,}"
            )
        while when <= end:
            measured = when if frozen is None or when < frozen else frozen
            if "node" in u:
                name = str(u["node"])
                if name not in capacity:
                    raise ScenarioError(f"{key}.node: {name!r}: no such node")
                cpu_cap, mem_cap = capacity[name]
                usage = {
                    "cpu": _usage_value(
                        _interpolate(points, measured, "cpu") or "0", cpu_cap, "cpu"
                    ),
                    "memory": _usage_value(
                        _interpolate(points, measured, "memory") or "0", mem_cap, "memory"
                    ),
                }
                events.append(
                    make_event(
                        "metrics.node",
                        when,
                        {
                            "apiVersion": "metrics.k8s.io/v1beta1",
                            "kind": "NodeMetrics",
                            "metadata": {"name": name},
                            "timestamp": format_time(measured),
                            "window": "30s",
                            "usage": usage,
                        },
                    )
                )
            else:
                ns, _, name = str(u["pod"]).rpartition("/")
                usage = {
                    dim: _usage_value(_interpolate(points, when, dim) or "0", Fraction(0), dim)
                    for dim in ("cpu", "memory")
                }
                events.append(
                    make_event(
                        "metrics.pod",
                        when,
                        {
                            "apiVersion": "metrics.k8s.io/v1beta1",
                            "kind": "PodMetrics",
                            "metadata": {"name": name, "namespace": ns or "default"},
                            "timestamp": format_time(when),
                            "window": "30s",
                            "containers": [{"name": "main", "usage": usage}],
                        },
                    )
                )
            when += every
    events.sort(key=lambda e: e.at)
    return events, start, until


def frees_usage(doc: Mapping[str, Any]) -> bool:
    """The scenario's ``evictionFreesUsage`` (default false): whether the simulated node
    samples show the usage freed by pressure evictions (see controller/simulate/relief.py)."""
    value = doc.get("evictionFreesUsage", False)
    if not isinstance(value, bool):
        raise ScenarioError(f"evictionFreesUsage: {value!r}: expected true or false")
    return value


def load_scenario(path: Path) -> tuple[list[Event], datetime, datetime | None]:
    """Read and expand a scenario file."""
    doc = read_scenario(path)
    try:
        events, start, until = expand(doc)
    except ScenarioError as exc:
        raise ScenarioError(f"{path}: {exc}") from None
    except (TypeError, AttributeError, KeyError, ValueError, ArithmeticError) as exc:
        # a value of the wrong type that no check above named: still one line
        first = (str(exc).strip().splitlines() or [""])[0]
        raise ScenarioError(
            f"{path}: a value has the wrong type ({type(exc).__name__}: {first})"
        ) from None
    problem = generated_problem(events)
    if problem is not None:
        raise ScenarioError(f"{path}: {problem}")
    return events, start, until


def read_scenario(path: Path) -> Mapping[str, Any]:
    """The scenario document, read with :func:`controller.policy.framework.safe_yaml.load_yaml`."""
    try:
        doc = load_yaml(path)
    except OSError as exc:
        raise ScenarioError(f"{path}: {exc.strerror or exc}") from None
    except YAMLLimitError as exc:
        raise ScenarioError(str(exc)) from None
    if not isinstance(doc, Mapping):
        raise ScenarioError(f"{path}: a scenario is a mapping with start, nodes, workloads")
    return doc


def is_scenario(path: Path) -> bool:
    """A ``.yaml``/``.yml`` file is a scenario; anything else is a JSON Lines recording."""
    return path.suffix in (".yaml", ".yml")
