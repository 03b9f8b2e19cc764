"""Pod → TaskInfo: status mapping, requests, priority, preemptable, revocable zone, QoS."""

from __future__ import annotations

from typing import Any

import pytest

from projections.model import TaskStatus
from projections.parsing import parse_bool, parse_int32
from projections.pods import task_from_pod
from tests.builders import T0, at, build_pod

GI, MI = 2**30, 2**20
S = TaskStatus


def container(requests: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": "c", "image": "x"}
    if requests is not None:
        body["resources"] = {"requests": requests}
    body.update(extra)
    return body


@pytest.mark.parametrize(
    ("phase", "node", "deleting", "expected"),
    [
        pytest.param("Running", "n1", False, S.RUNNING, id="running"),
        pytest.param("Running", "n1", True, S.RELEASING, id="running-deleting"),
        pytest.param("Pending", "", False, S.PENDING, id="pending-unscheduled"),
        pytest.param("Pending", "n1", False, S.BOUND, id="pending-bound"),
        pytest.param("Pending", "n1", True, S.RELEASING, id="pending-deleting"),
        pytest.param("Pending", "", True, S.RELEASING, id="pending-unscheduled-deleting"),
        pytest.param("Unknown", "n1", False, S.UNKNOWN, id="unknown"),
        pytest.param("Succeeded", "n1", False, S.SUCCEEDED, id="succeeded"),
        pytest.param("Succeeded", "n1", True, S.SUCCEEDED, id="succeeded-deleting"),
        pytest.param("Failed", "n1", False, S.FAILED, id="failed"),
        pytest.param("", "n1", False, S.UNKNOWN, id="no-phase-is-unknown"),
        pytest.param("Weird", "", False, S.UNKNOWN, id="unrecognised-phase"),
    ],
)
def test_status_mapping(phase: str, node: str, deleting: bool, expected: TaskStatus) -> None:
    pod = build_pod("ns", "p", node=node, phase=phase, deleting=at(1) if deleting else None)
    task = task_from_pod(pod)
    assert task.status == expected
    assert task.deleting == deleting
    assert task.node_name == node


@pytest.mark.parametrize(
    ("requests", "cpu", "memory", "scalars"),
    [
        pytest.param({"cpu": "500m", "memory": "1Gi"}, 500, GI, {}, id="milli-and-gi"),
        pytest.param({"cpu": "1", "memory": "1G"}, 1000, 10**9, {}, id="whole-and-decimal-G"),
        pytest.param({"cpu": "1.5", "memory": "1.5Mi"}, 1500, 1.5 * MI, {}, id="decimals"),
        pytest.param({"cpu": "0.1", "memory": "0.5"}, 100, 1, {}, id="memory-rounds-up"),
        pytest.param({"cpu": "1e0", "memory": "1e3"}, 1000, 1000, {}, id="exponents"),
        pytest.param({"cpu": "1e3m", "memory": "2e-1"}, 0, 1, {}, id="exponent-and-suffix-invalid"),
        pytest.param({"cpu": "2k", "memory": "1E2"}, 2_000_000, 100, {}, id="k-and-E-exponent"),
        pytest.param({"cpu": "100u", "memory": "1Ki"}, 1, 1024, {}, id="micro-rounds-up"),
        pytest.param({"cpu": "250n"}, 1, 0, {}, id="nano"),
        pytest.param({"memory": "1Ti"}, 0, 2**40, {}, id="tebi"),
        pytest.param({"memory": "2M", "cpu": "+1"}, 1000, 2 * 10**6, {}, id="mega-and-sign"),
        pytest.param({"cpu": 2, "memory": 1024}, 2000, 1024, {}, id="json-numbers"),
        pytest.param(
            {"ephemeral-storage": "1Gi"},
            0,
            0,
            {"ephemeral-storage": GI * 1000},
            id="ephemeral-milli",
        ),
        pytest.param({"nvidia.com/gpu": "2"}, 0, 0, {"nvidia.com/gpu": 2000}, id="extended-milli"),
        pytest.param(
            {"hugepages-2Mi": "4Mi"}, 0, 0, {"hugepages-2Mi": 4 * MI * 1000}, id="hugepages"
        ),
        pytest.param({"requests.cpu": "1"}, 0, 0, {}, id="quota-name-skipped"),
        pytest.param({"cpu": "lots", "memory": "1Gi"}, 0, GI, {}, id="invalid-counts-zero"),
    ],
)
def test_requests(
    requests: dict[str, Any], cpu: float, memory: float, scalars: dict[str, float]
) -> None:
    task = task_from_pod(build_pod("ns", "p", containers=[container(requests)]))
    assert task.resreq.milli_cpu == cpu
    assert task.resreq.memory == memory
    assert task.resreq.scalars == {**scalars, "pods": 1.0}
    assert task.init_resreq is task.resreq


@pytest.mark.parametrize(
    ("containers", "init", "overhead", "cpu", "memory"),
    [
        pytest.param(
            [container({"cpu": "1", "memory": "1Gi"}), container({"cpu": "2", "memory": "1Gi"})],
            [],
            None,
            3000,
            2 * GI,
            id="containers-sum",
        ),
        pytest.param(
            [container({"cpu": "2", "memory": "1G"}), container({"cpu": "1", "memory": "1G"})],
            [container({"cpu": "2", "memory": "1G"}), container({"cpu": "2", "memory": "3G"})],
            None,
            3000,
            3 * 10**9,
            id="volcano-doc-example",
        ),
        pytest.param(
            [container({"cpu": "1"})],
            [container({"cpu": "4"})],
            None,
            4000,
            0,
            id="init-bigger",
        ),
        pytest.param(
            [container({"cpu": "1"})],
            [container({"cpu": "500m"}, restartPolicy="Always")],
            None,
            1500,
            0,
            id="sidecar-added",
        ),
        pytest.param(
            [container({"cpu": "1"})],
            [
                container({"cpu": "500m"}, restartPolicy="Always"),
                container({"cpu": "2"}),
            ],
            None,
            2500,
            0,
            id="init-after-sidecar-runs-beside-it",
        ),
        pytest.param(
            [container({"cpu": "1"})],
            [container({"cpu": "3"}), container({"cpu": "500m"}, restartPolicy="Always")],
            None,
            3000,
            0,
            id="init-before-sidecar",
        ),
        pytest.param(
            [container({"cpu": "1", "memory": "1Gi"})],
            [],
            {"cpu": "100m", "memory": "1Mi"},
            1100,
            GI + MI,
            id="overhead-added",
        ),
        pytest.param([container()], [], None, 0, 0, id="no-requests"),
        pytest.param([], [], None, 0, 0, id="no-containers"),
    ],
)
def test_init_containers_sidecars_and_overhead(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]],
    overhead: dict[str, str] | None,
    cpu: float,
    memory: float,
) -> None:
    pod = build_pod("ns", "p", containers=containers)
    if init:
        pod["spec"]["initContainers"] = init
    if overhead:
        pod["spec"]["overhead"] = overhead
    task = task_from_pod(pod)
    assert (task.resreq.milli_cpu, task.resreq.memory) == (cpu, memory)
    assert task.resreq.scalars["pods"] == 1.0
    assert task.best_effort == (cpu == 0 and memory == 0)


