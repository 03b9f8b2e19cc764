"""Payloads are read through their types, and a ``dict[str, Any]`` says what it holds.

Every payload tide writes or reads has a TypedDict in :mod:`streams.payloads`, reached
through its accessor (``as_evict(event)``, ``as_watch(event)``…), so mypy checks every key
a reader asks for. This test counts what would undo that, per file, in the packages:

* a bare ``dict[str, Any]`` (an annotation that does not say what the dict is: a
  Kubernetes object is a :data:`~streams.payloads.RawObject`, a decision's evidence an
  :data:`~streams.payloads.EvidenceDict`, any other JSON document a
  :data:`~streams.events.JSON`);
* a payload read by string key on an untyped ``event.data`` (``x.data["k"]``,
  ``x.data.get("k")``), or ``event.data`` bound to a name, which the reads then go through;
* a ``cast(Mapping[str, Any], …)``: a payload or its evidence made untyped again, so its
  reads escape mypy (a decision's evidence has its TypedDict and accessor in
  :mod:`streams.evidence`; shown as a whole it is :func:`~streams.evidence.evidence_of`).
  The one exception is the hot paths' typed binding without a call per record::

      if TYPE_CHECKING:
          data = as_watch(event)
      else:
          data = event.data

Only the places in :data:`ALLOWED` (each with its reason) may hold any, and exactly as
many as listed, so the number cannot creep back.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("controller", "projections", "replay", "streams")

#: path -> (bare ``dict[str, Any]``, untyped payload reads) allowed there, and why
ALLOWED: dict[str, tuple[int, int, str]] = {
    "streams/events.py": (1, 0, "defines JSON, the type of Event.data (any JSON object)"),
    "streams/payloads.py": (2, 0, "defines RawObject and RawConfig"),
    "streams/evidence.py": (1, 0, "defines EvidenceDict"),
    "streams/backends/kafka_client.py": (
        1,
        0,
        "defines ClientOptions: aiokafka takes its client options as **kwargs",
    ),
    "controller/policy/framework/simulate.py": (
        1,
        0,
        "plugin states by plugin name, each of the type its own accessor names (not JSON)",
    ),
    "projections/preemptindex.py": (
        1,
        0,
        "a memo of values whose types the callers that derive them choose (not JSON)",
    ),
    "controller/policy/framework/view_clones.py": (
        1,
        0,
        "the globals of the exec'd cloner (exec takes a dict[str, Any]): not a payload",
    ),
    "controller/policy/step.py": (
        0,
        1,
        "a pressure Followup's own data, a FollowupData (typed): not an Event's payload",
    ),
}


def _is_bare_dict(node: ast.AST) -> bool:
    """``dict[str, Any]``."""
    if not isinstance(node, ast.Subscript):
        return False
    if not (isinstance(node.value, ast.Name) and node.value.id == "dict"):
        return False
    args = node.slice
    return (
        isinstance(args, ast.Tuple)
        and len(args.elts) == 2
        and isinstance(args.elts[0], ast.Name)
        and args.elts[0].id == "str"
        and isinstance(args.elts[1], ast.Name)
        and args.elts[1].id == "Any"
    )


def _is_untyped_mapping(node: ast.AST) -> bool:
    """``Mapping[str, Any]`` (``Mapping`` by name or as an attribute of its module)."""
    if not isinstance(node, ast.Subscript):
        return False
    value = node.value
    name = value.id if isinstance(value, ast.Name) else getattr(value, "attr", None)
    args = node.slice
    return (
        name == "Mapping"
        and isinstance(args, ast.Tuple)
        and len(args.elts) == 2
        and isinstance(args.elts[0], ast.Name)
        and args.elts[0].id == "str"
        and isinstance(args.elts[1], ast.Name)
        and args.elts[1].id == "Any"
    )


def _is_untyping_cast(node: ast.AST) -> bool:
    """``cast(Mapping[str, Any], x)`` (or ``typing.cast``)."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name == "cast" and _is_untyped_mapping(node.args[0])


def _is_data(node: ast.AST) -> bool:
    """``<something>.data``."""
    return isinstance(node, ast.Attribute) and node.attr == "data"


