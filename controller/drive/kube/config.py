"""Where the cluster is and who tide is to it: a kubeconfig context or a pod's service account.

Why apart from the client: loading decides which credentials a connection carries — the
static ones kubernetes-asyncio keeps in its ``Configuration``, or a token that expires and
is obtained again (:mod:`controller.drive.kube.credentials`) — and the client only sends
requests with what it is given.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config import incluster_config
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.exec_provider import ExecProvider
from kubernetes_asyncio.config.kube_config import KubeConfigLoader

from controller.drive.clock import Clock
from controller.drive.kube.credentials import BearerToken, ExecCredential, TokenFile

__all__ = ["KubeConfigError", "load_cluster", "load_configuration"]


class KubeConfigError(Exception):
    """No usable cluster configuration (the message names the file or the environment)."""


async def load_configuration(kubeconfig: Path | None, context: str | None) -> Configuration:
    """The client configuration of a cluster.

    An explicit ``kubeconfig`` (or ``context``) reads that file (or ``$KUBECONFIG`` /
    ``~/.kube/config``); with neither, a process inside a pod (``KUBERNETES_SERVICE_HOST``
    set, no ``$KUBECONFIG``) uses its service account, anything else the default kubeconfig.

    Raises:
        KubeConfigError: the file is missing or invalid, or the context is unknown.
    """
    configuration, _ = await load_cluster(kubeconfig, context)
    return configuration


async def load_cluster(
    kubeconfig: Path | None, context: str | None, *, clock: Clock | None = None
) -> tuple[Configuration, BearerToken | None]:
    """The configuration of a cluster (found as :func:`load_configuration` finds it) and
    its user's token when that token expires: the service account's token file in a pod,
    a kubeconfig ``exec`` plugin's token; None for a static token, a client certificate or
    no credentials, which the configuration holds.

    Args:
        kubeconfig: the kubeconfig file (None: ``$KUBECONFIG``, the default, or in-cluster).
        context: the kubeconfig context (None: its current context).
        clock: what the token's expiry is judged on (None: the wall clock).

    Raises:
        KubeConfigError: the file is missing or invalid, the context is unknown, or the
            exec plugin failed at start.
    """
    configuration = Configuration()
    in_cluster = "KUBERNETES_SERVICE_HOST" in os.environ and "KUBECONFIG" not in os.environ
    try:
        if kubeconfig is None and context is None and in_cluster:
            # the library's refresh hook re-reads the file on the wall clock, never on a 401
            kube_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration, try_refresh_token=False
            )
            configuration.api_key.pop("BearerToken", None)
            path = Path(incluster_config.SERVICE_TOKEN_FILENAME)
            return configuration, TokenFile(path, clock=clock)
        if kubeconfig is not None and not kubeconfig.is_file():
            raise KubeConfigError(f"{kubeconfig}: no such kubeconfig file")
        loader = await kube_config.load_kube_config(
            config_file=str(kubeconfig) if kubeconfig is not None else None,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (ConfigException, OSError) as exc:  # OSError: the exec plugin cannot be started
        where = str(kubeconfig) if kubeconfig is not None else "kubeconfig"
        raise KubeConfigError(f"{where}: {exc}") from None
    return configuration, _exec_credential(loader, configuration, clock)


def _exec_credential(
    loader: KubeConfigLoader, configuration: Configuration, clock: Clock | None
) -> ExecCredential | None:
    """The exec plugin's token, seeded with the one the library got when it loaded the
    kubeconfig (the library's own ``refresh_token`` helper reads ``loader._user`` too)."""
    user: Any = loader._user
    token = str(configuration.api_key.get("BearerToken") or "")
    if user is None or "exec" not in user or not token.startswith("Bearer "):
        return None  # no plugin, or one that gave a client certificate
    configuration.api_key.pop("BearerToken")
    expiry = getattr(loader, "exec_plugin_expiry", None)
    first = (token.removeprefix("Bearer "), expiry)
    return ExecCredential(ExecProvider(user["exec"]), first=first, clock=clock)