@pytest.mark.parametrize(
    ("spec_priority", "annotation", "priority", "pod_priority"),
    [
        pytest.param(None, None, 1, 0, id="defaults"),
        pytest.param(100, None, 100, 100, id="spec-priority"),
        pytest.param(0, None, 0, 0, id="spec-zero"),
        pytest.param(100, "7", 7, 100, id="annotation-overrides"),
        pytest.param(None, "-3", -3, 0, id="annotation-negative"),
        pytest.param(None, "+5", 5, 0, id="annotation-plus-sign"),
        pytest.param(100, "x", 100, 100, id="annotation-invalid"),
        pytest.param(100, "5_0", 100, 100, id="annotation-underscore-invalid"),
        pytest.param(100, " 5", 100, 100, id="annotation-space-invalid"),
        pytest.param(100, "3000000000", 100, 100, id="annotation-out-of-int32"),
    ],
)
def test_priority(
    spec_priority: int | None, annotation: str | None, priority: int, pod_priority: int
) -> None:
    annotations = {"volcano.sh/task-priority": annotation} if annotation is not None else {}
    task = task_from_pod(build_pod("ns", "p", priority=spec_priority, annotations=annotations))
    assert (task.priority, task.pod_priority) == (priority, pod_priority)


@pytest.mark.parametrize(
    ("annotation", "label", "expected"),
    [
        pytest.param(None, None, True, id="default-true"),
        pytest.param("false", None, False, id="annotation-false"),
        pytest.param("F", None, False, id="annotation-F"),
        pytest.param("0", "true", False, id="annotation-beats-label"),
        pytest.param("TRUE", None, True, id="annotation-TRUE"),
        pytest.param("yes", None, False, id="annotation-invalid-is-false"),
        pytest.param(None, "False", False, id="label-False"),
        pytest.param(None, "t", True, id="label-t"),
        pytest.param(None, "nope", False, id="label-invalid-is-false"),
    ],
)
def test_preemptable(annotation: str | None, label: str | None, expected: bool) -> None:
    annotations = {"volcano.sh/preemptable": annotation} if annotation is not None else {}
    labels = {"volcano.sh/preemptable": label} if label is not None else {}
    task = task_from_pod(build_pod("ns", "p", annotations=annotations, labels=labels))
    assert task.preemptable is expected


