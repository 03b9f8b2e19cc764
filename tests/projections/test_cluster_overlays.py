"""In-flight decisions: evict → Releasing and bind → Binding until the watch or a failure."""

from __future__ import annotations

from typing import Any

import pytest

from projections.cluster import ClusterState
from projections.model import TaskStatus
from streams.events import Event, make_event
from tests.builders import at, build_node, build_pod, watch

S = TaskStatus


def fold(events: list[Event], state: ClusterState | None = None) -> ClusterState:
    state = state if state is not None else ClusterState()
    for event in events:
        state.apply(event.with_offset(state.position))
    return state


def evict(name: str, *, uid: str | None = None, minute: float = 1) -> Event:
    data = {
        "kind": "evict",
        "namespace": "ns",
        "pod": name,
        "uid": uid or f"ns-{name}",
        "node": "n1",
        "reason": "preempt",
        "source": "preempt",
        "evidence": {},
    }
    return make_event("decision.evict", at(minute), data)


def bind(name: str, node: str = "n1", *, minute: float = 1) -> Event:
    data = {
        "kind": "bind",
        "namespace": "ns",
        "pod": name,
        "uid": f"ns-{name}",
        "node": node,
        "reason": "allocate",
        "source": "allocate",
        "evidence": {},
    }
    return make_event("decision.bind", at(minute), data)


def effect(decision: Event, kind: str = "effect.failed") -> Event:
    data: dict[str, Any] = {
        "decision": decision.id,
        "kind": decision.data["kind"],
        "target": f"ns/{decision.data['pod']}",
    }
    if kind == "effect.failed":
        data["error"] = "refused"
    return make_event(kind, at(2), data, cause=decision.id)


def start(*pods: dict[str, Any]) -> ClusterState:
    return fold([watch("nodes", build_node("n1", cpu="8"))] + [watch("pods", p) for p in pods])


def running(name: str = "a", **kwargs: Any) -> dict[str, Any]:
    return build_pod("ns", name, node="n1", **kwargs)


def pending(name: str = "p") -> dict[str, Any]:
    return build_pod("ns", name, phase="Pending")


def status_of(state: ClusterState, key: str) -> TaskStatus:
    return state.tasks[key].status


def node_cpu(state: ClusterState) -> tuple[float, float, float]:
    node = state.nodes["n1"]
    return node.idle.milli_cpu, node.used.milli_cpu, node.releasing.milli_cpu


def test_evict_makes_the_task_releasing() -> None:
    state = start(running())
    version = state.version
    fold([evict("a")], state)
    assert state.tasks["ns/a"].status == S.RELEASING
    assert node_cpu(state) == (7000, 1000, 1000)  # future idle grows by the request
    assert state.nodes["n1"].future_idle().milli_cpu == 8000
    assert state.version == version + 1


@pytest.mark.parametrize(
    ("after", "status", "releasing", "overlay_left"),
    [
        pytest.param([], S.RELEASING, 1000, True, id="in-flight"),
        pytest.param(
            [("MODIFIED", running(deleting=at(1)))],
            S.RELEASING,
            1000,
            False,
            id="watch-confirms-deletion",
        ),
        pytest.param(
            [("MODIFIED", running(started=at(1)))],
            S.RELEASING,
            1000,
            True,
            id="unrelated-update-keeps-overlay",
        ),
        pytest.param(
            [("MODIFIED", running(phase="Failed"))], S.FAILED, 0, False, id="terminated-confirms"
        ),
        pytest.param([("DELETED", running())], None, 0, False, id="deleted-confirms"),
    ],
)
def test_evict_overlay_until_the_watch_confirms(
    after: list[tuple[str, dict[str, Any]]], status: S | None, releasing: float, overlay_left: bool
) -> None:
    state = start(running())
    fold([evict("a")], state)
    fold([watch("pods", obj, event=kind) for kind, obj in after], state)
    task = state.tasks.get("ns/a")
    assert (task.status if task else None) == status
    assert state.nodes["n1"].releasing.milli_cpu == releasing
    assert ("ns/a" in state.overlays) == overlay_left


def test_failed_eviction_reverts() -> None:
    state = start(running())
    decision = evict("a")
    fold([decision, effect(decision)], state)
    assert state.tasks["ns/a"].status == S.RUNNING
    assert node_cpu(state) == (7000, 1000, 0)
    assert state.overlays == {}


def test_failed_eviction_reverts_to_the_latest_watched_state() -> None:
    state = start(running())
    decision = evict("a")
    fold([decision, watch("pods", running(cpu="2"), event="MODIFIED"), effect(decision)], state)
    assert state.tasks["ns/a"].status == S.RUNNING
    assert node_cpu(state) == (6000, 2000, 0)


def test_applied_effect_keeps_the_overlay() -> None:
    state = start(running())
    decision = evict("a")
    fold([decision, effect(decision, "effect.applied")], state)
    assert state.tasks["ns/a"].status == S.RELEASING and "ns/a" in state.overlays


