"""Payload validation: what passes, and the message for what does not."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from streams.validation import ValidationError, validate
from tests.builders import (
    build_node,
    build_pod,
    build_podgroup,
    build_queue,
    node_metrics,
    pod_metrics,
)

JSON = dict[str, Any]


def watched(resource: str, obj: JSON, event: str = "ADDED") -> JSON:
    return {"resource": resource, "event": event, "object": obj}


def pod_with(**changes: Any) -> JSON:
    pod = build_pod("default", "web-1", cpu="500m", memory="1Gi")
    for path, value in changes.items():
        put(pod, path, value)
    return watched("pods", pod)


def put(obj: Any, path: str, value: Any) -> None:
    """``put(pod, "spec__containers__0__resources", x)``; a value of DELETE removes the key."""
    *parents, last = path.split("__")
    for key in parents:
        obj = obj[int(key)] if isinstance(obj, list) else obj.setdefault(key, {})
    if value is DELETE:
        del obj[last]
    else:
        obj[last] = value


DELETE = object()
TRIGGER = {"trigger": "t", "kind": "tick", "scheduled": "2026-11-21T20:00:00Z"}
EVICT = {
    "kind": "evict",
    "namespace": "default",
    "pod": "web-1",
    "uid": "u1",
    "node": "n1",
    "reason": "tdm-window-closed",
    "source": "tdm",
    "evidence": {},
}
TAINT = {
    "kind": "taint",
    "node": "n1",
    "taint": {"key": "k", "value": "v", "effect": "NoSchedule"},
    "reason": "cpu-pressure",
    "source": "pressure",
    "evidence": {"usage": 0.9},
}
EFFECT = {"decision": "d1", "kind": "evict", "target": "default/web-1"}

VALID: list[tuple[str, JSON]] = [
    ("k8s.watch", pod_with()),
    (
        "k8s.watch",
        pod_with(spec__initContainers=[{"name": "i", "resources": {"limits": {"cpu": 2}}}]),
    ),
    ("k8s.watch", pod_with(spec__containers__0__resources=DELETE)),
    ("k8s.watch", pod_with(spec=DELETE, status=DELETE)),
    ("k8s.watch", pod_with(spec__overhead={"cpu": "250m"})),
    ("k8s.watch", watched("pods", {"metadata": {"name": "p", "namespace": "ns"}}, "DELETED")),
    ("k8s.watch", watched("nodes", build_node("n1"), "MODIFIED")),
    ("k8s.watch", watched("nodes", {"metadata": {"name": "bare"}})),
    ("k8s.watch", watched("podgroups", build_podgroup("default", "pg", min_member=0))),
    (
        "k8s.watch",
        watched("queues", build_queue("q", capability={"cpu": "1e3", "memory": "1.5Gi"})),
    ),
    (
        "k8s.watch",
        watched(
            "queues", {"metadata": {"name": "q"}, "spec": {"guarantee": {"resource": {"cpu": "1"}}}}
        ),
    ),
    ("k8s.watch", watched("nodes", {"metadata": {"resourceVersion": "7"}}, "BOOKMARK")),
    ("metrics.node", node_metrics("n1", cpu="123456789n", memory="1024Ki").data),
    ("metrics.pod", pod_metrics("default", "web-1", cpu="1m", memory="10Mi").data),
    ("metrics.pod", {"metadata": {"name": "p", "namespace": "ns"}, "containers": []}),
    ("config.applied", {"config": {}, "source": "inline"}),
    ("trigger.fired", TRIGGER),
    ("trigger.fired", {**TRIGGER, "zone": "rz1", "kind": "window-end"}),
    ("decision.evict", EVICT),
    ("decision.bind", {**EVICT, "kind": "bind", "reason": "allocate", "source": "allocate"}),
    ("decision.taint", TAINT),
    (
        "decision.untaint",
        {**TAINT, "kind": "untaint", "taint": {"key": "k", "effect": "NoExecute"}},
    ),
    ("effect.applied", EFFECT),
    ("effect.failed", {**EFFECT, "error": "404"}),
    ("effect.failed", {**EFFECT, "error": "404 Not Found", "reason": "not-found"}),
    ("effect.skipped", {**EFFECT, "error": "limit: ...", "reason": "guard-rail"}),
    ("effect.skipped", {**EFFECT, "error": "dry-run", "reason": "dry-run"}),
]


@pytest.mark.parametrize(("type_", "data"), VALID)
def test_valid_payloads_pass(type_: str, data: JSON) -> None:
    validate(type_, data)


def without(data: JSON, key: str) -> JSON:
    return {k: v for k, v in data.items() if k != key}


def meta_without(make: Callable[[], JSON], key: str) -> JSON:
    data = make()
    del data["object"]["metadata"][key]
    return data


INVALID: list[tuple[str, Any, str]] = [
    (
        "k8s.watch",
        pod_with(spec__containers__0__resources__requests__cpu="12x"),
        "pods default/web-1: spec.containers[0].resources.requests.cpu: "
        "quantity '12x' is not a valid Kubernetes quantity",
    ),
    (
        "k8s.watch",
        pod_with(spec__initContainers=[{"resources": {"limits": {"memory": " 1Gi"}}}]),
        "pods default/web-1: spec.initContainers[0].resources.limits.memory: quantity ' 1Gi'",
    ),
    (
        "k8s.watch",
        pod_with(spec__containers__0__resources__limits={"cpu": None}),
        "limits.cpu: null is not",
    ),
    (
        "k8s.watch",
        pod_with(spec__containers__0__resources__requests={"cpu": True}),
        "a boolean is not",
    ),
    (
        "k8s.watch",
        pod_with(spec__containers="main"),
        "pods default/web-1: spec.containers: a string, not a list",
    ),
    ("k8s.watch", pod_with(spec__containers=[7]), "spec.containers[0]: a number, not an object"),
    (
        "k8s.watch",
        pod_with(spec__containers__0__resources=[]),
        "spec.containers[0].resources: an array",
    ),
    ("k8s.watch", pod_with(spec="x"), "pods default/web-1: spec: a string, not an object"),
    ("k8s.watch", meta_without(pod_with, "name"), "pod without metadata.name"),
    ("k8s.watch", meta_without(pod_with, "namespace"), "pod web-1 without metadata.namespace"),
    ("k8s.watch", watched("pods", {"spec": {}}), "pod without metadata"),
    ("k8s.watch", watched("nodes", {"metadata": {"name": ""}}), "node without metadata.name"),
    (
        "k8s.watch",
        watched("podgroups", {"metadata": {"name": "pg"}}),
        "podgroup pg without metadata.namespace",
    ),
    (
        "k8s.watch",
        watched("nodes", build_node("n1", capacity={"cpu": "8 cores"})),
        "nodes n1: status.capacity.cpu: quantity '8 cores'",
    ),
    (
        "k8s.watch",
        watched("nodes", build_node("n1", cpu="-", capacity={"cpu": "8"})),
        "nodes n1: status.allocatable.cpu: quantity '-'",
    ),
    (
        "k8s.watch",
        watched("queues", build_queue("q", capability={"cpu": "lots"})),
        "queues q: spec.capability.cpu",
    ),
    (
        "k8s.watch",
        watched(
            "queues",
            {"metadata": {"name": "q"}, "spec": {"guarantee": {"resource": {"memory": "1G B"}}}},
        ),
        "queues q: spec.guarantee.resource.memory",
    ),
    (
        "k8s.watch",
        watched("queues", {"metadata": {"name": "q"}, "spec": {"deserved": {"cpu": "x"}}}),
        "spec.deserved.cpu",
    ),
    (
        "k8s.watch",
        watched("podgroups", build_podgroup("default", "pg", min_member=-1)),
        "podgroups default/pg: spec.minMember: -1 is not an integer >= 0",
    ),
    (
        "k8s.watch",
        watched("podgroups", {**build_podgroup("d", "pg"), "spec": {"minMember": "2"}}),
        "minMember: '2'",
    ),
    (
        "k8s.watch",
        watched(
            "podgroups", {**build_podgroup("d", "pg"), "spec": {"minResources": {"cpu": "1x"}}}
        ),
        "spec.minResources.cpu",
    ),
    (
        "k8s.watch",
        {**pod_with(), "resource": "deployments"},
        "resource 'deployments' is not one of",
    ),
    ("k8s.watch", {**pod_with(), "event": "ERROR"}, "event 'ERROR' is not one of"),
    ("k8s.watch", {**pod_with(), "object": None}, "k8s.watch pods: object is null"),
    ("k8s.watch", [], "k8s.watch: data is an array"),
    (
        "metrics.node",
        {**node_metrics("n1", cpu="1", memory="1").data, "usage": {"cpu": "fast"}},
        "metrics.node n1: usage.cpu: quantity 'fast'",
    ),
    (
        "metrics.node",
        without(node_metrics("n1", cpu="1", memory="1").data, "usage"),
        "metrics.node n1: usage: missing",
    ),
    ("metrics.node", {"usage": {}}, "metrics.node without metadata.name"),
    (
        "metrics.pod",
        {"metadata": {"name": "p", "namespace": "ns"}, "containers": [{"usage": {"memory": "1Q"}}]},
        "metrics.pod ns/p: containers[0].usage.memory: quantity '1Q'",
    ),
    (
        "metrics.pod",
        {"metadata": {"name": "p", "namespace": "ns"}},
        "metrics.pod ns/p: containers: null",
    ),
    (
        "metrics.pod",
        {"metadata": {"name": "p"}, "containers": []},
        "metrics.pod p without metadata.namespace",
    ),
    ("config.applied", {"source": "x"}, "config.applied: missing 'config'"),
    (
        "config.applied",
        {"config": [], "source": "x"},
        "config.applied: 'config' is an array, not an object",
    ),
    ("trigger.fired", without(TRIGGER, "kind"), "trigger.fired: missing 'kind'"),
    (
        "trigger.fired",
        {**TRIGGER, "scheduled": "soon"},
        "'scheduled' 'soon' is not an RFC 3339 time",
    ),
    ("trigger.fired", {**TRIGGER, "zone": 1}, "'zone' is a number"),
    ("decision.evict", without(EVICT, "uid"), "decision.evict: missing 'uid'"),
    ("decision.evict", {**EVICT, "kind": "bind"}, "'kind' is 'bind', expected 'evict'"),
    ("decision.evict", {**EVICT, "reason": "boredom"}, "unknown reason 'boredom'"),
    ("decision.evict", {**EVICT, "evidence": "because"}, "'evidence' is a string, not an object"),
    ("decision.bind", without({**EVICT, "kind": "bind"}, "node"), "decision.bind: missing 'node'"),
    ("decision.taint", without(TAINT, "taint"), "decision.taint: missing 'taint'"),
    ("decision.taint", {**TAINT, "taint": {"key": "k"}}, "decision.taint: taint: missing 'effect'"),
    ("decision.taint", {**TAINT, "taint": {"key": "k", "effect": "Evict"}}, "taint.effect 'Evict'"),
    (
        "decision.untaint",
        {**TAINT, "kind": "untaint", "taint": {"key": "k", "effect": "NoSchedule", "value": 1}},
        "taint.value is a number",
    ),
    ("effect.applied", without(EFFECT, "target"), "effect.applied: missing 'target'"),
    ("effect.failed", EFFECT, "effect.failed: missing 'error'"),
    ("effect.applied", {**EFFECT, "error": 404}, "'error' is a number"),
    (
        "effect.skipped",
        {**EFFECT, "error": "x", "reason": "budget"},
        "effect.skipped: unknown reason 'budget' (allowed: dry-run, gone, guard-rail)",
    ),
    ("effect.applied", {**EFFECT, "reason": "gone"}, "unknown reason 'gone' (allowed: none)"),
    ("effect.failed", {**EFFECT, "error": "x", "reason": ["gone"]}, "unknown reason ['gone']"),
    ("k8s.nope", {}, "unknown event type 'k8s.nope'"),
]


@pytest.mark.parametrize(("type_", "data", "message"), INVALID)
def test_invalid_payloads_say_where(type_: str, data: Any, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        validate(type_, data)
    assert message in caught.value.reason
    assert str(caught.value) == caught.value.reason


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        pytest.param("\n", "usage.\\n: null", id="newline"),
        pytest.param("a\x00b", "usage.a\\x00b: null", id="nul"),
        pytest.param("x\u2028y", "usage.x\\u2028y: null", id="line-separator"),
        pytest.param("cpü", "usage.cpü: null", id="printable-kept"),
    ],
)
def test_a_reason_is_one_line_whatever_the_input_names(key: str, shown: str) -> None:
    """A key of the input is part of the reason; its control characters are escaped, so the
    quarantine's reason stays one line (found by tests/fuzz/test_property.py)."""
    sample = copy.deepcopy(node_metrics("n1", cpu="1", memory="1Gi").data)
    sample["usage"] = {key: None}
    with pytest.raises(ValidationError) as caught:
        validate("metrics.node", sample)
    assert shown in caught.value.reason
    assert caught.value.reason.isprintable()


def test_validation_does_not_change_the_payload() -> None:
    data = pod_with()
    before = copy.deepcopy(data)
    validate("k8s.watch", data)
    assert data == before
