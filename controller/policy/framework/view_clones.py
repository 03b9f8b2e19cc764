"""Fast shallow copies of the model objects a session changes.

A session never mutates the projection: a statement clones the node or job it changes
(:class:`~controller.policy.framework.view.ClusterView`'s overlays) and makes a changed
task a new object. A TDM window close clones thousands of tasks, so the copy must be
cheap: the copiers here are generated from each dataclass's own fields. The statement
(:mod:`controller.policy.framework.statement`), allocate and the what-if copies
(:mod:`controller.policy.framework.simulate`) use them too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from operator import attrgetter
from typing import Any, TypeVar

from projections.model import JobInfo, NodeInfo, TaskInfo, TaskStatus

M = TypeVar("M", JobInfo, NodeInfo, TaskInfo)


def _cloner(cls: type[M]) -> Callable[[M], M]:
    """A fast shallow copy of a model dataclass.

    Generated code that creates the object without ``__init__`` and copies each field in
    one statement: ~0.6 µs for a task, against ~1.8 µs for ``cls(*attrgetter(...)(obj))``
    and ~8x that for ``dataclasses.replace``; a TDM window close clones thousands of tasks.
    Classes with a ``__post_init__`` get the ``__init__`` path, so it still runs.
    """
    if hasattr(cls, "__post_init__"):
        init = [f.name for f in fields(cls) if f.init]
        rest = [f.name for f in fields(cls) if not f.init]
        get = attrgetter(*init)

        def clone(obj: M) -> M:
            copy = cls(*get(obj))
            for name in rest:
                setattr(copy, name, getattr(obj, name))
            return copy

        return clone
    names = [f.name for f in fields(cls)]
    if not all(name.isidentifier() for name in names):  # pragma: no cover - model fields
        raise TypeError(f"{cls.__name__}: field names must be identifiers")
    body = "".join(f"    copy.{name} = obj.{name}\n" for name in names)
    source = f"def clone(obj):\n    copy = new(cls)\n{body}    return copy\n"
    namespace: dict[str, Any] = {"new": object.__new__, "cls": cls}
    exec(source, namespace)  # the source is built from the dataclass's own field names
    generated: Callable[[M], M] = namespace["clone"]
    return generated


_clone_task = _cloner(TaskInfo)
#: A shallow copy of a job (the caller replaces its task map before changing it).
clone_job = _cloner(JobInfo)
_clone_node = _cloner(NodeInfo)
#: A shallow copy of a task, nothing changed (the caller sets what differs).
clone_task_as_is: Callable[[TaskInfo], TaskInfo] = _clone_task


def clone_task(task: TaskInfo, *, status: TaskStatus, node_name: str | None = None) -> TaskInfo:
    """A new version of ``task`` with ``status`` (and ``node_name``); the original is kept."""
    copy = _clone_task(task)
    copy.status = status
    if node_name is not None:
        copy.node_name = node_name
    return copy


def copy_node(node: NodeInfo) -> NodeInfo:
    """A copy of ``node`` whose accounting (resources and task map) may be changed freely.

    Tasks are shared (they are never mutated); labels and taints are shared (read only).
    """
    copy = _clone_node(node)
    copy.idle = node.idle.clone()
    copy.used = node.used.clone()
    copy.releasing = node.releasing.clone()
    copy.pipelined = node.pipelined.clone()
    copy.tasks = dict(node.tasks)
    return copy