def _typed_bindings(tree: ast.AST) -> set[int]:
    """The ids of ``x = event.data`` in the ``else`` of an ``if TYPE_CHECKING:`` whose
    branch binds the same name through an accessor (the typed binding without a call)."""
    ok: set[int] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Name)):
            continue
        if node.test.id != "TYPE_CHECKING" or len(node.body) != 1 or len(node.orelse) != 1:
            continue
        typed, raw = node.body[0], node.orelse[0]
        if (
            isinstance(typed, ast.Assign)
            and isinstance(raw, ast.Assign)
            and isinstance(typed.value, ast.Call)
            and isinstance(typed.value.func, ast.Name)
            and typed.value.func.id.startswith("as_")
            and ast.dump(typed.targets[0]) == ast.dump(raw.targets[0])
            and _is_data(raw.value)
        ):
            ok.add(id(raw))
    return ok


def count(path: Path) -> tuple[int, int]:
    """``(bare dict[str, Any], untyped payload reads)`` in the module at ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    typed = _typed_bindings(tree)
    bare = reads = 0
    for node in ast.walk(tree):
        if _is_bare_dict(node):
            bare += 1
        elif isinstance(node, ast.Subscript) and _is_data(node.value):
            reads += 1  # x.data["key"]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _is_data(node.func.value)
        ):
            reads += 1  # x.data.get("key")
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and _is_data(node.value)
            and id(node) not in typed
        ):
            reads += 1  # data = x.data, then data["key"]
        elif _is_untyping_cast(node):
            reads += 1  # cast(Mapping[str, Any], d.get("evidence") or {})
    return bare, reads


def counts() -> dict[str, tuple[int, int]]:
    """Every module of the packages with a non-zero count."""
    found: dict[str, tuple[int, int]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            counted = count(path)
            if counted != (0, 0):
                found[path.relative_to(ROOT).as_posix()] = counted
    return found


def _unexpected(found: dict[str, tuple[int, int]]) -> dict[str, str]:
    """The files whose counts are not what :data:`ALLOWED` says."""
    wrong: dict[str, str] = {}
    for path in sorted(set(found) | set(ALLOWED)):
        n = found.get(path, (0, 0))
        allowed = ALLOWED[path][:2] if path in ALLOWED else (0, 0)
        if n != allowed:  # fewer: take the allowance down too, so it cannot creep back
            wrong[path] = f"found {n}, allowed {allowed}"
    return wrong


def test_payloads_are_read_through_their_types() -> None:
    wrong = _unexpected(counts())
    assert not wrong, (
        "(bare dict[str, Any], untyped payload reads) per file: use the streams.payloads "
        "accessors and aliases, or list the place in ALLOWED with its reason: "
        + "; ".join(f"{path}: {why}" for path, why in wrong.items())
    )


def test_every_allowance_has_a_reason() -> None:
    for path, (_bare, _reads, reason) in ALLOWED.items():
        assert (ROOT / path).is_file(), path
        assert reason, path


def test_the_count_sees_each_form(tmp_path: Path) -> None:
    path = tmp_path / "probe.py"
    path.write_text(
        "from typing import TYPE_CHECKING, Any\n"
        "JSON = dict[str, Any]  # counted: an alias is allowed only where ALLOWED says\n"
        "def f(event: Any, other: Any) -> dict[str, Any]:\n"
        "    a = event.data['kind']\n"
        "    b = event.data.get('kind')\n"
        "    raw = other.data\n"
        "    if TYPE_CHECKING:\n"
        "        data = as_watch(event)\n"
        "    else:\n"
        "        data = event.data  # not counted: typed, without a call\n"
        "    whole = encode(event.data)  # not counted: the payload as a whole\n"
        "    ev = cast(Mapping[str, Any], whole.get('evidence'))\n"
        "    ev2 = typing.cast(abc.Mapping[str, Any], whole)\n"
        "    typed = cast(TdmEvidence, whole)  # not counted: a declared type\n"
        "    return {}\n"
    )
    assert count(path) == (2, 5)
