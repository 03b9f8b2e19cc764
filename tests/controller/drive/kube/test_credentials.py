"""Tokens that expire, against the API double's authentication: an exec plugin is run again
before its token expires and after a 401, the in-cluster token file is read again within a
minute and after a 401, and a 401 with a fresh token still fails.

Every instant is on a fake clock shared by tide's credentials and the double's token
checks; only the plugin runs for real.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import incluster_config

from controller.drive.clock import VirtualClock
from controller.drive.kube.client import KubeClient, KubeConfigError, load_cluster
from controller.drive.kube.credentials import CredentialError, ExecCredential, TokenFile
from controller.drive.kube.errors import Forbidden
from tests.controller.drive.kube.execplugin import ExecPlugin
from tests.kubeauth import Authentication
from tests.kubedouble import ApiDouble

#: the fake clock's start (seconds since the epoch)
BASE = 1_800_000_000.0
NODES = "/api/v1/nodes"


@pytest.fixture
def clock() -> VirtualClock:
    return VirtualClock(datetime.fromtimestamp(BASE, UTC))


def at(clock: VirtualClock, seconds: float) -> None:
    """Move the fake clock to ``seconds`` after its start."""
    clock.advance(datetime.fromtimestamp(BASE + seconds, UTC))


def authenticate(double: ApiDouble, clock: VirtualClock, ledger: Path | None) -> Authentication:
    double.auth = Authentication(ledger=ledger, now=lambda: clock.now().timestamp())
    return double.auth


def sent(auth: Authentication) -> list[tuple[str, bool]]:
    return [(p.token, p.accepted) for p in auth.presented]


async def exec_client(
    double: ApiDouble, tmp_path: Path, clock: VirtualClock, plugin: ExecPlugin
) -> KubeClient:
    kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig", user=plugin.user())
    return await KubeClient.connect(kubeconfig, "double", clock=clock)


# ---- exec plugins -----------------------------------------------------------------------


async def test_an_exec_token_is_cached_until_shortly_before_it_expires(
    double: ApiDouble, tmp_path: Path, clock: VirtualClock
) -> None:
    plugin = ExecPlugin(tmp_path, life=60, base=BASE)  # run n: good until BASE + 60 n
    auth = authenticate(double, clock, plugin.ledger)
    async with await exec_client(double, tmp_path, clock, plugin) as kube:
        assert plugin.runs == 1  # at load, by kubernetes-asyncio
        assert isinstance(kube.credentials, ExecCredential)
        await kube.list(NODES)
        at(clock, 45)  # 15 s left: more than the leeway
        await kube.list(NODES)
        assert plugin.runs == 1
        at(clock, 51)  # 9 s left: run again before it lapses
        await kube.list(NODES)
        at(clock, 111)
        async for _ in kube.watch(NODES, resource_version="0", timeout_seconds=1):
            break
    assert plugin.runs == 3
    assert sent(auth) == [
        ("exec-1", True),
        ("exec-1", True),
        ("exec-2", True),
        ("exec-3", True),
    ]


async def test_a_401_runs_the_plugin_again_and_sends_the_request_once_more(
    double: ApiDouble, tmp_path: Path, clock: VirtualClock
) -> None:
    plugin = ExecPlugin(tmp_path, life=900, base=BASE)
    auth = authenticate(double, clock, plugin.ledger)
    async with await exec_client(double, tmp_path, clock, plugin) as kube:
        await kube.list(NODES)
        auth.revoke("exec-1")  # long before its expiry: the identity provider revoked it
        await kube.list(NODES)
        await kube.list(NODES)
    assert plugin.runs == 2
    assert sent(auth) == [("exec-1", True), ("exec-1", False), ("exec-2", True), ("exec-2", True)]


async def test_a_401_with_a_fresh_exec_token_is_forbidden(
    double: ApiDouble, tmp_path: Path, clock: VirtualClock
) -> None:
    plugin = ExecPlugin(tmp_path, life=900, base=BASE)
    auth = authenticate(double, clock, None)  # the server knows none of its tokens
    async with await exec_client(double, tmp_path, clock, plugin) as kube:
        with pytest.raises(Forbidden) as caught:
            await kube.list(NODES)
    assert (caught.value.status, caught.value.message) == (401, "Unauthorized")
    assert plugin.runs == 2  # at load, then once after the 401; the retry's 401 is final
    assert sent(auth) == [("exec-1", False), ("exec-2", False)]


async def test_requests_at_once_run_the_plugin_once(
    double: ApiDouble, tmp_path: Path, clock: VirtualClock
) -> None:
    """Every source lists and watches at the same time: an expiry, or a 401 they all get,
    runs the plugin once, not once per request."""
    plugin = ExecPlugin(tmp_path, life=60, base=BASE)
    auth = authenticate(double, clock, plugin.ledger)
    async with await exec_client(double, tmp_path, clock, plugin) as kube:
        at(clock, 55)
        await asyncio.gather(*(kube.list(NODES) for _ in range(5)))
        assert plugin.runs == 2
        auth.revoke("exec-2")
        await asyncio.gather(*(kube.list(NODES) for _ in range(5)))
    assert plugin.runs == 3
    assert sent(auth)[:5] == [("exec-2", True)] * 5
    assert sorted(sent(auth)[5:]) == [("exec-2", False)] * 5 + [("exec-3", True)] * 5


async def test_a_plugin_that_cannot_start_is_a_one_line_config_error(
    double: ApiDouble, tmp_path: Path
) -> None:
    plugin = ExecPlugin(tmp_path, life=60)
    plugin.script.unlink()
    kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig", user=plugin.user())
    with pytest.raises(KubeConfigError, match="credential-plugin"):
        await KubeClient.connect(kubeconfig, "double")


async def test_a_plugin_failing_later_is_a_retriable_credential_error(
    double: ApiDouble, tmp_path: Path, clock: VirtualClock
) -> None:
    plugin = ExecPlugin(tmp_path, life=60, base=BASE)
    auth = authenticate(double, clock, plugin.ledger)
    async with await exec_client(double, tmp_path, clock, plugin) as kube:
        plugin.script.write_text("#!/bin/sh\necho 'identity provider unreachable' >&2\nexit 1\n")
        at(clock, 55)  # due, but still good: kept
        await kube.list(NODES)
        at(clock, 61)  # exec-1 has expired: there is no token to send
        with pytest.raises(CredentialError, match="identity provider unreachable") as caught:
            await kube.list(NODES)
    assert caught.value.retriable
    assert sent(auth) == [("exec-1", True)]


async def test_kubernetes_asyncio_runs_an_exec_plugin_once_and_never_again(
    double: ApiDouble, tmp_path: Path
) -> None:
    """What the library itself does (why tide caches and renews the token itself): the
    plugin runs when the kubeconfig is loaded, and nothing runs it again."""
    plugin = ExecPlugin(tmp_path, life=0.001)  # expired at once
    kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig", user=plugin.user())
    configuration = Configuration()
    await kube_config.load_kube_config(
        config_file=str(kubeconfig), client_configuration=configuration, persist_config=False
    )
    assert configuration.refresh_api_key_hook is None
    for _ in range(3):
        settings = await configuration.auth_settings()
        assert settings["BearerToken"]["value"] == "Bearer exec-1"
    assert plugin.runs == 1


# ---- the in-cluster service-account token --------------------------------------------------


@pytest.fixture
def pod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A pod's environment: the service host and port, and the service-account files."""
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("sa-1\n")
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    yield token