@pytest.mark.parametrize(
    ("annotations", "labels", "zone"),
    [
        pytest.param({}, {}, "", id="none"),
        pytest.param({"volcano.sh/revocable-zone": "*"}, {}, "*", id="star"),
        pytest.param({"volcano.sh/revocable-zone": "rz1"}, {}, "", id="named-zone-disables"),
        pytest.param(
            {"volcano.sh/revocable-zone": "", "volcano.sh/preemptable": "true"},
            {},
            "",
            id="zone-annotation-wins-over-preemptable",
        ),
        pytest.param({"volcano.sh/preemptable": "true"}, {}, "*", id="preemptable-annotation"),
        pytest.param({"volcano.sh/preemptable": "1"}, {}, "*", id="preemptable-annotation-1"),
        pytest.param({"volcano.sh/preemptable": "false"}, {}, "", id="preemptable-false"),
        pytest.param({"volcano.sh/preemptable": "bad"}, {}, "", id="preemptable-invalid"),
        pytest.param({}, {"volcano.sh/preemptable": "true"}, "", id="label-never-read"),
        pytest.param({}, {"volcano.sh/revocable-zone": "*"}, "", id="zone-label-never-read"),
    ],
)
def test_revocable_zone(annotations: dict[str, str], labels: dict[str, str], zone: str) -> None:
    task = task_from_pod(build_pod("ns", "p", annotations=annotations, labels=labels))
    assert task.revocable_zone == zone


@pytest.mark.parametrize(
    ("labels", "qos_class", "resources", "expected"),
    [
        pytest.param({"koordinator.sh/qosClass": "LSR"}, None, None, "LSR", id="label"),
        pytest.param({"koordinator.sh/qosClass": "BE"}, "Guaranteed", None, "BE", id="label-wins"),
        pytest.param({}, "BestEffort", {"requests": {"cpu": "1"}}, "BE", id="status-qosclass"),
        pytest.param({}, "Burstable", None, "LS", id="status-burstable"),
        pytest.param({}, None, {}, "BE", id="no-resources-is-best-effort"),
        pytest.param({}, None, {"requests": {"cpu": "0"}}, "BE", id="zero-request"),
        pytest.param({}, None, {"limits": {"memory": "1Gi"}}, "LS", id="limit-only"),
        pytest.param(
            {}, None, {"requests": {"nvidia.com/gpu": "1"}}, "BE", id="extended-only-is-best-effort"
        ),
        pytest.param({}, None, {"requests": {"cpu": "100m"}}, "LS", id="cpu-request"),
    ],
)
def test_qos(
    labels: dict[str, str],
    qos_class: str | None,
    resources: dict[str, Any] | None,
    expected: str,
) -> None:
    body: dict[str, Any] = {"name": "c", "image": "x"}
    if resources is not None:
        body["resources"] = resources
    pod = build_pod("ns", "p", labels=labels, containers=[body])
    if qos_class:
        pod["status"]["qosClass"] = qos_class
    assert task_from_pod(pod).qos == expected


