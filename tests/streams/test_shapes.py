"""The compiled shape predicate accepts exactly what the explaining walk accepts.

``streams.shapes.check_shape`` answers with a predicate compiled once per shape and walks
the value again only to name the wrong path, so the two must agree on every value: a
value the predicate refuses but the walk accepts would pass silently, one the predicate
accepts but the walk refuses would let a malformed object onto the log.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from streams.shapes import POD, SHAPES, Shape, ShapeError, _compile, _explain, check_shape
from tests.builders import build_pod

_BASE = build_pod("ns", "p", node="n1", cpu="500m", memory="1Gi", owner_kind="ReplicaSet")


def _with(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    obj = copy.deepcopy(_BASE)
    target: Any = obj
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[path[-1]] = value
    return obj


CASES: list[tuple[str, dict[str, Any]]] = [
    ("valid", _BASE),
    ("labels-number", _with(("metadata", "labels"), {"app": 2})),
    ("labels-null-value", _with(("metadata", "labels"), {"app": None})),
    ("labels-list", _with(("metadata", "labels"), ["a"])),
    ("spec-string", _with(("spec",), "x")),
    ("containers-null-item", _with(("spec", "containers"), [None])),
    ("containers-object", _with(("spec", "containers"), {"a": 1})),
    ("priority-bool", _with(("spec", "priority"), True)),
    ("priority-float", _with(("spec", "priority"), 1.0)),
    ("priority-null", _with(("spec", "priority"), None)),
    ("bad-time", _with(("metadata", "creationTimestamp"), "yesterday")),
    ("time-number", _with(("metadata", "creationTimestamp"), 5)),
    ("owner-controller-string", _with(("metadata", "ownerReferences"), [{"controller": "yes"}])),
    ("unlisted-field-anything", _with(("spec", "whatever"), [1, {"x": None}])),
    ("requests-list", _with(("spec", "containers", 0, "resources"), {"requests": []})),
    ("many-unlisted-keys", _with(("metadata",), {f"k{i}": i for i in range(40)} | {"name": 3})),
]


def _explained(value: Any, shape: Shape) -> bool:
    try:
        _explain(value, shape)
    except ShapeError:
        return False
    return True


@pytest.mark.parametrize(("name", "obj"), CASES, ids=[c[0] for c in CASES])
def test_compiled_predicate_agrees_with_the_walk(name: str, obj: dict[str, Any]) -> None:
    assert _compile(POD)(obj) == _explained(obj, POD)


@pytest.mark.parametrize(("name", "obj"), CASES, ids=[c[0] for c in CASES])
def test_check_shape_raises_exactly_when_the_walk_does(name: str, obj: dict[str, Any]) -> None:
    try:
        _explain(obj, POD)
        expected = None
    except ShapeError as exc:
        expected = str(exc)
    try:
        check_shape(obj, POD)
        got = None
    except ShapeError as exc:
        got = str(exc)
    assert got == expected


@pytest.mark.parametrize("resource", sorted(SHAPES))
def test_every_resource_shape_compiles_and_accepts_an_empty_object(resource: str) -> None:
    shape, _kind = SHAPES[resource]
    assert _compile(shape)({}) is True
    assert _compile(shape)("x") is False