async def in_cluster_client(double: ApiDouble, clock: VirtualClock) -> KubeClient:
    """A client configured as in a pod, pointed at the double (plain HTTP, no CA)."""
    configuration, credentials = await load_cluster(None, None, clock=clock)
    assert configuration.refresh_api_key_hook is None  # the library's own hook is off
    configuration.host, configuration.ssl_ca_cert = double.url, None
    return KubeClient(ApiClient(configuration), credentials=credentials)


async def test_a_rotated_token_file_is_read_before_the_old_token_is_rejected(
    double: ApiDouble, clock: VirtualClock, pod: Path
) -> None:
    """The kubelet writes a new token at 80% of the old one's life (ten minutes at least),
    so the old one stays good two minutes or more; here only one, and tide, reading the file
    every 50 s, never sends a token after the server stopped accepting it."""
    auth = authenticate(double, clock, None)
    auth.accept("sa-1")
    rotations = {100: "sa-2", 230: "sa-3", 233: "sa-4"}  # a kubelet may rotate twice at once
    revoked: dict[str, float] = {}
    async with await in_cluster_client(double, clock) as kube:
        assert isinstance(kube.credentials, TokenFile) and kube.credentials.path == pod
        current = "sa-1"
        for second in range(0, 420):
            at(clock, second)
            if second in rotations:
                new = rotations[second]
                auth.accept(new)
                pod.write_text(new + "\n")
                revoked[current] = second + 60
                current = new
            for token, when in revoked.items():
                if second == when:
                    auth.revoke(token)
            if second % 3 == 0:
                await kube.list(NODES)
    assert [p.token for p in auth.presented if not p.accepted] == []
    first = {p.token: p.at - BASE for p in reversed(auth.presented)}
    assert first["sa-2"] <= 100 + 50 + 3 and first["sa-4"] <= 233 + 50 + 3
    assert "sa-3" not in first or first["sa-3"] < 233 + 3  # replaced before it was read


