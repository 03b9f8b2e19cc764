"""Checks that a payload is one tide can fold, before it reaches the log.

Bad input is set aside with a reason instead of surfacing later as a crash deep inside
a projection, so the reason must name the object and the field
(``pods default/web-1: spec.containers[0].resources.requests.cpu: quantity '12x' is not
a valid Kubernetes quantity``). Only what tide reads is checked; a Kubernetes object
with missing optional fields is normal. This runs on every pod of a large import
(150,000 pods of ~6 KB), so it is hand-written dict walking and quantities are only
matched against the grammar and bounds (:func:`streams.quantity.quantity_problem`): no
models are built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from streams.codec import json_kind as _kind
from streams.events import JSON, parse_time
from streams.limits import LimitError, check_time
from streams.payloads import (
    DECISION_KINDS,
    EFFECT_REASONS,
    REASON_CODES,
    TAINT_EFFECTS,
    WATCH_EVENT_KINDS,
    WATCH_RESOURCE_NAMES,
)
from streams.quantity import quantity_problem
from streams.shapes import SHAPES, ShapeError, check_shape, name_problem

WATCH_RESOURCES = WATCH_RESOURCE_NAMES
WATCH_EVENTS = WATCH_EVENT_KINDS
#: the reason codes and taint effects a decision may carry (:mod:`streams.payloads`)
REASONS = REASON_CODES

_SINGULAR = {
    "nodes": "node",
    "pods": "pod",
    "podgroups": "podgroup",
    "queues": "queue",
    "poddisruptionbudgets": "poddisruptionbudget",
}
_NAMESPACED = frozenset({"pods", "podgroups", "poddisruptionbudgets"})


class ValidationError(ValueError):
    """A payload tide cannot fold; ``reason`` names the object and the field."""

    def __init__(self, reason: str) -> None:
        reason = one_line(reason)
        super().__init__(reason)
        self.reason = reason


def one_line(text: str) -> str:
    """``text`` with every character that is not printable escaped (``\\n``, ``\\x00``,
    ``\\u2028``): a reason names keys and values from the input, and it is shown on one line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


