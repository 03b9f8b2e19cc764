"""tide run as `kubectl apply -k deploy/` installs it (deploy/base/): its ClusterRole grants
exactly the run code path's calls beside the read-only tide-record role (least privilege),
and its Deployment campaigns for the Lease, serves /metrics, /healthz and /readyz on every
interface, and every argument it passes, in every install, parses with the real command line.

What the run path may call is enforced, not declared: the live tests (tests/live/conftest.py)
run `tide run` and its effector against an API double that authorizes every request with
these manifests as the `tide-run` account, as the apiserver's RBAC authorizer does
(tests/kuberbac.py), so a call the roles do not grant answers 403 and fails the test; the
tests below pin the double's authorizer to the real one's answers.
"""

from __future__ import annotations

import re
from typing import Any

import aiohttp
import pytest
import typer
import yaml

from controller.cli import app
from tests.deploy.render import APPLIED, DEPLOY, Doc, container, named, render
from tests.kubedouble import ApiDouble
from tests.kuberbac import Attributes, Rbac, record_rbac, run_rbac

Grant = tuple[str, str, str]  # (API group, resource, verb)
#: the installs that run tide run
RUNNING = tuple(d for d in APPLIED if d != "deploy/overlays/record")


def files(*names: str) -> list[Doc]:
    return [doc for name in names for doc in yaml.safe_load_all((DEPLOY / name).read_text())]


