"""The JSON shapes of the Kubernetes fields tide's folds read, and the names Kubernetes
allows, checked before a watched object reaches the log.

A field of the wrong type inside an otherwise valid object (``"spec": "x"``, labels that
are a list) would otherwise crash a fold or be skipped by it; here it is caught with the
path that is wrong (``metadata.labels.app: a number, not a string``). Only the fields a
fold reads are described; anything else an object carries is left alone, and a missing
field is normal.

A shape is a Python type (``str``, ``int``, ``bool``, ``dict``, ``list``), :data:`TIME`
(an RFC 3339 string), a dict of shapes (an
object whose listed keys have those shapes), ``{str: shape}`` (a map of any keys), or
``[shape]`` (a list of them). ``None`` (JSON null) always passes: it means "absent".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from streams.codec import json_kind
from streams.events import parse_time

TIME = "time"
Shape = Any

_STRINGS = {str: str}
_SELECTOR = {
    "matchLabels": _STRINGS,
    "matchExpressions": [{"key": str, "operator": str, "values": [str]}],
}
_META = {
    "name": str,
    "namespace": str,
    "generateName": str,
    "uid": str,
    "resourceVersion": str,
    "labels": _STRINGS,
    "annotations": _STRINGS,
    "ownerReferences": [
        {"apiVersion": str, "kind": str, "name": str, "uid": str, "controller": bool}
    ],
    "creationTimestamp": TIME,
    "deletionTimestamp": TIME,
    "deletionGracePeriodSeconds": int,
}
_CONTAINER = {"name": str, "image": str, "resources": {"requests": dict, "limits": dict}}
_TOLERATION = {
    "key": str,
    "operator": str,
    "value": str,
    "effect": str,
    "tolerationSeconds": int,
}
_TERM = {"matchExpressions": [{"key": str, "operator": str, "values": [str]}]}
_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_TERM]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": int, "preference": _TERM}],
    },
    "podAffinity": dict,
    "podAntiAffinity": dict,
}
_CONTAINER_STATUS = {
    "name": str,
    "restartCount": int,
    "state": {str: dict},
    "lastState": {"terminated": {"reason": str, "exitCode": int, "finishedAt": TIME}},
}
POD: Shape = {
    "kind": str,
    "metadata": _META,
    "spec": {
        "containers": [_CONTAINER],
        "initContainers": [_CONTAINER],
        "overhead": dict,
        "nodeName": str,
        "schedulerName": str,
        "priority": int,
        "priorityClassName": str,
        "preemptionPolicy": str,
        "nodeSelector": _STRINGS,
        "tolerations": [_TOLERATION],
        "affinity": _AFFINITY,
        "restartPolicy": str,
        "terminationGracePeriodSeconds": int,
    },
    "status": {
        "phase": str,
        "qosClass": str,
        "nominatedNodeName": str,
        "startTime": TIME,
        "conditions": [{"type": str, "status": str}],
        "containerStatuses": [_CONTAINER_STATUS],
    },
}
NODE: Shape = {
    "kind": str,
    "metadata": _META,
    "spec": {
        "unschedulable": bool,
        "taints": [{"key": str, "value": str, "effect": str}],
    },
    "status": {
        "capacity": dict,
        "allocatable": dict,
        "conditions": [{"type": str, "status": str}],
    },
}
PODGROUP: Shape = {
    "kind": str,
    "metadata": _META,
    "spec": {
        "minMember": int,
        "minTaskMember": {str: int},
        "minResources": dict,
        "queue": str,
        "priorityClassName": str,
    },
    "status": {"phase": str},
}
QUEUE: Shape = {
    "kind": str,
    "metadata": _META,
    "spec": {
        "weight": int,
        "priority": int,
        "capability": dict,
        "deserved": dict,
        "guarantee": {"resource": dict},
        "reclaimable": bool,
    },
    "status": {"state": str},
}
PDB: Shape = {
    "kind": str,
    "metadata": _META,
    "spec": {"selector": _SELECTOR},
    "status": {"disruptionsAllowed": int},
}

#: resource -> (the shape of its objects, the ``kind`` its objects carry when they say)
SHAPES: dict[str, tuple[Shape, str]] = {
    "pods": (POD, "Pod"),
    "nodes": (NODE, "Node"),
    "podgroups": (PODGROUP, "PodGroup"),
    "queues": (QUEUE, "Queue"),
    "poddisruptionbudgets": (PDB, "PodDisruptionBudget"),
}

#: RFC 1123 subdomain (names of pods, nodes, podgroups, queues, budgets) and label
#: (namespaces), as Kubernetes' apimachinery validation defines them
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


class ShapeError(ValueError):
    """A field of the wrong JSON type; the message starts with its path."""


def name_problem(name: str, *, namespace: bool = False) -> str | None:
    """Why Kubernetes would refuse ``name`` as an object name (or a namespace), or None."""
    if namespace:
        if len(name) > 63 or not _LABEL.fullmatch(name):
            return f"namespace {name!r} is not a DNS label (lowercase a-z, 0-9, '-'; <= 63)"
        return None
    if len(name) > 253 or not _SUBDOMAIN.fullmatch(name):
        return f"name {name!r} is not a DNS subdomain (lowercase a-z, 0-9, '-', '.'; <= 253)"
    return None


def check_shape(value: Any, shape: Shape, path: str = "") -> None:
    """Raise :class:`ShapeError` naming the first path in ``value`` not of ``shape``.

    The check itself runs a predicate compiled once per shape (:func:`_compile`), which
    builds no paths; only a value that fails it is walked again to name the path.
    """
    check = _COMPILED.get(id(shape))
    if check is None:
        check = _COMPILED[id(shape)] = _compile(shape)
        _KEEP.append(shape)  # ids stay unique while the shape is cached
    if not check(value):
        _explain(value, shape, path)


Check = Callable[[Any], bool]
_COMPILED: dict[int, Check] = {}
_KEEP: list[Shape] = []


def _compile(shape: Shape) -> Check:
    """A predicate accepting exactly the values :func:`_explain` accepts."""
    if isinstance(shape, dict):
        if len(shape) == 1 and str in shape:
            inner = shape[str]
            if inner is str or inner is dict:
                return lambda v: (
                    v is None
                    or (type(v) is dict and all(type(x) is inner or x is None for x in v.values()))
                )
            each = _compile(inner)
            return lambda v: v is None or (type(v) is dict and all(map(each, v.values())))
        fields = {key: _compile(inner) for key, inner in shape.items()}
        listed = tuple(fields.items())
        known = fields.get

        def check_object(v: Any) -> bool:
            if v is None:
                return True
            if type(v) is not dict:
                return False
            if len(v) < len(listed):  # walk the smaller side
                for key, child in v.items():
                    check = known(key)
                    if check is not None and child is not None and not check(child):
                        return False
                return True
            get = v.get
            for key, check in listed:
                child = get(key)
                if child is not None and not check(child):
                    return False
            return True

        return check_object
    if isinstance(shape, list):
        item = _compile(shape[0])
        return lambda v: v is None or (type(v) is list and None not in v and all(map(item, v)))
    if shape is TIME:
        return _is_time
    kind = shape
    return lambda v: v is None or type(v) is kind


def _is_time(value: Any) -> bool:
    if value is None:
        return True
    if type(value) is not str:
        return False
    try:
        parse_time(value)
    except ValueError:
        return False
    return True


def _explain(value: Any, shape: Shape, path: str = "") -> None:
    """Walk ``value`` against ``shape``, raising :class:`ShapeError` at the first path
    that is wrong (the slow path of :func:`check_shape`)."""
    if value is None:
        return
    if isinstance(shape, dict):
        if type(value) is not dict:
            raise ShapeError(f"{path or 'object'}: {_what(value)}, not an object")
        if len(shape) == 1 and str in shape:
            inner = shape[str]
            for key in value:
                _explain(value[key], inner, _join(path, key))
            return
        for key, inner in shape.items():
            child = value.get(key)
            if child is not None:
                _explain(child, inner, _join(path, key))
        return
    if isinstance(shape, list):
        if type(value) is not list:
            raise ShapeError(f"{path}: {_what(value)}, not a list")
        for i, item in enumerate(value):
            if item is None:  # an element is never "absent"
                raise ShapeError(f"{path}[{i}]: null")
            _explain(item, shape[0], f"{path}[{i}]")
        return
    if shape is TIME:
        if type(value) is not str:
            raise ShapeError(f"{path}: {_what(value)}, not an RFC 3339 time")
        try:
            parse_time(value)
        except ValueError:
            raise ShapeError(f"{path}: {value!r} is not an RFC 3339 time") from None
        return
    if shape is int:
        if type(value) is not int:
            raise ShapeError(f"{path}: {_what(value)}, not an integer")
        return
    if type(value) is not shape:
        raise ShapeError(f"{path}: {_what(value)}, not {_NAMES[shape]}")


_NAMES = {str: "a string", bool: "a boolean", dict: "an object", list: "a list"}


def _what(value: Any) -> str:
    """``'2' is a string`` for a short scalar, else only its kind (``an object``)."""
    if isinstance(value, dict | list):
        return json_kind(value)
    text = repr(value)
    return f"{text} is {json_kind(value)}" if len(text) <= 40 else json_kind(value)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