@pytest.mark.parametrize(
    "decision",
    [
        pytest.param(evict("missing"), id="unknown-pod"),
        pytest.param(evict("a", uid="another-incarnation"), id="uid-mismatch"),
    ],
)
def test_evict_of_something_else_is_ignored(decision: Event) -> None:
    state = start(running())
    fold([decision], state)
    assert state.tasks["ns/a"].status == S.RUNNING and state.overlays == {}


def test_evict_of_an_already_deleting_pod_adds_nothing() -> None:
    state = start(running(deleting=at(0)))
    fold([evict("a")], state)
    assert state.overlays == {} and node_cpu(state) == (7000, 1000, 1000)


def test_recreated_pod_drops_the_old_overlay() -> None:
    state = start(running())
    fold([evict("a")], state)
    reborn = running()
    reborn["metadata"]["uid"] = "new-uid"
    fold([watch("pods", running(), event="DELETED"), watch("pods", reborn)], state)
    assert state.tasks["ns/a"].status == S.RUNNING and state.overlays == {}


def test_bind_makes_a_pending_task_binding_on_the_node() -> None:
    state = start(pending())
    fold([bind("p")], state)
    task = state.tasks["ns/p"]
    assert (task.status, task.node_name) == (S.BINDING, "n1")
    assert node_cpu(state) == (7000, 1000, 0)
    assert state.pending == {} and "ns/p" in state.nodes["n1"].tasks


@pytest.mark.parametrize(
    ("after", "status", "node", "overlay_left"),
    [
        pytest.param([], S.BINDING, "n1", True, id="in-flight"),
        pytest.param(
            [("MODIFIED", build_pod("ns", "p", phase="Pending", node="n1"))],
            S.BOUND,
            "n1",
            False,
            id="watch-shows-node",
        ),
        pytest.param(
            [("MODIFIED", build_pod("ns", "p", node="n1"))],
            S.RUNNING,
            "n1",
            False,
            id="watch-shows-running",
        ),
        pytest.param(
            [("MODIFIED", build_pod("ns", "p", phase="Pending", memory="2Gi"))],
            S.BINDING,
            "n1",
            True,
            id="still-pending-keeps-overlay",
        ),
    ],
)
def test_bind_overlay_until_the_watch_shows_the_node(
    after: list[tuple[str, dict[str, Any]]], status: S, node: str, overlay_left: bool
) -> None:
    state = start(pending())
    fold([bind("p")], state)
    fold([watch("pods", obj, event=kind) for kind, obj in after], state)
    task = state.tasks["ns/p"]
    assert (task.status, task.node_name) == (status, node)
    assert ("ns/p" in state.overlays) == overlay_left
    assert state.nodes["n1"].used.milli_cpu == 1000


def test_failed_bind_reverts_to_pending() -> None:
    state = start(pending())
    decision = bind("p")
    fold([decision, effect(decision)], state)
    task = state.tasks["ns/p"]
    assert (task.status, task.node_name) == (S.PENDING, "")
    assert node_cpu(state) == (8000, 0, 0) and list(state.pending) == ["ns/p"]


@pytest.mark.parametrize(
    "pod",
    [pytest.param(running("p"), id="already-running"), pytest.param(None, id="unknown-pod")],
)
def test_bind_of_a_non_pending_pod_is_ignored(pod: dict[str, Any] | None) -> None:
    state = start(pod) if pod else start()
    fold([bind("p")], state)
    assert state.overlays == {}


def test_bind_to_an_unknown_node_makes_a_placeholder() -> None:
    state = start(pending())
    fold([bind("p", node="elsewhere")], state)
    assert state.nodes["elsewhere"].placeholder
    decision = bind("p", node="elsewhere")
    fold([effect(decision)], state)
    assert "elsewhere" not in state.nodes


def test_a_later_decision_replaces_the_overlay() -> None:
    state = start(pending())
    first, second = bind("p"), evict("p", minute=2)
    fold([first, second], state)
    task = state.tasks["ns/p"]
    assert (task.status, task.node_name) == (S.RELEASING, "")
    fold([effect(first)], state)  # the replaced decision no longer counts
    assert task.status == S.RELEASING
    fold([effect(second)], state)
    assert (task.status, task.node_name) == (S.PENDING, "") and state.overlays == {}
    assert node_cpu(state) == (8000, 0, 0)


def test_overlays_survive_a_checkpoint() -> None:
    state = start(running())
    decision = evict("a")
    fold([decision], state)
    restored = ClusterState()
    restored.load(state.dump())
    assert status_of(restored, "ns/a") == S.RELEASING
    fold([effect(decision)], restored)
    fold([effect(decision)], state)
    assert status_of(restored, "ns/a") == S.RUNNING
    assert restored.dump() == state.dump()
