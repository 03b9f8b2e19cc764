"""deploy/run/ for `tide run`: the second ClusterRole grants exactly the run code path's calls
(least privilege), and the Deployment runs two replicas with leader election and the
metrics endpoint on every interface.

What the run path calls is measured, not declared: tests/live/test_run_e2e.py compares
the `tide-run` role with the calls the API double recorded during a real `tide run`
(beyond the reads of `tide record`, whose ClusterRole is bound to the run account too;
tests/controller/drive/sources/test_record_e2e.py proves those). Every argument the Deployment
passes is parsed by the real command line here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import typer
import yaml

from controller.cli import app

DEPLOY = Path(__file__).resolve().parents[4] / "deploy"
RUN = DEPLOY / "run"
KUBERNETES = "1.33"
Grant = tuple[str, str, str]  # (API group, resource, verb)


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


def test_the_run_role_adds_only_writes_and_node_gets_to_the_record_role() -> None:
    assert not role("tide-run") & role("tide-record")
    reads = {g for g in role("tide-run") if g[2] in ("get", "list", "watch")}
    assert reads == {("", "nodes", "get"), ("coordination.k8s.io", "leases", "get")}
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


def test_every_deployment_argument_parses_with_the_real_command_line() -> None:
    [deployment] = docs("deployment.yaml")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: f"<{e['name']}>" for e in container["env"]}
    # the kubelet expands $(VAR) from the container's env
    args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in container["args"]]
    assert args[0] == "run"
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    run = command.commands["run"]
    context = run.make_context("run", args[1:])  # a wrong flag or value raises here
    given = {a.split("=")[0] for a in args[1:]}
    assert given <= {f"--{p.replace('_', '-')}" for p in context.params}
    assert context.params["leader_elect"] is True
    assert context.params["lease_namespace"] == "<POD_NAMESPACE>"
    assert context.params["metrics_address"] == "0.0.0.0"
    assert context.params["metrics_port"] == container["ports"][0]["containerPort"]
    assert str(context.params["log_format"]) == "json"