def role(name: str) -> set[Grant]:
    found = files("base/rbac-run.yaml", "common/rbac-record.yaml")
    [doc] = [d for d in found if d["kind"] == "ClusterRole" and d["metadata"]["name"] == name]
    return {
        (group, resource, verb)
        for rule in doc["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_run_role_adds_only_writes_and_gets_to_the_record_role() -> None:
    assert not role("tide-run") & role("tide-record")
    reads = {g for g in role("tide-run") if g[2] in ("get", "list", "watch")}
    assert reads == {
        ("", "nodes", "get"),
        ("", "pods", "get"),
        ("coordination.k8s.io", "leases", "get"),
    }
    assert {verb for _, _, verb in role("tide-record")} <= {"list", "watch"}


@pytest.mark.parametrize("role_name", ["tide-record", "tide-run"])
def test_the_run_account_holds_both_roles(role_name: str) -> None:
    docs = files("base/rbac-run.yaml")
    bindings = [d for d in docs if d["kind"] == "ClusterRoleBinding"]
    [binding] = [b for b in bindings if b["roleRef"]["name"] == role_name]
    [subject] = binding["subjects"]
    [account] = [d for d in docs if d["kind"] == "ServiceAccount"]
    assert (subject["name"], subject["namespace"]) == (
        account["metadata"]["name"],
        account["metadata"]["namespace"],
    )


def test_the_installed_run_is_one_replica_on_the_claim_with_leader_election() -> None:
    docs = render("deploy")
    deployment = named(docs, "Deployment", "tide-run")
    # one writer of the SQLite file: one replica, and never two during a rollout
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    spec = deployment["spec"]["template"]["spec"]
    box = container(docs, "tide-run")
    args = box["args"]
    assert args[0] == "run"
    assert "--leader-elect" in args and "--dry-run" in args
    assert "--metrics-address=0.0.0.0" in args
    assert spec["serviceAccountName"] == "tide-run"
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in box["env"]}
    assert env["POD_NAME"] == "metadata.name"  # the Lease's holderIdentity
    assert box["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert box["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert box["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    # the log is a file on the claim the install creates
    [claim] = [v for v in spec["volumes"] if "persistentVolumeClaim" in v]
    name = claim["persistentVolumeClaim"]["claimName"]
    assert named(docs, "PersistentVolumeClaim", name)["spec"]["accessModes"] == ["ReadWriteOnce"]
    mounts = {m["name"]: m["mountPath"] for m in box["volumeMounts"]}
    assert f"--log={mounts[claim['name']]}/tide.db" in args


def parsed(box: Doc) -> dict[str, Any]:
    """The run command's parameters from a container's args (a wrong flag or value raises)."""
    env = {e["name"]: f"<{e['name']}>" for e in box["env"]}
    # the kubelet expands $(VAR) from the container's env
    args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in box["args"]]
    assert args[0] == "run"
    command = typer.main.get_command(app)
    assert isinstance(command, typer.core.TyperGroup)
    run = command.get_command(typer.Context(command), "run")  # loaded when looked up
    assert run is not None
    context = run.make_context("run", args[1:])  # a wrong flag or value raises here
    given = {a.split("=")[0] for a in args[1:]}
    assert given <= {f"--{p.replace('_', '-')}" for p in context.params}
    return dict(context.params)


@pytest.mark.parametrize("directory", RUNNING)
def test_every_run_argument_parses_with_the_real_command_line(directory: str) -> None:
    box = container(render(directory), "tide-run")
    params = parsed(box)
    assert params["leader_elect"] is True
    assert params["lease_namespace"] == "<POD_NAMESPACE>"
    assert params["metrics_address"] == "0.0.0.0"
    assert params["metrics_port"] == box["ports"][0]["containerPort"]
    assert str(params["log_format"]) == "json"
    assert params["dry_run"] is (directory != "deploy/overlays/act")


# ---- the roles as the apiserver enforces them (tests/kuberbac.py) ---------------------


def test_the_run_account_may_read_the_pods_it_reconciles() -> None:
    rbac = run_rbac()
    assert rbac.user == "system:serviceaccount:tide:tide-run"
    # a decision found without an outcome on a start is reconciled by reading its pod
    assert rbac.allows(Attributes(rbac.user, "get", "", "v1", "pods", namespace="batch", name="p"))
    assert rbac.allows(
        Attributes(rbac.user, "create", "", "v1", "pods", "eviction", namespace="batch", name="p")
    )
    # and nothing of the sort is granted to the recorder
    record = record_rbac()
    assert record.user == "system:serviceaccount:tide:tide-record"
    asked = Attributes(record.user, "get", "", "v1", "pods", namespace="batch", name="p")
    assert not record.allows(asked)


# (request as the recorder's account, the apiserver's message)
DENIALS = [
    pytest.param(
        "GET",
        "/api/v1/namespaces/default/pods/x",
        'pods "x" is forbidden: User "system:serviceaccount:tide:tide-record" cannot get'
        ' resource "pods" in API group "" in the namespace "default"',
        {"name": "x", "kind": "pods"},
        id="namespaced-get",
    ),
    pytest.param(
        "GET",
        "/api/v1/nodes/n1",
        'nodes "n1" is forbidden: User "system:serviceaccount:tide:tide-record" cannot get'
        ' resource "nodes" in API group "" at the cluster scope',
        {"name": "n1", "kind": "nodes"},
        id="cluster-scoped-get",
    ),
    pytest.param(
        "POST",
        "/api/v1/namespaces/default/pods/x/eviction",
        'pods "x" is forbidden: User "system:serviceaccount:tide:tide-record" cannot create'
        ' resource "pods/eviction" in API group "" in the namespace "default"',
        {"name": "x", "kind": "pods"},
        id="subresource",
    ),
    pytest.param(
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/tide/leases",
        'leases.coordination.k8s.io is forbidden: User "system:serviceaccount:tide:tide-record"'
        ' cannot create resource "leases" in API group "coordination.k8s.io" in the namespace'
        ' "tide"',
        {"group": "coordination.k8s.io", "kind": "leases"},
        id="group-create",
    ),
]


@pytest.mark.parametrize(("method", "path", "message", "details"), DENIALS)
async def test_a_call_no_role_grants_answers_the_apiservers_403(
    double: ApiDouble, method: str, path: str, message: str, details: dict[str, str]
) -> None:
    double.rbac = record_rbac()
    headers = {"Authorization": "Bearer double-token"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, double.url + path, json={}, headers=headers) as answer,
    ):
        assert answer.status == 403
        body = await answer.json()
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }
    assert double.mutations == [] and double.forbidden == [message]
    double.forbidden.clear()  # provoked on purpose: the teardown's check fails on any other


