"""Nodes and their accounting through pod add / modify / delete; watch-event rules."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.accounting import node_add, node_remove
from projections.cluster import ClusterState
from projections.model import NodeInfo, Resource, TaskStatus
from projections.pods import task_from_pod
from streams.events import Event
from tests.builders import at, build_node, build_pod, watch

GI = 2**30


def fold(events: list[Event], state: ClusterState | None = None) -> ClusterState:
    state = state if state is not None else ClusterState()
    for event in events:
        state.apply(event.with_offset(state.position))
    return state


def pod(name: str, **kwargs: Any) -> dict[str, Any]:
    kwargs.setdefault("node", "n1")
    return build_pod("ns", name, **kwargs)


def cpu(resource: Resource) -> float:
    return resource.milli_cpu


@pytest.mark.parametrize(
    ("steps", "idle", "used", "releasing", "tasks"),
    [
        pytest.param([("ADDED", pod("a"))], 7000, 1000, 0, 1, id="running-consumes"),
        pytest.param([("ADDED", pod("a", phase="Pending"))], 7000, 1000, 0, 1, id="bound-consumes"),
        pytest.param(
            [("ADDED", pod("a", node="", phase="Pending"))], 8000, 0, 0, 0, id="pending-not-placed"
        ),
        pytest.param(
            [("ADDED", pod("a", phase="Succeeded"))], 8000, 0, 0, 0, id="succeeded-not-placed"
        ),
        pytest.param([("ADDED", pod("a", phase="Failed"))], 8000, 0, 0, 0, id="failed-not-placed"),
        pytest.param([("ADDED", pod("a", phase="Unknown"))], 7000, 1000, 0, 1, id="unknown"),
        pytest.param([("ADDED", pod("a", deleting=at(1)))], 7000, 1000, 1000, 1, id="releasing"),
        pytest.param(
            [("ADDED", pod("a")), ("MODIFIED", pod("a", deleting=at(1)))],
            7000,
            1000,
            1000,
            1,
            id="running-then-releasing",
        ),
        pytest.param(
            [("ADDED", pod("a")), ("MODIFIED", pod("a", phase="Succeeded"))],
            8000,
            0,
            0,
            0,
            id="running-then-succeeded-frees",
        ),
        pytest.param(
            [("ADDED", pod("a")), ("DELETED", pod("a"))], 8000, 0, 0, 0, id="deleted-frees"
        ),
        pytest.param(
            [("ADDED", pod("a", deleting=at(1))), ("DELETED", pod("a"))],
            8000,
            0,
            0,
            0,
            id="releasing-then-deleted",
        ),
        pytest.param(
            [
                ("ADDED", pod("a", node="", phase="Pending")),
                ("MODIFIED", pod("a", phase="Pending")),
            ],
            7000,
            1000,
            0,
            1,
            id="pending-then-bound",
        ),
        pytest.param(
            [("ADDED", pod("a")), ("MODIFIED", pod("a", cpu="3"))],
            5000,
            3000,
            0,
            1,
            id="request-resized",
        ),
        pytest.param(
            [("ADDED", pod("a")), ("ADDED", pod("b", cpu="2")), ("DELETED", pod("a"))],
            6000,
            2000,
            0,
            1,
            id="two-then-one",
        ),
        pytest.param(
            [("ADDED", pod("a", cpu="10"))], -2000, 10000, 0, 1, id="overcommit-goes-negative"
        ),
        pytest.param([("MODIFIED", pod("a"))], 7000, 1000, 0, 1, id="modified-unknown-is-add"),
        pytest.param([("DELETED", pod("a"))], 8000, 0, 0, 0, id="deleted-unknown-ignored"),
    ],
)
def test_node_accounting(
    steps: list[tuple[str, dict[str, Any]]], idle: float, used: float, releasing: float, tasks: int
) -> None:
    state = fold([watch("nodes", build_node("n1", cpu="8"))])
    fold([watch("pods", obj, event=kind) for kind, obj in steps], state)
    node = state.nodes["n1"]
    assert (cpu(node.idle), cpu(node.used), cpu(node.releasing), len(node.tasks)) == (
        idle,
        used,
        releasing,
        tasks,
    )
    assert node.idle == node.allocatable.clone().sub(node.used)
    assert node.pipelined == Resource()


def test_pipelined_only_adds_to_pipelined() -> None:
    node = NodeInfo("n1", Resource(8000, GI, {"pods": 10}), Resource(8000, GI, {"pods": 10}))
    node.idle = node.allocatable.clone()
    task = task_from_pod(pod("a"))
    task.status = TaskStatus.PIPELINED
    node_add(node, task)
    assert (cpu(node.idle), cpu(node.used), cpu(node.pipelined)) == (8000, 0, 1000)
    assert cpu(node.future_idle()) == 7000
    node_remove(node, task)
    assert (cpu(node.idle), cpu(node.pipelined), node.tasks) == (8000, 0, {})


def test_node_fields() -> None:
    raw = build_node(
        "n1",
        cpu="16",
        memory="64Gi",
        pods="110",
        labels={"volcano.sh/revocable-zone": "rz1", "zone": "a"},
        taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}],
        unschedulable=True,
        capacity={"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": "4"},
    )
    node = fold([watch("nodes", raw)]).nodes["n1"]
    assert (cpu(node.allocatable), node.allocatable.memory) == (16000, 64 * GI)
    assert node.allocatable.scalars == {"pods": 110}
    assert node.capacity.scalars == {"pods": 110, "nvidia.com/gpu": 4000}
    assert node.revocable_zone == "rz1" and node.labels["zone"] == "a"
    assert node.taints == [{"key": "k", "value": "v", "effect": "NoSchedule"}]
    assert node.unschedulable and node.ready and not node.placeholder
    assert node.idle == node.allocatable


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        pytest.param([{"type": "Ready", "status": "True"}], True, id="ready"),
        pytest.param([{"type": "Ready", "status": "False"}], False, id="not-ready"),
        pytest.param([{"type": "Ready", "status": "Unknown"}], False, id="unknown"),
        pytest.param([], True, id="no-conditions-as-volcano"),
        pytest.param([{"type": "MemoryPressure", "status": "True"}], True, id="other-only"),
    ],
)
def test_node_ready(conditions: list[dict[str, str]], ready: bool) -> None:
    raw = build_node("n1")
    raw["status"]["conditions"] = conditions
    state = fold([watch("nodes", raw)])
    assert state.nodes["n1"].ready is ready
    assert [n.name for n in state.ready_nodes()] == (["n1"] if ready else [])


def test_pod_before_its_node_makes_a_placeholder_node() -> None:
    state = fold([watch("pods", pod("a", node="late"))])
    node = state.nodes["late"]
    assert node.placeholder and not node.ready and cpu(node.idle) == -1000
    fold([watch("nodes", build_node("late", cpu="4"))], state)
    assert state.nodes["late"] is node
    assert not node.placeholder and node.ready and cpu(node.idle) == 3000
    assert list(node.tasks) == ["ns/a"]


def test_placeholder_node_goes_with_its_last_task() -> None:
    state = fold([watch("pods", pod("a", node="ghost")), watch("pods", pod("a"), event="DELETED")])
    assert state.nodes == {}


def test_node_deleted_with_tasks_left_becomes_a_placeholder() -> None:
    raw = build_node("n1", cpu="8")
    state = fold([watch("nodes", raw), watch("pods", pod("a"))])
    fold([watch("nodes", raw, event="DELETED")], state)
    node = state.nodes["n1"]
    assert node.placeholder and not node.ready and cpu(node.idle) == -1000
    fold([watch("nodes", raw)], state)
    assert cpu(state.nodes["n1"].idle) == 7000


def test_node_modified_keeps_its_accounting() -> None:
    state = fold([watch("nodes", build_node("n1", cpu="8")), watch("pods", pod("a"))])
    fold([watch("nodes", build_node("n1", cpu="16"), event="MODIFIED")], state)
    node = state.nodes["n1"]
    assert (cpu(node.idle), cpu(node.used), list(node.tasks)) == (15000, 1000, ["ns/a"])


def test_empty_node_deleted_is_gone() -> None:
    raw = build_node("n1")
    state = fold([watch("nodes", raw), watch("nodes", raw, event="DELETED")])
    assert state.nodes == {}


def test_pending_index() -> None:
    state = fold([watch("pods", pod("a", node="", phase="Pending")), watch("pods", pod("b"))])
    assert list(state.pending) == ["ns/a"]
    fold([watch("pods", pod("a", phase="Pending"), event="MODIFIED")], state)
    assert state.pending == {}


def test_delete_of_an_older_incarnation_is_ignored() -> None:
    state = fold([watch("pods", pod("a"))])
    older = pod("a")
    older["metadata"]["uid"] = "some-older-uid"
    fold([watch("pods", older, event="DELETED")], state)
    assert "ns/a" in state.tasks


def test_version_counts_changes_only() -> None:
    state = fold([watch("pods", pod("a"))])
    assert state.version == 1
    fold(
        [
            watch("pods", pod("zzz"), event="DELETED"),
            watch("nodes", build_node("x"), event="DELETED"),
        ],
        state,
    )
    assert state.version == 1
    fold([watch("pods", pod("a", cpu="2"), event="MODIFIED")], state)
    assert state.version == 2


@pytest.mark.parametrize(
    "data",
    [
        pytest.param({"resource": "pods", "event": "ADDED", "object": {"spec": {}}}, id="no-meta"),
        pytest.param(
            {"resource": "nodes", "event": "ADDED", "object": {"metadata": {}}}, id="no-name"
        ),
        pytest.param(
            {
                "resource": "pods",
                "event": "ADDED",
                "object": {"metadata": {"name": "p"}, "spec": {"containers": [1]}},
            },
            id="bad-container",
        ),
        pytest.param({"resource": "pods", "event": "ADDED", "object": "x"}, id="not-an-object"),
        pytest.param({"resource": "pods", "event": "BOOKMARK", "object": {}}, id="bookmark"),
        pytest.param({"resource": "services", "event": "ADDED", "object": {}}, id="other-kind"),
    ],
)
def test_bad_or_foreign_watch_records_are_ignored(data: dict[str, Any]) -> None:
    from streams.events import make_event
    from tests.builders import T0

    state = fold([make_event("k8s.watch", T0, data)])
    assert state.tasks == {} and state.nodes == {} and state.version == 0
    assert state.position == 1


POD_NAMES = ["a", "b", "c"]
pod_events = st.lists(
    st.tuples(
        st.sampled_from(["ADDED", "MODIFIED", "DELETED"]),
        st.sampled_from(POD_NAMES),
        st.sampled_from(["n1", "n2", ""]),
        st.sampled_from(["Running", "Pending", "Succeeded", "Unknown"]),
        st.booleans(),
        st.sampled_from(["1", "500m", "2"]),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(pod_events)
def test_incremental_accounting_equals_a_fold_of_the_final_objects(
    steps: list[tuple[str, str, str, str, bool, str]],
) -> None:
    nodes = [watch("nodes", build_node(n, cpu="8")) for n in ("n1", "n2")]
    state = fold(nodes)
    final: dict[str, dict[str, Any]] = {}
    for kind, name, node, phase, deleting, request in steps:
        obj = build_pod(
            "ns", name, node=node, phase=phase, cpu=request, deleting=at(1) if deleting else None
        )
        fold([watch("pods", obj, event=kind)], state)
        if kind == "DELETED":
            final.pop(name, None)
        else:
            final[name] = obj
    fresh = fold(nodes + [watch("pods", obj) for _, obj in sorted(final.items())])
    for name in ("n1", "n2"):
        got, want = state.nodes[name], fresh.nodes[name]
        assert (got.idle, got.used, got.releasing) == (want.idle, want.used, want.releasing)
        assert sorted(got.tasks) == sorted(want.tasks)
        assert got.idle == got.allocatable.clone().sub(got.used)
    assert sorted(state.tasks) == sorted(fresh.tasks)
    assert sorted(state.pending) == sorted(fresh.pending)
    assert sorted(state.jobs) == sorted(fresh.jobs)
