"""Raw list / watch / get and the effector's writes against the Kubernetes API.

They run on kubernetes-asyncio's connection.

Why raw: tide writes the API's JSON to the log as it came, and building the generated
models (``V1Pod``) costs ~10× the decode time on a large cluster, so every call passes
``_preload_content=False`` and parses the body with orjson. kubernetes-asyncio is used
for what it is good at — kubeconfig and in-cluster configuration, TLS, running an exec
plugin — through ``ApiClient.call_api``; bearer tokens that expire (an exec plugin's, the
in-cluster service account's) are obtained again when due and after a 401 by
:mod:`controller.drive.kube.credentials`, and a request refused with 401 is sent once more
with the new token. The watch stream is read line by line here, so that a 410 Gone
reaches the caller as :class:`~controller.drive.kube.errors.Gone` (the library's ``Watch``
retries once with the same stale version and never relists). This module and its package
are the only importers of ``kubernetes_asyncio`` (held by import-linter).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import orjson
from kubernetes_asyncio.client import ApiClient, Configuration

from controller.drive.clock import Clock
from controller.drive.kube.config import KubeConfigError, load_cluster, load_configuration
from controller.drive.kube.credentials import BearerToken
from controller.drive.kube.errors import Gone, ServerError, TransportError, error_for
from streams.gcpause import paused_gc
from streams.payloads import RawObject

__all__ = [
    "KubeClient",
    "KubeConfigError",
    "ListResult",
    "WatchEvent",
    "load_cluster",
    "load_configuration",
]

JSONObject = RawObject  # a Kubernetes object as raw JSON
JSONBody = JSONObject | list[JSONObject]
#: the page size of a list (the API server's chunking, ``limit`` + ``continue``)
PAGE = 500
_TRANSPORT = (aiohttp.ClientError, asyncio.TimeoutError, OSError)
_LEASES = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"


@dataclass(frozen=True, slots=True)
class ListResult:
    """The items of a (paginated) list and the resourceVersion to watch from."""

    items: list[JSONObject]
    resource_version: str


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One event of a watch stream: ``ADDED`` / ``MODIFIED`` / ``DELETED`` / ``BOOKMARK``
    and the raw object (a BOOKMARK's object holds only ``metadata.resourceVersion``)."""

    type: str
    object: JSONObject

    @property
    def resource_version(self) -> str:
        """The object's ``metadata.resourceVersion`` ("" when absent)."""
        meta = self.object.get("metadata")
        version = meta.get("resourceVersion") if isinstance(meta, dict) else None
        return version if isinstance(version, str) else ""


class _ExpiredContinue(Exception):
    """A page's ``continue`` token expired (410) in the middle of a paged list."""


