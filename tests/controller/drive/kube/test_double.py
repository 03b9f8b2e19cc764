"""The API double's write paths (what `tide run`'s effector will call) and its loudness:
eviction honouring PodDisruptionBudgets, binding, node patches with resourceVersion
preconditions, Leases, and a 500 plus a recorded failure for anything unexpected."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from tests.builders import build_node, build_pod
from tests.kubedouble import ApiDouble

JSON = dict[str, Any]


async def call(
    double: ApiDouble, method: str, path: str, body: Any = None, content_type: str = ""
) -> tuple[int, JSON]:
    headers = {"Content-Type": content_type} if content_type else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, double.url + path, json=body, headers=headers) as answer,
    ):
        return answer.status, await answer.json(content_type=None)


def cluster(double: ApiDouble) -> None:
    double.create("nodes", build_node("n1"))
    double.create("pods", build_pod("shop", "web-0", node="n1", labels={"app": "web"}))
    double.create("pods", build_pod("shop", "db-0", node="n1", labels={"app": "db"}))
    double.create("pods", build_pod("shop", "new", phase="Pending"))
    double.create(
        "poddisruptionbudgets",
        {
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": 1},
            "status": {"disruptionsAllowed": 0},
        },
    )


EVICT = {"apiVersion": "policy/v1", "kind": "Eviction"}


@pytest.mark.parametrize(
    ("pod", "status", "gone"),
    [("db-0", 201, True), ("web-0", 429, False), ("missing", 404, False)],
    ids=["allowed", "budget-forbids", "missing"],
)
async def test_eviction(double: ApiDouble, pod: str, status: int, gone: bool) -> None:
    cluster(double)
    code, body = await call(double, "POST", f"/api/v1/namespaces/shop/pods/{pod}/eviction", EVICT)
    assert code == status
    assert (f"shop/{pod}" not in double.objects["pods"]) is (gone or pod == "missing")
    if status == 429:
        assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
        assert "web" in body["details"]["causes"][0]["message"]
    if gone:
        assert double.history[-1][1:3] == ("pods", "DELETED")


async def test_binding_sets_the_node_once(double: ApiDouble) -> None:
    cluster(double)
    body = {"metadata": {"name": "new"}, "target": {"kind": "Node", "name": "n1"}}
    path = "/api/v1/namespaces/shop/pods/new/binding"
    assert (await call(double, "POST", path, body))[0] == 201
    assert double.get("pods", "shop/new")["spec"]["nodeName"] == "n1"
    assert (await call(double, "POST", path, body))[0] == 409


@pytest.mark.parametrize(
    ("content_type", "stale", "status"),
    [
        ("application/merge-patch+json", False, 200),
        ("application/merge-patch+json", True, 409),
        ("application/json-patch+json", False, 200),
        # a failed ``test`` op is 422 Invalid on a real apiserver (handlers/patch.go), not 409
        ("application/json-patch+json", True, 422),
    ],
    ids=["merge", "merge-stale", "json-patch", "json-patch-stale"],
)
async def test_node_patch_checks_the_resource_version(
    double: ApiDouble, content_type: str, stale: bool, status: int
) -> None:
    cluster(double)
    current = double.get("nodes", "n1")["metadata"]["resourceVersion"]
    version = "0" if stale else current
    taints = [{"key": "tide.io/pressure", "effect": "NoSchedule"}]
    if content_type.startswith("application/merge"):
        body: Any = {"metadata": {"resourceVersion": version}, "spec": {"taints": taints}}
    else:
        body = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": version},
            {"op": "replace", "path": "/spec/taints", "value": taints},
        ]
    code, _ = await call(double, "PATCH", "/api/v1/nodes/n1", body, content_type)
    assert code == status
    assert (double.get("nodes", "n1")["spec"].get("taints") == taints) is (status == 200)


async def test_leases_are_created_once_and_replaced_with_their_version(double: ApiDouble) -> None:
    base = "/apis/coordination.k8s.io/v1/namespaces/tide/leases"
    lease = {"metadata": {"name": "tide-leader"}, "spec": {"holderIdentity": "a"}}
    assert (await call(double, "GET", f"{base}/tide-leader"))[0] == 404
    code, created = await call(double, "POST", base, lease)
    assert code == 201
    assert (await call(double, "POST", base, lease))[0] == 409
    stale = {**created, "metadata": {**created["metadata"], "resourceVersion": "0"}}
    assert (await call(double, "PUT", f"{base}/tide-leader", stale))[0] == 409
    renewed = {**created, "spec": {"holderIdentity": "b"}}
    code, body = await call(double, "PUT", f"{base}/tide-leader", renewed)
    assert (code, body["spec"]["holderIdentity"]) == (200, "b")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("DELETE", "/api/v1/namespaces/shop/pods/web-0"),
        ("GET", "/version"),
        ("GET", "/apis/apps/v1/deployments"),
        ("GET", "/api/v1/namespaces/shop/pods"),
    ],
    ids=["delete-pod", "version", "unknown-collection", "namespaced-list"],
)
async def test_an_unexpected_request_fails_loudly(
    double: ApiDouble, method: str, path: str
) -> None:
    code, body = await call(double, method, path)
    assert code == 500
    assert "kube double: unexpected request" in body["message"]
    assert len(double.unexpected) == 1
    with pytest.raises(AssertionError, match="unexpected requests"):
        double.check()
    double.unexpected.clear()  # the fixture's own check would fail the test otherwise
