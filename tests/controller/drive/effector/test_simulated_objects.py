"""The simulated cluster's object edits copy what they change and never edit their input.

They copy only the path to what they change (no deep copy: a pod is ~6 KB of JSON), so
the old and new objects share the rest; neither may then be changed in place.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from controller.drive.effector.simulated_objects import (
    bound,
    nominated,
    recreated,
    started,
    terminating,
    with_notice,
    with_taints,
)
from tests.builders import build_node, build_pod

JSON = dict[str, Any]
AT = datetime(2026, 1, 1, tzinfo=UTC)

EDITS: dict[str, Callable[[JSON], JSON]] = {
    "with_notice": lambda pod: with_notice(pod, AT),
    "terminating": lambda pod: terminating(pod, AT, timedelta(seconds=30)),
    "bound": lambda pod: bound(pod, "n2"),
    "nominated": lambda pod: nominated(pod, "n2"),
    "started": lambda pod: started(pod, AT),
    "recreated": lambda pod: recreated(pod, AT),
}


def _pod() -> JSON:
    pod = build_pod(
        "ns",
        "p-abcde",
        node="n1",
        annotations={"a": "1"},
        labels={"app": "x"},
        owner_kind="ReplicaSet",
    )
    pod["metadata"]["generateName"] = "p-"
    return pod


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edit_leaves_its_input_as_it_was(name: str) -> None:
    pod = _pod()
    before = orjson.dumps(pod, option=orjson.OPT_SORT_KEYS)
    out = EDITS[name](pod)
    assert orjson.dumps(pod, option=orjson.OPT_SORT_KEYS) == before
    assert out != pod


@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edit_is_the_deep_copy_edited(name: str) -> None:
    """The same object a deep copy of the input, edited, would be (key order included)."""
    pod = _pod()
    out = EDITS[name](pod)
    assert orjson.dumps(out) == orjson.dumps(EDITS[name](copy.deepcopy(pod)))
    assert list(out) == list(pod) or name == "recreated"


def test_edits_of_edits_share_nothing_they_change() -> None:
    pod = _pod()
    notice = with_notice(pod, AT)
    dying = terminating(notice, AT, timedelta(seconds=30))
    again = recreated(dying, AT + timedelta(seconds=30))
    assert "deletionTimestamp" not in notice["metadata"]
    assert "tide.io/eviction-notice" not in again["metadata"]["annotations"]
    assert "tide.io/eviction-notice" in dying["metadata"]["annotations"]
    assert "deletionTimestamp" in dying["metadata"] and "nodeName" in dying["spec"]
    assert "nodeName" not in again["spec"]


def test_with_taints_leaves_the_node_as_it_was() -> None:
    node = build_node("n1", cpu="4", memory="8Gi")
    before = orjson.dumps(node, option=orjson.OPT_SORT_KEYS)
    out = with_taints(node, [{"key": "k", "effect": "NoSchedule"}])
    assert orjson.dumps(node, option=orjson.OPT_SORT_KEYS) == before
    assert out["spec"]["taints"] == [{"key": "k", "effect": "NoSchedule"}]