class KubeClient:
    """Raw JSON calls on one API connection.

    Args:
        api: kubernetes-asyncio's ``ApiClient`` (closed by :meth:`close`).
        request_timeout: seconds a list or get may take before it is a transport error.
        credentials: the bearer token that expires, sent on every request and obtained
            again after a 401 (None: the configuration's own, or none).
    """

    def __init__(
        self,
        api: ApiClient,
        *,
        request_timeout: float = 60.0,
        credentials: BearerToken | None = None,
    ) -> None:
        self._api = api
        self._timeout = request_timeout
        self.credentials = credentials

    @classmethod
    async def connect(
        cls,
        kubeconfig: Path | None = None,
        context: str | None = None,
        *,
        clock: Clock | None = None,
    ) -> KubeClient:
        """A client of the cluster :func:`load_cluster` finds (``clock``: the time its
        credentials expire on; the wall clock unless a test passes its own)."""
        configuration, credentials = await load_cluster(kubeconfig, context, clock=clock)
        return cls(ApiClient(configuration), credentials=credentials)

    @classmethod
    def for_host(
        cls, host: str, *, request_timeout: float = 60.0, credentials: BearerToken | None = None
    ) -> KubeClient:
        """A client of the API at ``host`` (``http://127.0.0.1:PORT``), unauthenticated
        unless ``credentials`` are given."""
        api = ApiClient(Configuration(host=host))
        return cls(api, request_timeout=request_timeout, credentials=credentials)

    @property
    def host(self) -> str:
        """The API server's URL."""
        return str(self._api.configuration.host)

    async def close(self) -> None:
        """Close the connection pool."""
        await self._api.close()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def get(self, path: str) -> JSONObject:
        """``GET path`` as JSON (a :class:`~controller.drive.kube.errors.NotFound` when absent)."""
        response = await self._open("GET", path, [], self._timeout)
        return await _json(response, f"GET {path}")

    async def list(self, path: str, *, page: int = PAGE) -> ListResult:
        """Every item of a collection, page by page, and the list's resourceVersion.

        When a page's ``continue`` token has expired (410: the list outlasted the server's
        compaction window), the pages read so far are dropped and the collection is read
        once more in one request without ``limit`` — as client-go's pager does with
        ``FullListIfExpired`` (k8s.io/client-go/tools/pager) — so a list that always
        outlasts compaction still ends."""
        try:
            return await self._pages(path, page=page)
        except _ExpiredContinue:
            return await self._pages(path, page=0)

    async def _pages(self, path: str, *, page: int) -> ListResult:
        items: list[JSONObject] = []
        token = ""
        while True:
            query: list[tuple[str, str]] = [("limit", str(page))] if page else []
            if token:
                query.append(("continue", token))
            try:
                response = await self._open("GET", path, query, self._timeout)
            except Gone:
                if token:
                    raise _ExpiredContinue from None
                raise
            body = await _json(response, f"GET {path}")
            found = body.get("items") or []
            if not isinstance(found, list):
                raise ServerError(f"GET {path}", response.status, "items is not a list")
            items.extend(item for item in found if isinstance(item, dict))
            meta = body.get("metadata") or {}
            token = str(meta.get("continue") or "")
            if not token:
                return ListResult(items, str(meta.get("resourceVersion") or ""))

    async def watch(
        self,
        path: str,
        *,
        resource_version: str,
        timeout_seconds: int = 300,
        bookmarks: bool = True,
    ) -> AsyncIterator[WatchEvent]:
        """The events of ``path`` after ``resource_version``, until the server ends the
        stream (``timeout_seconds``) or the connection drops.

        Raises:
            Gone: the version is older than the server's history (relist).
            TransportError: the connection failed or stalled.
            KubeError: any other error answer or ERROR event.
        """
        what = f"WATCH {path}"
        query = [
            ("watch", "true"),
            ("resourceVersion", resource_version),
            ("allowWatchBookmarks", "true" if bookmarks else "false"),
            ("timeoutSeconds", str(timeout_seconds)),
        ]
        # the server ends the stream after timeout_seconds; a silent connection for
        # longer than that plus a margin is a dead one
        stall = aiohttp.ClientTimeout(connect=self._timeout, sock_read=timeout_seconds + 30)
        response = await self._open("GET", path, query, stall)
        try:
            async for line in _lines(response, what):
                yield _event(line, what)
        finally:
            response.release()

    # ---- mutating calls (``tide run``'s effector) ------------------------------------------

    async def send(
        self,
        method: str,
        path: str,
        body: JSONBody,
        *,
        content_type: str = "application/json",
        dry_run: bool = False,
    ) -> JSONObject:
        """``method path`` with a raw JSON ``body``; the answer as JSON.

        The generated client's models are never built (a Binding's answer is a Status the
        generated ``V1Binding`` mis-parses), hence ``_preload_content=False``. ``dry_run``
        asks the server to validate only (``dryRun=All``).

        Raises:
            KubeError: the error tree of :mod:`controller.drive.kube.errors` (404, 409, 429 ...).
        """
        query = [("dryRun", "All")] if dry_run else []
        response = await self._open(
            method, path, query, self._timeout, payload=body, content_type=content_type
        )
        return await _json(response, f"{method} {path}")

    async def evict(
        self, namespace: str, name: str, *, uid: str | None, grace_seconds: int | None
    ) -> JSONObject:
        """Create a ``policy/v1`` Eviction of a pod (PodDisruptionBudgets apply: 429).

        ``uid`` is a precondition (another incarnation of the name is not evicted);
        ``grace_seconds`` None leaves the pod's own termination grace period.
        """
        options: JSONObject = {}
        if grace_seconds is not None:
            options["gracePeriodSeconds"] = grace_seconds
        if uid:
            options["preconditions"] = {"uid": uid}
        body: JSONObject = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
        }
        if options:
            body["deleteOptions"] = options
        return await self.send("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body)

    async def bind(self, namespace: str, name: str, *, uid: str | None, node: str) -> JSONObject:
        """Create a pod's Binding to ``node`` (the scheduler's one write of a placement)."""
        meta: JSONObject = {"name": name, "namespace": namespace}
        if uid:
            meta["uid"] = uid
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": meta,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        return await self.send("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body)

    async def patch_node(self, name: str, ops: JSONBody) -> JSONObject:
        """A JSON patch of a node (``ops`` may start with a resourceVersion ``test``: 409)."""
        return await self.send(
            "PATCH", f"/api/v1/nodes/{name}", ops, content_type="application/json-patch+json"
        )

    async def patch_pod_status(self, namespace: str, name: str, status: JSONObject) -> JSONObject:
        """A merge patch of a pod's ``status`` subresource (``nominatedNodeName``)."""
        return await self.send(
            "PATCH",
            f"/api/v1/namespaces/{namespace}/pods/{name}/status",
            {"status": status},
            content_type="application/merge-patch+json",
        )

    async def create_event(self, namespace: str, event: JSONObject) -> JSONObject:
        """Create a core/v1 Event (what ``kubectl describe`` shows about an object)."""
        return await self.send("POST", f"/api/v1/namespaces/{namespace}/events", event)

    # ---- coordination.k8s.io/v1 Leases (leader election) ------------------------------

    async def get_lease(self, namespace: str, name: str) -> JSONObject:
        """The Lease ``namespace/name`` (:class:`~controller.drive.kube.errors.NotFound` if
        absent)."""
        return await self.get(f"{_LEASES.format(namespace=namespace)}/{name}")

    async def create_lease(self, namespace: str, lease: JSONObject) -> JSONObject:
        """Create a Lease (a :class:`~controller.drive.kube.errors.Conflict` when it exists)."""
        path = _LEASES.format(namespace=namespace)
        return await self.send("POST", path, lease)

    async def replace_lease(self, namespace: str, name: str, lease: JSONObject) -> JSONObject:
        """Replace a Lease; its ``metadata.resourceVersion`` is the precondition (a
        :class:`~controller.drive.kube.errors.Conflict` when someone changed it first)."""
        path = f"{_LEASES.format(namespace=namespace)}/{name}"
        return await self.send("PUT", path, lease)

    async def _open(
        self,
        method: str,
        path: str,
        query: Sequence[tuple[str, str]],
        timeout: float | aiohttp.ClientTimeout,
        *,
        payload: JSONBody | None = None,
        content_type: str | None = None,
    ) -> aiohttp.ClientResponse:
        what = f"{method} {path}"
        headers = {"Accept": "application/json"}
        if content_type is not None:
            headers["Content-Type"] = content_type

        async def call(token: str | None) -> aiohttp.ClientResponse:
            # the token, when there is one, in place of the configuration's
            auth = None
            if token is not None:
                auth = {"in": "header", "key": "authorization", "value": f"Bearer {token}"}
            try:
                answer: aiohttp.ClientResponse = await self._api.call_api(
                    path,
                    method,
                    query_params=list(query),
                    header_params=dict(headers),
                    body=payload,
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _request_timeout=timeout,
                    _request_auth=auth,  # type: ignore[arg-type]  # a dict, stubbed as str
                )
            except _TRANSPORT as exc:
                raise TransportError(what, 0, str(exc) or type(exc).__name__) from None
            return answer

        credentials = self.credentials
        token = await credentials.token() if credentials is not None else None
        response = await call(token)
        if credentials is not None and token is not None:
            if response.status == 401 and await credentials.rejected(token):
                await _drain(response)  # expired or rotated: once more, with the new one
                token = await credentials.token()
                response = await call(token)
            if response.status != 401:
                credentials.accepted(token)
        if 200 <= response.status < 300:
            return response
        try:
            body = await response.read()
        except _TRANSPORT:
            body = b""
        finally:
            response.release()
        message, reason, causes = _status(body)
        raise error_for(
            what,
            response.status,
            message,
            reason=reason,
            causes=causes,
            retry_after=retry_after(response.headers.get("Retry-After")),
        )