def test_other_fields() -> None:
    pod = build_pod(
        "ns",
        "p",
        node="n1",
        owner_kind="ReplicaSet",
        started=at(2),
        grace=5,
        labels={"app": "web", "volcano.sh/task-spec": "worker"},
        annotations={"a": "b"},
    )
    pod["spec"]["nodeSelector"] = {"disk": "ssd"}
    pod["spec"]["tolerations"] = [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    pod["spec"]["priorityClassName"] = "high"
    pod["spec"]["affinity"] = {"nodeAffinity": {}}
    task = task_from_pod(pod)
    assert (task.uid, task.namespace, task.name, task.key) == ("ns-p", "ns", "p", "ns/p")
    assert task.job == "ns/p"  # no PodGroup: a job of one named after the pod
    assert task.owner_kind == "ReplicaSet"
    assert task.creation == T0 and task.start_time == at(2)
    assert task.grace_seconds == 5
    assert task.node_selector == {"disk": "ssd"}
    assert task.tolerations == [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]
    assert task.priority_class == "high"
    assert task.scheduler_name == "volcano"
    assert task.task_role == "worker"
    assert task.labels["app"] == "web" and task.annotations == {"a": "b"}
    assert task.affinity == {"nodeAffinity": {}}


@pytest.mark.parametrize(
    ("annotations", "labels", "role", "job"),
    [
        pytest.param({"scheduling.k8s.io/group-name": "pg"}, {}, "", "ns/pg", id="group"),
        pytest.param({"scheduling.k8s.io/group-name": ""}, {}, "", "ns/p", id="empty-group"),
        pytest.param(
            {"volcano.sh/task-spec": "ps"},
            {"volcano.sh/task-spec": "w"},
            "ps",
            "ns/p",
            id="role-annotation-first",
        ),
        pytest.param({}, {"volcano.sh/task-spec": "w"}, "w", "ns/p", id="role-label"),
    ],
)
def test_job_id_and_role(
    annotations: dict[str, str], labels: dict[str, str], role: str, job: str
) -> None:
    task = task_from_pod(build_pod("ns", "p", annotations=annotations, labels=labels))
    assert (task.task_role, task.job) == (role, job)


def test_defaults_for_missing_fields() -> None:
    pod = {"metadata": {"name": "bare"}}
    task = task_from_pod(pod)
    assert (task.namespace, task.status, task.grace_seconds, task.owner_kind) == (
        "default",
        S.UNKNOWN,
        30,
        "",
    )
    assert task.best_effort and task.qos == "BE" and task.preemptable
    assert task.creation is None and task.start_time is None


def test_pods_of_one_owner_share_equal_maps() -> None:
    a = task_from_pod(build_pod("ns", "a", owner_kind="ReplicaSet", labels={"app": "x"}))
    b_pod = build_pod("ns", "a", owner_kind="ReplicaSet", labels={"app": "x"})
    b = task_from_pod(b_pod)
    assert a.labels is b.labels
    b_pod["metadata"]["labels"] = {"app": "y"}
    c = task_from_pod(b_pod)
    assert c.labels == {"app": "y"} and a.labels == {"app": "x"}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", True),
        ("t", True),
        ("T", True),
        ("TRUE", True),
        ("true", True),
        ("True", True),
        ("0", False),
        ("f", False),
        ("F", False),
        ("FALSE", False),
        ("false", False),
        ("False", False),
        ("tRUE", None),
        ("yes", None),
        ("", None),
        (" true", None),
    ],
)
def test_go_parse_bool(text: str, value: bool | None) -> None:
    assert parse_bool(text) is value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("-2147483648", -(2**31)),
        ("2147483647", 2**31 - 1),
        ("2147483648", None),
        ("1.0", None),
        ("", None),
        ("0x10", None),
    ],
)
def test_go_parse_int32(text: str, value: int | None) -> None:
    assert parse_int32(text) == value