async def test_what_the_role_grants_is_served_and_a_denial_fails_the_test(
    double: ApiDouble,
) -> None:
    double.rbac = record_rbac()
    double.create("pods", {"metadata": {"name": "x", "namespace": "default"}})
    async with aiohttp.ClientSession() as session:
        async with session.get(double.url + "/api/v1/pods") as answer:
            assert answer.status == 200  # list: granted
        async with session.get(double.url + "/api/v1/namespaces/default/pods/x") as answer:
            assert answer.status == 403  # get: not granted
    with pytest.raises(AssertionError, match="the deployed RBAC forbade: pods"):
        double.check()
    double.forbidden.clear()


def binding(kind: str, role: dict[str, str], namespace: str | None = None) -> dict[str, Any]:
    meta = {"name": "b"} | ({"namespace": namespace} if namespace else {})
    subjects = [{"kind": "ServiceAccount", "name": "sa", "namespace": "tide"}]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io"} | role,
        "subjects": subjects,
    }


def cluster_role(**rule: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "r"},
        "rules": [rule],
    }


SA = "system:serviceaccount:tide:sa"
RULES = [
    # (resources, verbs, resourceNames, the request: verb, resource, subresource; allowed):
    # RuleAllows of pkg/apis/rbac/v1/evaluation_helpers.go
    (["pods"], ["get"], [], ("get", "pods", ""), True),
    (["pods"], ["get"], [], ("list", "pods", ""), False),
    (["*"], ["*"], [], ("patch", "nodes", ""), True),
    # a resource does not grant its subresources, nor the other way
    (["pods"], ["*"], [], ("create", "pods", "eviction"), False),
    (["*/eviction"], ["create"], [], ("create", "pods", "eviction"), True),
    (["pods/status"], ["get"], [], ("get", "pods", ""), False),
    # resourceNames: only requests that name one of them (a list names none)
    (["pods"], ["get", "list"], ["x"], ("get", "pods", ""), True),
    (["pods"], ["get", "list"], ["x"], ("list", "pods", ""), False),
    (["pods"], ["get", "list"], ["y"], ("get", "pods", ""), False),
]


@pytest.mark.parametrize(("resources", "verbs", "names", "request_", "allowed"), RULES)
def test_rules_match_as_the_rbac_authorizer_matches(
    resources: list[str],
    verbs: list[str],
    names: list[str],
    request_: tuple[str, str, str],
    allowed: bool,
) -> None:
    verb, resource, subresource = request_
    rule = {"apiGroups": [""], "resources": resources, "verbs": verbs}
    role = cluster_role(**rule, **({"resourceNames": names} if names else {}))
    bound = binding("ClusterRoleBinding", {"kind": "ClusterRole", "name": "r"})
    rbac = Rbac.of([role, bound], user=SA)
    name = "" if verb == "list" else "x"
    asked = Attributes(SA, verb, "", "v1", resource, subresource, namespace="ns", name=name)
    assert rbac.allows(asked) is allowed


def test_a_role_binding_grants_only_in_its_namespace() -> None:
    role = {"kind": "ClusterRole", "name": "r"}
    docs = [cluster_role(apiGroups=[""], resources=["pods"], verbs=["get"])]
    rbac = Rbac.of([*docs, binding("RoleBinding", role, namespace="a")], user=SA)
    assert rbac.allows(Attributes(SA, "get", "", "v1", "pods", namespace="a", name="x"))
    assert not rbac.allows(Attributes(SA, "get", "", "v1", "pods", namespace="b", name="x"))
    assert not rbac.allows(Attributes(SA, "get", "", "v1", "pods", name="x"))  # cluster-wide
    # another account is not the binding's subject
    other = "system:serviceaccount:tide:other"
    assert not rbac.allows(Attributes(other, "get", "", "v1", "pods", namespace="a", name="x"))