class _FieldError(Exception):
    """Raised inside an object's checks; the caller prefixes the object's name."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


#: per event type, a rule a higher layer adds (the configuration loader for
#: ``config.applied``) that the log layer cannot know; it raises ValueError with the reason
Extra = Mapping[str, Callable[[JSON], None]]


def validate(type_: str, data: JSON, *, extra: Extra | None = None) -> None:
    """Raise :class:`ValidationError` unless ``data`` is a valid payload of ``type_``
    (and passes ``extra``'s rule for ``type_``, when given)."""
    check = _CHECKS.get(type_)
    if check is None:
        raise ValidationError(f"unknown event type {type_!r}")
    if not isinstance(data, dict):
        raise ValidationError(f"{type_}: data is {_kind(data)}, not an object")
    check(data)
    rule = extra.get(type_) if extra else None
    if rule is not None:
        try:
            rule(data)
        except ValidationError:
            raise
        except ValueError as exc:
            raise ValidationError(f"{type_}: {exc}") from exc


# -- k8s.watch -----------------------------------------------------------------------


def _watch(data: JSON) -> None:
    resource = data.get("resource")
    if not isinstance(resource, str) or resource not in WATCH_RESOURCES:
        raise ValidationError(
            f"k8s.watch: resource {resource!r} is not one of {', '.join(sorted(WATCH_RESOURCES))}"
        )
    event = data.get("event")
    if not isinstance(event, str) or event not in WATCH_EVENTS:
        raise ValidationError(
            f"k8s.watch: event {event!r} is not one of {', '.join(sorted(WATCH_EVENTS))}"
        )
    obj = data.get("object")
    if not isinstance(obj, dict):
        raise ValidationError(f"k8s.watch {resource}: object is {_kind(obj)}, not an object")
    if event == "BOOKMARK":  # only metadata.resourceVersion is meaningful
        return
    label = _object_label(resource, obj)
    shape, kind = SHAPES[resource]
    declared = obj.get("kind")
    if declared is not None and declared != kind:
        raise ValidationError(f"{resource} {label}: kind {declared!r} is not {kind!r}")
    try:
        _OBJECT_CHECKS[resource](obj)
        check_shape(obj, shape)
    except ShapeError as exc:
        raise ValidationError(f"{resource} {label}: {exc}") from None
    except _FieldError as exc:
        raise ValidationError(f"{resource} {label}: {exc}") from None


def _object_label(resource: str, obj: JSON) -> str:
    """``ns/name`` (or ``name``), or a ValidationError when the object cannot be named."""
    meta = obj.get("metadata")
    singular = _SINGULAR[resource]
    if not isinstance(meta, dict):
        raise ValidationError(f"{singular} without metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ValidationError(f"{singular} without metadata.name")
    problem = name_problem(name)
    if problem is not None:
        raise ValidationError(f"{singular} {name!r}: metadata.{problem}")
    if resource not in _NAMESPACED:
        return name
    namespace = meta.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        raise ValidationError(f"{singular} {name} without metadata.namespace")
    problem = name_problem(namespace, namespace=True)
    if problem is not None:
        raise ValidationError(f"{singular} {name}: metadata.{problem}")
    return f"{namespace}/{name}"


def _pod(obj: JSON) -> None:
    spec = _dict(obj, "spec", "spec")
    if spec is None:
        return
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        if containers is None:
            continue
        if not isinstance(containers, list):
            raise _FieldError(f"spec.{key}", f"{_kind(containers)}, not a list")
        for i, container in enumerate(containers):
            path = f"spec.{key}[{i}]"
            if not isinstance(container, dict):
                raise _FieldError(path, f"{_kind(container)}, not an object")
            resources = _dict(container, "resources", f"{path}.resources")
            if resources is not None:
                _quantities(resources, "requests", f"{path}.resources.requests")
                _quantities(resources, "limits", f"{path}.resources.limits")
    _quantities(spec, "overhead", "spec.overhead")


def _node(obj: JSON) -> None:
    status = _dict(obj, "status", "status")
    if status is not None:
        _quantities(status, "capacity", "status.capacity")
        _quantities(status, "allocatable", "status.allocatable")


def _queue(obj: JSON) -> None:
    spec = _dict(obj, "spec", "spec")
    if spec is None:
        return
    _quantities(spec, "capability", "spec.capability")
    _quantities(spec, "deserved", "spec.deserved")
    guarantee = _dict(spec, "guarantee", "spec.guarantee")
    if guarantee is not None:
        _quantities(guarantee, "resource", "spec.guarantee.resource")


def _podgroup(obj: JSON) -> None:
    spec = _dict(obj, "spec", "spec")
    if spec is None:
        return
    min_member = spec.get("minMember")
    if min_member is not None and (type(min_member) is not int or min_member < 0):
        raise _FieldError("spec.minMember", f"{min_member!r} is not an integer >= 0")
    _quantities(spec, "minResources", "spec.minResources")


def _pdb(obj: JSON) -> None:
    """A policy/v1 PodDisruptionBudget: at most one of minAvailable / maxUnavailable, each
    an integer >= 0 or a percentage (kubernetes/kubernetes pkg/apis/policy/validation
    ``ValidatePodDisruptionBudgetSpec``); a selector object; disruptionsAllowed >= 0."""
    spec = _dict(obj, "spec", "spec")
    if spec is not None:
        bounds = [key for key in ("minAvailable", "maxUnavailable") if spec.get(key) is not None]
        if len(bounds) > 1:
            raise _FieldError("spec", "minAvailable and maxUnavailable cannot both be set")
        for key in bounds:
            _int_or_percent(spec[key], f"spec.{key}")
        _dict(spec, "selector", "spec.selector")
    status = _dict(obj, "status", "status")
    allowed = status.get("disruptionsAllowed") if status is not None else None
    if allowed is not None and (type(allowed) is not int or allowed < 0):
        raise _FieldError("status.disruptionsAllowed", f"{allowed!r} is not an integer >= 0")


def _int_or_percent(value: Any, path: str) -> None:
    if type(value) is int and value >= 0:
        return
    percent = isinstance(value, str) and value.endswith("%") and value[:-1].isdigit()
    if percent and int(value[:-1]) <= 100:
        return
    raise _FieldError(path, f"{value!r} is not an integer >= 0 or a percentage")


_OBJECT_CHECKS: dict[str, Callable[[JSON], None]] = {
    "poddisruptionbudgets": _pdb,
    "pods": _pod,
    "nodes": _node,
    "queues": _queue,
    "podgroups": _podgroup,
}


# -- metrics ------------------------------------------------------------------------


def _node_metrics(data: JSON) -> None:
    name = _metrics_name(data, "metrics.node", namespaced=False)
    try:
        _required_quantities(data, "usage", "usage")
    except _FieldError as exc:
        raise ValidationError(f"metrics.node {name}: {exc}") from None


def _pod_metrics(data: JSON) -> None:
    name = _metrics_name(data, "metrics.pod", namespaced=True)
    try:
        containers = data.get("containers")
        if not isinstance(containers, list):
            raise _FieldError("containers", f"{_kind(containers)}, not a list")
        for i, container in enumerate(containers):
            if not isinstance(container, dict):
                raise _FieldError(f"containers[{i}]", f"{_kind(container)}, not an object")
            _required_quantities(container, "usage", f"containers[{i}].usage")
    except _FieldError as exc:
        raise ValidationError(f"metrics.pod {name}: {exc}") from None


def _metrics_name(data: JSON, type_: str, *, namespaced: bool) -> str:
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise ValidationError(f"{type_} without metadata.name")
    if not namespaced:
        return name
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    if not isinstance(namespace, str) or not namespace:
        raise ValidationError(f"{type_} {name} without metadata.namespace")
    return f"{namespace}/{name}"


# -- tide's own records --------------------------------------------------------------


def _config(data: JSON) -> None:
    _require(data, "config.applied", config=dict, source=str)
    level = data.get("behaviour")
    if level is not None and (not isinstance(level, int) or isinstance(level, bool) or level < 1):
        raise ValidationError(f"config.applied: 'behaviour' is {level!r}, not a positive integer")


def _trigger(data: JSON) -> None:
    # ``kind`` is not held to :data:`streams.payloads.TriggerKind`: logs written by other
    # tools import with kinds of their own, and no fold indexes a table by it
    _require(data, "trigger.fired", trigger=str, kind=str, scheduled=str)
    zone = data.get("zone")
    if zone is not None and not isinstance(zone, str):
        raise ValidationError(f"trigger.fired: 'zone' is {_kind(zone)}, not a string")
    try:
        check_time(parse_time(data["scheduled"]), "'scheduled'")
    except LimitError as exc:
        raise ValidationError(f"trigger.fired: {exc.reason}") from None
    except ValueError:
        raise ValidationError(
            f"trigger.fired: 'scheduled' {data['scheduled']!r} is not an RFC 3339 time"
        ) from None


def _seal(data: JSON) -> None:
    _require(data, "log.sealed", head=str)


def _decision(kind: str, *, pod: bool) -> Callable[[JSON], None]:
    """The check of ``decision.<kind>``: the fields of its payload type, ``kind`` equal
    to the record's type, a reason code of the vocabulary, and a valid taint."""
    if kind not in DECISION_KINDS:
        raise ValueError(f"unknown decision kind {kind!r}")
    type_ = f"decision.{kind}"

    def check(data: JSON) -> None:
        if pod:
            _require(data, type_, kind=str, namespace=str, pod=str, uid=str, node=str)
        else:
            _require(data, type_, kind=str, node=str, taint=dict)
        _require(data, type_, reason=str, source=str, evidence=dict)
        if data["kind"] != kind:
            raise ValidationError(f"{type_}: 'kind' is {data['kind']!r}, expected {kind!r}")
        if data["reason"] not in REASON_CODES:
            raise ValidationError(f"{type_}: unknown reason {data['reason']!r}")
        if not pod:
            _taint(type_, data["taint"])

    return check


def _taint(type_: str, taint: JSON) -> None:
    _require(taint, f"{type_}: taint", key=str, effect=str)
    value = taint.get("value")
    if value is not None and not isinstance(value, str):
        raise ValidationError(f"{type_}: taint.value is {_kind(value)}, not a string")
    if taint["effect"] not in TAINT_EFFECTS:
        raise ValidationError(f"{type_}: taint.effect {taint['effect']!r} is not a taint effect")


def _effect(failed: bool, type_: str = "") -> Callable[[JSON], None]:
    type_ = type_ or ("effect.failed" if failed else "effect.applied")

    def check(data: JSON) -> None:
        # ``kind`` names the decision's kind when tide writes it; not held to the vocabulary
        _require(data, type_, decision=str, kind=str, target=str)
        error = data.get("error")
        if failed and error is None:
            raise ValidationError(f"{type_}: missing 'error'")
        if error is not None and not isinstance(error, str):
            raise ValidationError(f"{type_}: 'error' is {_kind(error)}, not a string")
        reason = data.get("reason")
        if reason is not None and (
            not isinstance(reason, str) or reason not in EFFECT_REASONS[type_]
        ):
            allowed = ", ".join(sorted(EFFECT_REASONS[type_])) or "none"
            raise ValidationError(f"{type_}: unknown reason {reason!r} (allowed: {allowed})")

    return check


_CHECKS: dict[str, Callable[[JSON], None]] = {
    "k8s.watch": _watch,
    "metrics.node": _node_metrics,
    "metrics.pod": _pod_metrics,
    "config.applied": _config,
    "trigger.fired": _trigger,
    "decision.evict": _decision("evict", pod=True),
    "decision.bind": _decision("bind", pod=True),
    "decision.taint": _decision("taint", pod=False),
    "decision.untaint": _decision("untaint", pod=False),
    "effect.applied": _effect(failed=False),
    "effect.failed": _effect(failed=True),
    # the live effector's refusals (dry run, a guard rail, the pod already gone): why in error
    "effect.skipped": _effect(failed=True, type_="effect.skipped"),
    "log.sealed": _seal,
}


# -- helpers -------------------------------------------------------------------------


_TYPES: dict[type, str] = {dict: "an object", str: "a string"}


def _require(data: JSON, where: str, **fields: type) -> None:
    for key, expected in fields.items():
        value = data.get(key)
        if value is None:
            raise ValidationError(f"{where}: missing {key!r}")
        if not isinstance(value, expected):
            raise ValidationError(f"{where}: {key!r} is {_kind(value)}, not {_TYPES[expected]}")


def _dict(parent: JSON, key: str, path: str) -> JSON | None:
    value = parent.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise _FieldError(path, f"{_kind(value)}, not an object")


#: quantity strings already found valid (a recording repeats a few hundred spellings)
_GOOD_QUANTITIES: set[str] = set()


def _quantities(parent: JSON, key: str, path: str) -> None:
    """Check ``parent[key]``, a ResourceList, when present."""
    values = parent.get(key)
    if values is None:
        return
    if not isinstance(values, dict):
        raise _FieldError(path, f"{_kind(values)}, not an object")
    good = _GOOD_QUANTITIES
    for name, value in values.items():
        if type(value) is str and value in good:
            continue
        _quantity(value, f"{path}.{name}")


def _required_quantities(parent: JSON, key: str, path: str) -> None:
    if parent.get(key) is None:
        raise _FieldError(path, "missing")
    _quantities(parent, key, path)


def _quantity(value: Any, path: str) -> None:
    """A quantity of the grammar, within bounds, and not negative (Kubernetes refuses
    negative requests, limits and capacities)."""
    problem = quantity_problem(value)
    if problem is None and type(value) is str:
        if len(_GOOD_QUANTITIES) >= 1 << 14:
            _GOOD_QUANTITIES.clear()
        _GOOD_QUANTITIES.add(value)
    if problem is not None:
        if not isinstance(value, str | float | int) or isinstance(value, bool):
            raise _FieldError(path, f"{_kind(value)} is not a Kubernetes quantity")
        raise _FieldError(path, problem)
