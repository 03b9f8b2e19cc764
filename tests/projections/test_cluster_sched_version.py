"""``ClusterState.sched_version``: bumped by every change a session can see, not by a node
update that leaves the node's model fields equal (a status heartbeat). ``version`` still
counts every change (behaviour ≤ 2's quiet-tick rule compares it)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.cluster import ClusterState
from projections.snapshot import dump_cluster, load_cluster
from tests.builders import JSON, at, build_node, build_pod, watch


def node(**kwargs: Any) -> JSON:
    return build_node("n1", **kwargs)


def heartbeat(obj: JSON, minute: float) -> JSON:
    conditions = [
        {**c, "lastHeartbeatTime": f"2026-11-21T20:{int(minute):02d}:00Z"}
        for c in obj["status"]["conditions"]
    ]
    return {**obj, "status": {**obj["status"], "conditions": conditions}}


def folded() -> ClusterState:
    state = ClusterState()
    for event in (watch("nodes", node()), watch("pods", build_pod("ns", "a", node="n1"))):
        state.apply(event.with_offset(state.position))
    return state


@pytest.mark.parametrize(
    ("resource", "kind", "obj", "seen"),
    [
        pytest.param("nodes", "MODIFIED", heartbeat(node(), 5), False, id="heartbeat"),
        pytest.param("nodes", "MODIFIED", node(), False, id="same-node-again"),
        pytest.param("nodes", "MODIFIED", node(cpu="16"), True, id="allocatable"),
        pytest.param("nodes", "MODIFIED", node(capacity={"cpu": "9"}), True, id="capacity"),
        pytest.param("nodes", "MODIFIED", node(labels={"a": "b"}), True, id="label"),
        pytest.param(
            "nodes",
            "MODIFIED",
            node(labels={"volcano.sh/revocable-zone": "rz1"}),
            True,
            id="zone-label",
        ),
        pytest.param(
            "nodes",
            "MODIFIED",
            node(taints=[{"key": "x", "effect": "NoSchedule"}]),
            True,
            id="taint",
        ),
        pytest.param("nodes", "MODIFIED", node(unschedulable=True), True, id="cordon"),
        pytest.param("nodes", "MODIFIED", node(ready=False), True, id="not-ready"),
        pytest.param("nodes", "ADDED", build_node("n2"), True, id="new-node"),
        pytest.param("nodes", "DELETED", node(), True, id="node-deleted"),
        pytest.param(
            "pods", "MODIFIED", build_pod("ns", "a", node="n1"), True, id="pod-update-same"
        ),
        pytest.param("pods", "ADDED", build_pod("ns", "b", phase="Pending"), True, id="pod-new"),
        pytest.param("pods", "DELETED", build_pod("ns", "a", node="n1"), True, id="pod-gone"),
    ],
)
def test_which_changes_a_session_can_see(resource: str, kind: str, obj: JSON, seen: bool) -> None:
    state = folded()
    version, sched = state.version, state.sched_version
    state.apply(watch(resource, obj, at(5), kind).with_offset(state.position))
    assert state.version == version + 1
    assert state.sched_version == sched + (1 if seen else 0)


def test_a_checkpoint_keeps_sched_version_and_an_old_one_takes_version() -> None:
    state = folded()
    state.apply(watch("nodes", heartbeat(node(), 5), at(5), "MODIFIED").with_offset(2))
    body = dump_cluster(state)
    again = ClusterState()
    load_cluster(again, body)
    assert (again.version, again.sched_version) == (3, 2)
    old = ClusterState()
    load_cluster(old, {k: v for k, v in body.items() if k != "sched_version"})
    assert (old.version, old.sched_version) == (3, 3)


NODE_UPDATES = {
    "heartbeat": lambda minute: heartbeat(node(), minute),
    "allocatable": lambda minute: heartbeat(node(cpu="16"), minute),
    "label": lambda minute: heartbeat(node(labels={"a": "b"}), minute),
    "not-ready": lambda minute: heartbeat(node(ready=False), minute),
}


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([*NODE_UPDATES, "node-deleted", "pod", "pod-deleted"]),
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from(["100m", "300m", "1", "7"]),
        ),
        max_size=30,
    )
)
def test_a_heartbeat_folds_as_a_full_node_update(steps: list[tuple[str, str, str]]) -> None:
    """The heartbeat shortcut (the node's inputs as last time) leaves the state, the
    checkpoint and both versions exactly as the full update would, ``idle`` included
    (accounting moves it by sums whose rounding the full update re-does)."""
    fast, full = folded(), folded()
    for minute, (what, pod, cpu) in enumerate(steps, 6):
        if what in NODE_UPDATES:
            event = watch("nodes", NODE_UPDATES[what](minute), at(minute), "MODIFIED")
        elif what == "node-deleted":
            event = watch("nodes", node(), at(minute), "DELETED")
        else:
            obj = build_pod("ns", pod, node="n1", cpu=cpu)
            event = watch("pods", obj, at(minute), "DELETED" if what == "pod-deleted" else "ADDED")
        fast.apply(event.with_offset(fast.position))
        full._node_inputs.clear()  # no shortcut: every node update takes the full path
        full.apply(event.with_offset(full.position))
        assert fast.dump() == full.dump()
        assert (fast.version, fast.sched_version) == (full.version, full.sched_version)