async def _drain(response: aiohttp.ClientResponse) -> None:
    """Read and release an answer that will not be used (the connection is reused)."""
    try:
        await response.read()
    except _TRANSPORT:
        pass
    finally:
        response.release()


async def _json(response: aiohttp.ClientResponse, what: str) -> JSONObject:
    try:
        raw = await response.read()
    except _TRANSPORT as exc:
        raise TransportError(what, 0, str(exc) or type(exc).__name__) from None
    finally:
        response.release()
    try:
        with paused_gc():  # a page of a list is ~100,000 objects and no cycles
            body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise ServerError(what, response.status, "the answer is not JSON") from None
    if not isinstance(body, dict):
        raise ServerError(what, response.status, "the answer is not a JSON object")
    return body


async def _lines(response: aiohttp.ClientResponse, what: str) -> AsyncIterator[bytes]:
    """The newline-separated documents of a chunked answer, however long each is."""
    pending = b""
    try:
        async for chunk in response.content.iter_any():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    yield line
    except _TRANSPORT as exc:
        raise TransportError(what, 0, str(exc) or type(exc).__name__) from None
    if pending.strip():
        yield pending


def _event(line: bytes, what: str) -> WatchEvent:
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise ServerError(what, 200, f"a watch line is not JSON: {line[:80]!r}") from None
    kind = document.get("type") if isinstance(document, dict) else None
    obj = document.get("object") if isinstance(document, dict) else None
    if not isinstance(kind, str) or not isinstance(obj, dict):
        raise ServerError(what, 200, f"a watch line lacks type or object: {line[:80]!r}")
    if kind == "ERROR":
        code = obj.get("code")
        message, reason, causes = _fields(obj)
        status = code if isinstance(code, int) else 500
        raise error_for(what, status, message, reason=reason, causes=causes)
    return WatchEvent(kind, obj)


def _status(body: bytes) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """The message, reason and causes of an error answer's body: a ``Status`` object, or
    plain text (API Priority and Fairness' 429 is ``Too many requests, please try again
    later.``)."""
    try:
        status = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:200].decode("utf-8", "replace").strip(), "", ()
    if not isinstance(status, dict):
        return "", "", ()
    return _fields(status)


def _fields(status: JSONObject) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    message = status.get("message")
    reason = status.get("reason")
    details = status.get("details")
    raw = details.get("causes") if isinstance(details, dict) else None
    causes = tuple(
        (str(cause.get("reason") or ""), str(cause.get("message") or ""))
        for cause in (raw if isinstance(raw, list) else ())
        if isinstance(cause, dict)
    )
    return (
        message if isinstance(message, str) else "",
        reason if isinstance(reason, str) else "",
        causes,
    )


def retry_after(header: str | None) -> float | None:
    """The seconds a ``Retry-After`` header asks for (the API server sends an integer; an
    HTTP-date or garbage is no wait asked, as client-go's ``retryAfterSeconds`` reads it)."""
    if header is None:
        return None
    try:
        seconds = int(header.strip())
    except ValueError:
        return None
    return float(seconds) if seconds >= 0 else None
