"""Raw list / watch / get against the API double: JSON as served, errors as kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.drive.kube.client import KubeClient, KubeConfigError, load_configuration
from controller.drive.kube.errors import Gone, NotFound, ServerError, TransportError
from tests.builders import build_node, build_pod
from tests.kubedouble import ApiDouble


async def test_list_pages_through_a_large_collection(double: ApiDouble, client: KubeClient) -> None:
    for i in range(7):
        double.create("pods", build_pod("default", f"p{i}"))
    result = await client.list("/api/v1/pods", page=3)
    assert [p["metadata"]["name"] for p in result.items] == [f"p{i}" for i in range(7)]
    assert result.resource_version == "7"
    pages = [r for r in double.requests if r.verb == "list"]
    # a continue token carries the version the list started at (so compaction can expire it)
    assert [r.query.get("continue") for r in pages] == [None, "7:3", "7:6"]


async def test_watch_yields_raw_events_and_bookmarks_from_a_version(
    double: ApiDouble, client: KubeClient
) -> None:
    double.create("nodes", build_node("n1"))
    double.create("nodes", build_node("n2"))
    double.delete("nodes", "n1")
    seen = [
        (e.type, e.object["metadata"].get("name"), e.resource_version)
        async for e in client.watch("/api/v1/nodes", resource_version="1", timeout_seconds=1)
    ]
    assert seen[:2] == [("ADDED", "n2", "2"), ("DELETED", "n1", "3")]
    assert {s[0] for s in seen[2:]} == {"BOOKMARK"}


async def test_watch_from_a_compacted_version_is_gone(
    double: ApiDouble, client: KubeClient
) -> None:
    double.create("nodes", build_node("n1"))
    double.compact()
    with pytest.raises(Gone, match="too old resource version"):
        async for _ in client.watch("/api/v1/nodes", resource_version="0", timeout_seconds=1):
            pass


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/api/v1/nodes/missing", NotFound),
        ("/apis/scheduling.volcano.sh/v1beta1/queues", NotFound),
    ],
    ids=["missing-object", "missing-crd"],
)
async def test_absent_things_are_not_found(
    double: ApiDouble, client: KubeClient, path: str, kind: type[Exception]
) -> None:
    double.served.discard("queues")
    with pytest.raises(kind):
        await (client.get(path) if path.count("/") == 4 else client.list(path))


async def test_get_returns_the_stored_object(double: ApiDouble, client: KubeClient) -> None:
    double.create("nodes", build_node("n1"))
    got = await client.get("/api/v1/nodes/n1")
    assert got == double.get("nodes", "n1")


async def test_a_5xx_is_a_retriable_server_error(double: ApiDouble, client: KubeClient) -> None:
    double.faults.fail, double.faults.fail_status = 1, 503
    with pytest.raises(ServerError) as caught:
        await client.list("/api/v1/pods")
    assert caught.value.retriable and caught.value.status == 503
    assert (await client.list("/api/v1/pods")).items == []


async def test_a_slow_answer_is_a_transport_error(double: ApiDouble) -> None:
    double.faults.delay = 1.0
    async with KubeClient.for_host(double.url, request_timeout=0.2) as slow:
        with pytest.raises(TransportError):
            await slow.list("/api/v1/pods")


async def test_a_kubeconfig_context_points_the_client_at_its_server(
    double: ApiDouble, tmp_path: Path
) -> None:
    path = double.write_kubeconfig(tmp_path / "config", context="lab")
    configuration = await load_configuration(path, "lab")
    assert configuration.host == double.url
    async with await KubeClient.connect(path, "lab") as kube:
        assert (await kube.list("/api/v1/nodes")).items == []


@pytest.mark.parametrize(
    ("name", "context", "message"),
    [("absent", None, "no such kubeconfig file"), ("config", "nope", "nope")],
    ids=["missing-file", "unknown-context"],
)
async def test_a_bad_kubeconfig_is_one_line(
    double: ApiDouble, tmp_path: Path, name: str, context: str | None, message: str
) -> None:
    double.write_kubeconfig(tmp_path / "config")
    with pytest.raises(KubeConfigError, match=message):
        await load_configuration(tmp_path / name, context)
