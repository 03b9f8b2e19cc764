"""Bearer tokens that expire: a kubeconfig ``exec`` plugin's and the in-cluster service account's.

Why not kubernetes-asyncio's own refresh: the library runs an ``exec`` plugin once, when
it loads the kubeconfig (its ``refresh_token`` helper would poll it every minute on the wall
clock, but nothing runs it on a 401), and re-reads the in-cluster token file at most once a
minute through ``Configuration.refresh_api_key_hook``, never on a 401. A real cluster's
tokens expire (EKS, GKE and OIDC plugins hand out 15-minute tokens; the kubelet rotates the
projected service-account token file and the old token is rejected later), so tide does what
client-go does:

* an exec credential is cached until its ``status.expirationTimestamp``
  (``plugin/pkg/client/auth/exec``: ``getCreds`` / ``credsExpired``; no timestamp: cached
  until a 401), run again :data:`LEEWAY` before it (the leeway of client-go's
  ``transport.cachingTokenSource``; half the credential's life when it lives less than
  twice that), and after a 401 (``roundTripper.RoundTrip`` → ``maybeRefreshCreds``: only
  when no other request replaced it meanwhile);
* the in-cluster token file (``rest.InClusterConfig``'s ``BearerTokenFile``) is read again
  once its copy is :data:`FILE_PERIOD` less :data:`LEEWAY` old
  (``transport.NewCachedFileTokenSource``) and after a 401 (``ResetTokenOlderThan``); a
  failed periodic read keeps the token it has.

client-go hands the 401 to its caller and lets the next request carry the new credential;
:class:`~controller.drive.kube.client.KubeClient` retries the request once with it (a 401 is
an answer the server did nothing for, so resending is safe). A 401 for a credential obtained
because of a 401 is final — the plugin gives a token this server does not know, or the user
has no access — and the caller gets :class:`~controller.drive.kube.errors.Forbidden` as
before; so is a 401 when a fresh look gives the same token again.

kubernetes-asyncio still does what it does well: it parses the kubeconfig, runs the plugin
(``ExecProvider``: ``KUBERNETES_EXEC_INFO``, the apiVersion check, its error messages) and
reads the in-cluster host and CA; the client passes each request's token as the library's
per-request ``_request_auth``.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.exec_provider import ExecProvider

from controller.drive.clock import Clock, SystemClock
from controller.drive.kube.errors import KubeError

__all__ = [
    "FILE_PERIOD",
    "LEEWAY",
    "BearerToken",
    "CredentialError",
    "ExecCredential",
    "TokenFile",
]

log = logging.getLogger(__name__)

#: how long before a token is due it is obtained again (client-go cachingTokenSource.leeway)
LEEWAY = timedelta(seconds=10)
#: how long a token read from a file is trusted (client-go fileTokenSource.period: half the
#: time between the kubelet's refresh of a projected token, at 80% of its ten minutes, and
#: the old token's expiry)
FILE_PERIOD = timedelta(minutes=1)
#: how soon a failed periodic renewal is tried again while the old token is still good
RETRY_FAILED = timedelta(seconds=5)


class CredentialError(KubeError):
    """No token to send: the exec plugin failed, or the token file cannot be read. Retried
    as client-go's callers retry a failed request (the plugin's identity provider may be
    back the next time); a broken kubeconfig fails at start instead."""

    retriable = True


class BearerToken(ABC):
    """A bearer token obtained again when it is due and after a 401.

    Args:
        clock: tells the time; the wall clock unless a test passes its own.
    """

    def __init__(self, *, clock: Clock | None = None) -> None:
        self._clock = clock if clock is not None else SystemClock()
        self._lock = asyncio.Lock()
        self._token: str | None = None
        #: when to obtain it again (None: only after a 401)
        self._due: datetime | None = None
        #: until when the cached token is good without a renewal (None: unknown, keep it)
        self._good_until: datetime | None = None
        #: the cached token was obtained because of a 401: another 401 is final
        self._after_401 = False

    @abstractmethod
    async def _obtain(self) -> tuple[str, datetime | None, datetime | None]:
        """A new token, when to obtain the next one, and until when it is good.

        Raises:
            CredentialError: no token could be obtained.
        """

    async def token(self) -> str:
        """The token to send now (obtained first when there is none or it is due).

        Raises:
            CredentialError: none could be obtained, and none that is still good is cached.
        """
        if self._token is not None and not self._is_due():
            return self._token
        async with self._lock:
            if self._token is None:
                await self._renew()
            elif self._is_due():
                await self._renew_keeping()
            assert self._token is not None
            return self._token

    async def rejected(self, token: str) -> bool:
        """A request sent with ``token`` was answered 401: drop it and obtain another.

        Returns:
            Whether to send the request again: another token is cached now. False when
            ``token`` was itself obtained because of a 401, or a fresh look gives it again.

        Raises:
            CredentialError: no new token could be obtained.
        """
        async with self._lock:
            if self._token is not None and token != self._token:
                return True  # another request replaced it meanwhile
            if token == self._token and self._after_401:
                return False
            self._token = None  # never sent again, even if no new one comes
            await self._renew()
            self._after_401 = True
            return self._token != token

    def accepted(self, token: str) -> None:
        """A request sent with ``token`` was not refused: a later 401 may be an expiry."""
        if token == self._token:
            self._after_401 = False

    def _is_due(self) -> bool:
        return self._due is not None and self._clock.now() >= self._due

    async def _renew(self) -> None:
        self._token, self._due, self._good_until = await self._obtain()
        self._after_401 = False

    async def _renew_keeping(self) -> None:
        """A periodic renewal: a failure keeps the cached token while it is good."""
        now = self._clock.now()
        try:
            await self._renew()
        except CredentialError as exc:
            if self._good_until is not None and now >= self._good_until:
                self._token = None
                raise
            log.warning("%s; keeping the token already held", exc)
            retry = now + RETRY_FAILED
            self._due = retry if self._good_until is None else min(retry, self._good_until)


class ExecCredential(BearerToken):
    """The token of a kubeconfig ``users[].user.exec`` plugin, cached until it expires.

    Args:
        provider: kubernetes-asyncio's runner of the plugin.
        first: the token the library got when it loaded the kubeconfig, and its
            ``expirationTimestamp`` (None: the plugin gave none), so the plugin is not run
            twice at start; None runs the plugin on the first request.
        clock: tells the time.
    """

    def __init__(
        self,
        provider: ExecProvider,
        *,
        first: tuple[str, datetime | None] | None = None,
        clock: Clock | None = None,
    ) -> None:
        super().__init__(clock=clock)
        self._provider = provider
        if first is not None:
            self._token, expiry = first
            self._due, self._good_until = self._schedule(expiry), expiry

    async def _obtain(self) -> tuple[str, datetime | None, datetime | None]:
        try:
            status: Any = await self._provider.run()
        except (ConfigException, OSError) as exc:
            raise CredentialError(f"the kubeconfig's exec plugin: {exc}") from None
        token = status.get("token") if isinstance(status, dict) else None
        if not isinstance(token, str) or not token:
            raise CredentialError("the kubeconfig's exec plugin gave no token")
        stamp = status.get("expirationTimestamp")
        expiry = expiration(stamp) if stamp is not None else None
        return token, self._schedule(expiry), expiry

    def _schedule(self, expiry: datetime | None) -> datetime | None:
        if expiry is None:
            return None
        life = expiry - self._clock.now()
        return expiry - min(LEEWAY, max(life, timedelta(0)) / 2)


class TokenFile(BearerToken):
    """A token read from a file that is replaced under it: the projected service-account
    token of a pod (``/var/run/secrets/kubernetes.io/serviceaccount/token``).

    Args:
        path: the file.
        clock: tells the time.
    """

    def __init__(self, path: Path, *, clock: Clock | None = None) -> None:
        super().__init__(clock=clock)
        self.path = path

    async def _obtain(self) -> tuple[str, datetime | None, datetime | None]:
        try:
            token = self.path.read_text().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise CredentialError(f"the token file {self.path}: {exc}") from None
        if not token:
            raise CredentialError(f"the token file {self.path} is empty")
        return token, self._clock.now() + FILE_PERIOD - LEEWAY, None


def expiration(stamp: object) -> datetime:
    """An ExecCredential's ``status.expirationTimestamp`` (RFC 3339) as an aware time.

    Raises:
        CredentialError: it is not an RFC 3339 time with a zone.
    """
    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise CredentialError(f"the exec plugin's expirationTimestamp {stamp!r} is not RFC 3339")
    return when
