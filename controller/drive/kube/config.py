"""Where the cluster is and who tide is to it: a kubeconfig context or a pod's service account.

Why apart from the client: loading decides which credentials a connection carries — the
static ones kubernetes-asyncio keeps in its ``Configuration``, or a token that expires and
is obtained again (:mod:`controller.drive.kube.credentials`) — and the client only sends
requests with what it is given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
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
from controller.policy.framework.safe_yaml import load_yaml_text

#: where a kubeconfig is when nothing says otherwise (``kubectl``'s default)
DEFAULT_KUBECONFIG = "~/.kube/config"

__all__ = ["KubeConfigError", "check_kubeconfig", "load_cluster", "load_configuration"]


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
        if kubeconfig is not None and kubeconfig.is_dir():
            raise KubeConfigError(f"{kubeconfig}: is a directory, not a kubeconfig file")
        if kubeconfig is not None and not kubeconfig.is_file():
            raise KubeConfigError(f"{kubeconfig}: no such kubeconfig file")
        files = [kubeconfig] if kubeconfig is not None else _default_files()
        if len(files) == 1:
            check_kubeconfig(files[0], context)
        loader = await kube_config.load_kube_config(
            config_file=os.pathsep.join(str(f) for f in files),
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (ConfigException, OSError) as exc:  # OSError: the exec plugin cannot be started
        where = str(kubeconfig) if kubeconfig is not None else "kubeconfig"
        raise KubeConfigError(_one_line(f"{where}: {exc}")) from None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # a file it did not expect
        where = str(kubeconfig) if kubeconfig is not None else os.environ.get("KUBECONFIG", "")
        raise KubeConfigError(
            _one_line(f"{where or 'kubeconfig'}: not a usable kubeconfig ({exc})")
        ) from None
    return configuration, _exec_credential(loader, configuration, clock)


def _default_files() -> list[Path]:
    """The kubeconfig files of a process given none: ``$KUBECONFIG``'s (a list, merged in
    order by the library), else ``~/.kube/config``; exit 2 with one line when none exists
    (and not in a pod, which the caller has ruled out)."""
    listed = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    files = listed or [Path(os.path.expanduser(DEFAULT_KUBECONFIG))]
    if not any(f.is_file() for f in files):
        where = (
            f"$KUBECONFIG ({os.environ['KUBECONFIG']}) names no existing file"
            if listed
            else f"no --kubeconfig, $KUBECONFIG is unset or empty, there is no {files[0]}"
        )
        raise KubeConfigError(
            f"no cluster to talk to: {where}, and this is not a pod "
            "(KUBERNETES_SERVICE_HOST is unset); give --kubeconfig FILE"
        )
    return [f for f in files if f.is_file()]


def check_kubeconfig(path: Path, context: str | None) -> None:
    """Raise :class:`KubeConfigError` naming ``path`` and what is wrong when it is not a
    kubeconfig tide can use: not text, not YAML, not a mapping, no (such) current context,
    or a context whose cluster or user the file lacks, or a cluster without a server.

    The library would answer a YAML list with a ``TypeError`` and a parse error with the
    parser's own exception; this says it in one line first.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise KubeConfigError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    if not data.strip():
        raise KubeConfigError(f"{path}: is empty, not a kubeconfig")
    try:
        raw = load_yaml_text(data, where=str(path))
    except ValueError as exc:  # not UTF-8, not YAML, too large or deep: the message says
        raise KubeConfigError(f"{exc}, so not a kubeconfig") from None
    if not isinstance(raw, dict):
        raise KubeConfigError(f"{path}: is YAML but not a kubeconfig (not a mapping)")
    if "clusters" not in raw and "contexts" not in raw and "users" not in raw:
        keys = ", ".join(sorted(str(k) for k in raw)[:5]) or "none"
        raise KubeConfigError(
            f"{path}: is YAML but not a kubeconfig (no clusters, contexts or users; keys: {keys})"
        )
    name = context if context is not None else raw.get("current-context")
    if not name:
        raise KubeConfigError(f"{path}: has no current-context (give --context NAME)")
    found = _named(raw, "contexts", name)
    if found is None:
        raise KubeConfigError(f"{path}: has no context {name!r} in its contexts")
    ctx = found.get("context")
    ctx = ctx if isinstance(ctx, dict) else {}
    cluster = _named(raw, "clusters", ctx.get("cluster"))
    if cluster is None:
        raise KubeConfigError(
            f"{path}: context {name!r} names cluster {ctx.get('cluster')!r}, "
            "which its clusters do not have"
        )
    user = ctx.get("user")  # a context without a user is anonymous (kubectl allows it)
    if user and _named(raw, "users", user) is None:
        raise KubeConfigError(
            f"{path}: context {name!r} names user {user!r}, which its users do not have"
        )
    server = cluster.get("cluster")
    if not isinstance(server, dict) or not server.get("server"):
        raise KubeConfigError(f"{path}: cluster {ctx.get('cluster')!r} has no server")


def _named(raw: Mapping[str, object], section: str, name: object) -> Mapping[str, Any] | None:
    """The entry of ``raw[section]`` (a kubeconfig list of ``{name, ...}``) called ``name``."""
    entries = raw.get(section)
    if not isinstance(entries, list) or name is None:
        return None
    for entry in entries:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return None


def _one_line(text: str) -> str:
    return " ".join(text.split())


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
