"""The cluster's rows (``projections.snapshot_rows``): a dump is a function of the state
alone, whatever the writer's dumps before it (the maps' encodings are kept from one dump
to the next, by identity: ``MapKeys``), and it loads back into the same tasks."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from projections.base import decode_state
from projections.cluster import ClusterState
from projections.model import TaskInfo
from projections.snapshot_rows import MapKeys, dump_rows, dumps, load_rows
from projections.world import World
from tests.builders import build_node, build_pod, watch

LABELS = {"app": "web", "team": "ads"}


def _cluster() -> ClusterState:
    events = [watch("nodes", build_node("n1")), watch("nodes", build_node("n2"))]
    for i in range(6):
        annotations = {"cni.projectcalico.org/podIP": f"10.0.0.{i}/32"}
        pod = build_pod("ns", f"p{i}", node=f"n{i % 2 + 1}", labels=LABELS, annotations=annotations)
        events.append(watch("pods", pod))
    return World().fold(events).cluster


def _bytes(state: ClusterState, keys: MapKeys | None) -> bytes:
    return dumps("cluster", state.position, dump_rows(state, keys), fmt=2)


def _fresh(state: ClusterState) -> bytes:
    """The dump of a writer that never dumped before."""
    return _bytes(state, None)


def _new_content(task: TaskInfo) -> None:
    task.annotations = {"cni.projectcalico.org/podIP": "10.9.9.9/32"}


def _equal_copy(task: TaskInfo) -> None:
    task.labels = dict(task.labels)


def _other_labels(task: TaskInfo) -> None:
    task.labels = {"app": "batch"}


def _emptied(task: TaskInfo) -> None:
    task.annotations = {}


def _gone(task: TaskInfo) -> None:
    task.labels = {"app": "web"}
    task.annotations = dict(task.annotations, extra="1")


@pytest.mark.parametrize(
    "change",
    [_new_content, _equal_copy, _other_labels, _emptied, _gone],
    ids=["new-content", "equal-copy", "other-labels", "emptied", "both-replaced"],
)
def test_a_dump_after_a_change_is_the_fresh_dump(change: Callable[[TaskInfo], None]) -> None:
    state, keys = _cluster(), MapKeys()
    first = _bytes(state, keys)
    assert _bytes(state, keys) == first == _fresh(state)  # the kept encodings: the same bytes
    change(state.tasks["ns/p2"])
    again = _bytes(state, keys)
    assert again == _fresh(state)
    if change is not _equal_copy:
        assert again != first
    restored = ClusterState()
    load_rows(restored, decode_state("cluster", again, fmt=2)[1])
    for key, task in state.tasks.items():
        got = restored.tasks[key]
        assert (got.labels, got.annotations) == (task.labels, task.annotations), key


def test_a_map_of_a_task_gone_is_not_written_again() -> None:
    """The table holds the maps of the tasks there are, not those of the dump before."""
    state, keys = _cluster(), MapKeys()
    _bytes(state, keys)
    gone = state.tasks.pop("ns/p3")
    del state.nodes["n2"].tasks["ns/p3"]
    again = _bytes(state, keys)
    assert again == _fresh(state)
    assert gone.annotations["cni.projectcalico.org/podIP"].encode() not in again
