"""The containers' shape memo of ``task_from_pod`` answers as the full path does.

``projections.pods`` keeps, per distinct JSON of the containers' ``resources``, the
request, emptiness and spec QoS answers (issue 15). Each pod here is turned into a task
twice: with the memo as the pods before it left it, and without the memo (the full
path, every answer worked out from the pod). Every field, and whether it raises, must
be the same; the resources are drawn from a small pool (so that shapes repeat across
pods whose statuses and labels differ) that includes malformed ones.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from projections import pods
from projections.model import Resource
from projections.pods import task_from_pod

#: resource lists, few enough that shapes with equal requests and other limits meet
RESOURCE_LISTS = st.sampled_from(
    [
        {"cpu": "1", "memory": "1Gi"},
        {"cpu": "500m", "nvidia.com/gpu": "1", "pods": "2"},
        {"cpu": 1, "memory": 1.5},
        {"cpu": True},
        {"cpu": [1]},
        None,
        ["cpu", "memory"],
    ]
)
RESOURCES: st.SearchStrategy[Any] = st.one_of(
    st.fixed_dictionaries({}, optional={"requests": RESOURCE_LISTS, "limits": RESOURCE_LISTS}),
    st.sampled_from([None, "x", []]),
)
CONTAINER = st.one_of(
    st.fixed_dictionaries({"name": st.just("c")}, optional={"resources": RESOURCES}),
    st.just("not-a-container"),
)
CONTAINERS = st.one_of(st.lists(CONTAINER, max_size=2), st.sampled_from([None, {}, "c"]))
#: a few shapes, each used by many pods
SHAPES = st.lists(CONTAINERS, min_size=1, max_size=4)


def _pod(containers: Any, qos_class: Any, qos_label: Any, extra: dict[str, Any]) -> dict[str, Any]:
    labels = {} if qos_label is None else {"koordinator.sh/qosClass": qos_label}
    status: dict[str, Any] = {"phase": "Running"}
    if qos_class is not None:
        status["qosClass"] = qos_class
    spec: dict[str, Any] = {"nodeName": "n1", **extra}
    if containers is not None:
        spec["containers"] = containers
    return {
        "metadata": {"namespace": "ns", "name": "p", "uid": "u", "labels": labels},
        "spec": spec,
        "status": status,
    }


#: (shape, status.qosClass, QoS label, spec extras); mostly the memo's case: no QoS class,
#: no label, regular containers only
PODS = st.tuples(
    st.integers(0, 3),
    st.sampled_from([None, None, None, "", "Burstable", "BestEffort", 3]),
    st.sampled_from([None, None, "LS"]),
    st.sampled_from([{}, {}, {}, {"overhead": {"cpu": "1"}}, {"initContainers": []}]),
)


def _resource(value: Resource) -> tuple[Any, ...]:
    return (value.milli_cpu, value.memory, list(value.scalars.items()))


def _outcome(pod: dict[str, Any]) -> tuple[Any, ...]:
    try:
        task = task_from_pod(pod)
    except (KeyError, TypeError, AttributeError, ValueError):
        # which of these is told apart by no caller: the cluster fold skips the pod
        return ("raises",)
    fields = {name: getattr(task, name) for name in task.__slots__}
    fields["resreq"] = _resource(task.resreq)
    fields["init_resreq"] = _resource(task.init_resreq)
    return ("task", fields, task.resreq is task.init_resreq)


def _no_shape(containers: Any) -> None:
    """``pods._shape`` for the full path: never a shape."""


def _full_path(pod: dict[str, Any]) -> tuple[Any, ...]:
    """The outcome without the memo: every answer worked out from the pod itself."""
    memo = pods._shape
    pods._shape = _no_shape
    try:
        return _outcome(pod)
    finally:
        pods._shape = memo


@settings(max_examples=500, deadline=None)
@given(SHAPES, st.lists(PODS, min_size=1, max_size=12))
@example(  # equal requests, other limits: another spec QoS class
    [[{"name": "c", "resources": {"limits": {"cpu": "1"}}}], [{"name": "c"}]],
    [(0, None, None, {}), (1, None, None, {})],
)
def test_the_memo_answers_as_the_full_path(shapes: list[Any], drawn: list[Any]) -> None:
    pods._SHAPES.clear()
    for index, qos_class, qos_label, extra in drawn:
        pod = _pod(shapes[index % len(shapes)], qos_class, qos_label, extra)
        assert _outcome(pod) == _full_path(pod)


def test_a_shape_is_shared_but_each_task_owns_its_request() -> None:
    pod = _pod([{"name": "c", "resources": {"requests": {"cpu": "1"}}}], None, None, {})
    first, second = task_from_pod(pod), task_from_pod(pod)
    assert first.resreq == second.resreq and first.resreq is not second.resreq
    assert first.resreq is first.init_resreq