async def test_a_token_rotated_and_rejected_at_once_is_read_again_after_the_401(
    double: ApiDouble, clock: VirtualClock, pod: Path
) -> None:
    auth = authenticate(double, clock, None)
    auth.accept("sa-1")
    async with await in_cluster_client(double, clock) as kube:
        await kube.list(NODES)
        pod.write_text("sa-2")
        auth.accept("sa-2")
        auth.revoke("sa-1")
        at(clock, 1)
        await kube.list(NODES)
        await kube.list(NODES)
    assert sent(auth) == [("sa-1", True), ("sa-1", False), ("sa-2", True), ("sa-2", True)]


async def test_a_401_when_the_token_file_holds_the_same_token_is_forbidden(
    double: ApiDouble, clock: VirtualClock, pod: Path
) -> None:
    auth = authenticate(double, clock, None)  # the server does not know sa-1
    async with await in_cluster_client(double, clock) as kube:
        with pytest.raises(Forbidden) as caught:
            await kube.list(NODES)
    assert caught.value.status == 401
    assert sent(auth) == [("sa-1", False)]  # read again, the same: not sent twice


async def test_an_unreadable_token_file_keeps_the_token_already_read(
    double: ApiDouble, clock: VirtualClock, pod: Path
) -> None:
    auth = authenticate(double, clock, None)
    auth.accept("sa-1")
    async with await in_cluster_client(double, clock) as kube:
        await kube.list(NODES)
        pod.unlink()  # a volume being remounted
        at(clock, 120)
        await kube.list(NODES)
        pod.write_text("sa-2")
        auth.accept("sa-2")
        at(clock, 130)  # read again 5 s after the failed read
        await kube.list(NODES)
    assert sent(auth) == [("sa-1", True), ("sa-1", True), ("sa-2", True)]


async def test_kubernetes_asyncio_reads_the_token_file_again_only_by_the_minute(
    pod: Path,
) -> None:
    """What the library itself does: its hook re-reads the file once a minute of the wall
    clock has passed, and nothing makes it read sooner (a 401 does not)."""
    configuration = Configuration()
    kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    assert configuration.refresh_api_key_hook is not None
    pod.write_text("sa-2")
    key = await configuration.get_api_key_with_prefix("BearerToken")
    assert key == "Bearer sa-1\n"  # the rotated-out token, and its newline, for up to a minute
    assert timedelta(minutes=1) == incluster_config.TOKEN_REFRESH_PERIOD


async def test_a_static_kubeconfig_token_is_sent_and_its_401_is_final(
    double: ApiDouble, tmp_path: Path, clock: VirtualClock
) -> None:
    """A token written in the kubeconfig never changes: nothing to renew, no second try."""
    auth = authenticate(double, clock, None)
    auth.accept("double-token")
    kubeconfig = double.write_kubeconfig(tmp_path / "kubeconfig")
    async with await KubeClient.connect(kubeconfig, "double", clock=clock) as kube:
        assert kube.credentials is None
        await kube.list(NODES)
        auth.revoke("double-token")
        with pytest.raises(Forbidden):
            await kube.list(NODES)
    assert sent(auth) == [("double-token", True), ("double-token", False)]


# ---- the double's authentication itself ----------------------------------------------------

UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


async def test_the_double_answers_401_for_a_missing_unknown_or_expired_token(
    double: ApiDouble, clock: VirtualClock
) -> None:
    auth = authenticate(double, clock, None)
    auth.accept("good", until=BASE + 10)
    auth.accept("old", until=BASE - 1)
    answers = []
    async with aiohttp.ClientSession() as session:
        for header in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Bearer old"}):
            async with session.get(double.url + NODES, headers=header) as answer:
                answers.append((answer.status, await answer.json()))
        async with session.get(double.url + NODES, headers={"Authorization": "Bearer good"}) as ok:
            assert ok.status == 200
        async with session.get(double.url + "/healthz") as bogus:  # no route, no token
            assert bogus.status == 401
    assert answers == [(401, UNAUTHORIZED)] * 3
    assert sent(auth) == [("", False), ("nope", False), ("old", False), ("good", True), ("", False)]
    assert [r.path for r in double.requests] == [NODES]  # a refused request is never authorized
    assert double.unexpected == ["GET /healthz (no such route, and unauthenticated)"]
    double.unexpected.clear()
