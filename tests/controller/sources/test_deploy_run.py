"""deploy/run/ for `tide run`: the second ClusterRole grants exactly the run code path's calls
(least privilege), and the Deployment runs two replicas with leader election and the
metrics endpoint on every interface.

What the run path calls: the reads of `tide record` (its ClusterRole, bound to the run
account too; tests/controller/sources/test_record_e2e.py proves them), the leader
election's Lease calls, measured here against the API double, and the effector's writes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from controller.kube.client import KubeClient
from controller.kube.lease import LeaseElector
from tests.kubedouble import ApiDouble

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
RUN = DEPLOY / "run"
KUBERNETES = "1.33"
Grant = tuple[str, str, str]  # (API group, resource, verb)

#: the effector's writes: Eviction API, Binding subresource, node taints by patch, the
#: preemptor's nomination on the pod's status, Kubernetes Events on what it acts on
EFFECTOR: set[Grant] = {
    ("", "pods/eviction", "create"),
    ("", "pods/binding", "create"),
    ("", "nodes", "patch"),
    ("", "pods/status", "patch"),
    ("", "events", "create"),
}


def docs(name: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((RUN / name).read_text()))


def role(name: str) -> set[Grant]:
    found = [*docs("rbac.yaml"), *yaml.safe_load_all((DEPLOY / "rbac-record.yaml").read_text())]
    [doc] = [d for d in found if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
    return {
        (group, resource, verb)
        for rule in doc["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


MANIFESTS = [
    pytest.param(doc, id=f"{path.name}:{doc['kind']}/{doc['metadata']['name']}")
    for path in sorted(RUN.glob("*.yaml"))
    if path.name != "kustomization.yaml"
    for doc in yaml.safe_load_all(path.read_text())
]


@pytest.mark.parametrize("doc", MANIFESTS)
def test_every_run_manifest_validates_against_the_kubernetes_schema(doc: dict[str, Any]) -> None:
    kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_run_kustomization_lists_every_manifest() -> None:
    listed = yaml.safe_load((RUN / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(
        p.name for p in RUN.glob("*.yaml") if p.name != "kustomization.yaml"
    )


def test_the_run_deployment_uses_the_shared_configuration() -> None:
    [deployment] = docs("deployment.yaml")
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    config = yaml.safe_load((DEPLOY / "configmap.yaml").read_text())
    assert {"name": "config", "configMap": {"name": config["metadata"]["name"]}} in volumes
    assert deployment["metadata"]["namespace"] == config["metadata"]["namespace"]


async def lease_calls(double: ApiDouble) -> set[Grant]:
    """Every call leader election makes: create, lose, take over, renew, release."""
    async with (
        KubeClient.for_host(double.url, request_timeout=5) as one,
        KubeClient.for_host(double.url, request_timeout=5) as two,
    ):
        a, b = (
            LeaseElector(
                kube,
                name="tide-leader",
                namespace="tide",
                identity=identity,
                lease_duration=1.0,
                renew_deadline=0.6,
                retry_period=0.05,
            )
            for kube, identity in ((one, "a"), (two, "b"))
        )
        assert await a.try_acquire_or_renew()  # create
        assert not await b.try_acquire_or_renew()  # a live lease of another
        assert await a.try_acquire_or_renew()  # renew (update)
        noop = asyncio.Event()

        async def nothing() -> None:
            noop.set()

        task = asyncio.create_task(a.run(nothing, nothing))
        await asyncio.wait_for(noop.wait(), 2)
        await a.release()  # update: holder emptied
        task.cancel()
        assert await b.try_acquire_or_renew()  # takeover (update)
    return {(r.group, r.resource, r.verb) for r in double.requests}


async def test_the_run_role_grants_exactly_the_run_path_writes(double: ApiDouble) -> None:
    used = await lease_calls(double)
    assert used == {
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
    }
    assert role("tide-run") == used | EFFECTOR


def test_the_run_role_adds_only_writes_to_the_record_role() -> None:
    assert not role("tide-run") & role("tide-record")
    assert {verb for _, _, verb in role("tide-record")} <= {"list", "watch"}


@pytest.mark.parametrize("role_name", ["tide-record", "tide-run"])
def test_the_run_account_holds_both_roles(role_name: str) -> None:
    bindings = [d for d in docs("rbac.yaml") if d["kind"] == "ClusterRoleBinding"]
    [binding] = [b for b in bindings if b["roleRef"]["name"] == role_name]
    [subject] = binding["subjects"]
    [account] = [d for d in docs("rbac.yaml") if d["kind"] == "ServiceAccount"]
    assert (subject["name"], subject["namespace"]) == (
        account["metadata"]["name"],
        account["metadata"]["namespace"],
    )


def test_the_run_deployment_elects_a_leader_among_two_replicas() -> None:
    [deployment] = docs("deployment.yaml")
    assert deployment["spec"]["replicas"] == 2
    spec = deployment["spec"]["template"]["spec"]
    [container] = spec["containers"]
    args = container["args"]
    assert args[0] == "run"
    assert "--leader-elect" in args
    assert "--metrics-address=0.0.0.0" in args
    assert spec["serviceAccountName"] == "tide-run"
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container["env"]}
    assert env["POD_NAME"] == "metadata.name"  # the Lease's holderIdentity
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # two replicas read one log: not a SQLite file
    [log] = [a for a in args if a.startswith("--log=")]
    assert log.startswith("--log=kafka://")
