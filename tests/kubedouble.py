"""A Kubernetes API double: a small aiohttp server with the semantics tide relies on.

Why not the real thing or a generic emulator: the watch contract (resourceVersions that
grow, list-then-watch continuity, bookmarks, 410 once history is compacted) must be exact
and controllable, and faults must be injectable on cue (a dropped watch, 5xx, a slow
answer). The double keeps one global resourceVersion counter and an event history per
change, like etcd behind an API server; objects are changed through its Python methods
(``create`` / ``update`` / ``delete``), which emit watch events, or through the
subresources tide's effector uses (eviction honouring PodDisruptionBudgets, a uid
precondition and a grace period played out in ``grace_scale`` real seconds per second,
binding, node patches with a resourceVersion precondition, pod status patches, Events,
Leases). Every mutating call's answer is kept in ``mutations`` (what, key, status), so a
test can count the calls made for one object.

It FAILS LOUDLY: a request it has no route for is answered 500 and kept in
``unexpected``; :meth:`ApiDouble.check` (called by the fixture at teardown) raises if
there is any. Every request is kept in ``requests`` with the RBAC verb it needs, so a test
can prove what a ClusterRole must grant. With ``auth`` set it authenticates as the real one
does, before anything else (:class:`Authentication`: bearer tokens that expire, 401).

RBAC: given ``rbac`` (:class:`tests.kuberbac.Rbac`: the roles and bindings of the manifests a
test deploys and the identity its clients connect as), every request is authorized as the
real RBAC authorizer does, and one no rule grants answers 403 with the apiserver's
``Status``; it is kept in ``forbidden``, and :meth:`ApiDouble.check` raises on it too (a
test that provokes a denial on purpose empties the list).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiohttp import web

from tests.kubeauth import Authentication
from tests.kuberbac import Attributes, Rbac, forbidden_status

JSONObject = dict[str, Any]


@dataclass(frozen=True)
class Kind:
    """A collection the double serves."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool


KINDS: dict[str, Kind] = {
    k.plural: k
    for k in (
        Kind("", "v1", "nodes", "Node", False),
        Kind("", "v1", "pods", "Pod", True),
        Kind("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup", True),
        Kind("scheduling.volcano.sh", "v1beta1", "queues", "Queue", False),
        Kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
        Kind("coordination.k8s.io", "v1", "leases", "Lease", True),
    )
}
METRICS_KINDS = {"nodes": "NodeMetrics", "pods": "PodMetrics"}


@dataclass(frozen=True)
class Request:
    """A request the double received, with the RBAC terms it needs."""

    method: str
    path: str
    query: dict[str, str]
    verb: str
    group: str
    resource: str  # plural, or plural/subresource


@dataclass
class Route:
    """A request parsed against the API's URL grammar."""

    group: str
    version: str
    plural: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None


@dataclass
class Faults:
    """Faults to inject: ``fail`` the next requests whose path contains ``fail_match``
    (and whose method is ``fail_method``, when set) with ``fail_status`` (a 429 as API
    Priority and Fairness sends it: plain text and ``Retry-After: retry_after``; a 422 as a
    rejected JSON patch; a 5xx as a ``Status``, with the header when
    ``retry_after`` is set); ``delay`` every answer by that many seconds;
    ``close_watches``: end every watch at once, before any event (a server shedding load);
    ``compact_each_page``: compact the history after every page of a paged list, so every
    ``continue`` token has expired by the time it comes back."""

    fail: int = 0
    fail_status: int = 500
    fail_match: str = ""
    fail_method: str = ""
    retry_after: int | None = None
    delay: float = 0.0
    close_watches: bool = False
    compact_each_page: bool = False


#: kube-apiserver's answer to a throttled request (staging/src/k8s.io/apiserver/pkg/server/
#: filters/priority-and-fairness.go ``tooManyRequests``: ``http.Error`` with this text)
THROTTLED = "Too many requests, please try again later.\n"
#: a JSON patch whose ``test`` fails (handlers/patch.go ``applyJSPatch``:
#: ``NewGenericServerResponse(422, ...)``); the same body answers a malformed patch
PATCH_REJECTED = "the server rejected our request due to an error in our request"
#: pkg/registry/core/pod/storage/eviction.go, for a pod under several budgets
TWO_BUDGETS = (
    "Internal error occurred: This pod has more than one PodDisruptionBudget, which the"
    " eviction subresource does not support."
)
#: storage/etcd3: a ``continue`` token whose resourceVersion was compacted
CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can"
    " start a new list without the continue parameter."
)


def _status(code: int, reason: str, message: str, **extra: Any) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code}
    body |= {"reason": reason, "message": message, **extra}
    return web.json_response(body, status=code)


@dataclass
class ApiDouble:
    """The double's state (see the module docstring). Start it with :meth:`start`."""

    served: set[str] = field(default_factory=lambda: set(KINDS))
    metrics_served: bool = True
    bookmark_interval: float = 0.2
    faults: Faults = field(default_factory=Faults)
    objects: dict[str, dict[str, JSONObject]] = field(default_factory=dict)
    metrics: dict[str, dict[str, JSONObject]] = field(default_factory=dict)
    history: list[tuple[int, str, str, JSONObject]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    compacted_before: int = 0
    rv: int = 0
    #: real seconds per second of an eviction's grace period (0: a pod evicted is gone at once)
    grace_scale: float = 0.0
    #: every mutating call answered: (verb resource, object key, HTTP status)
    mutations: list[tuple[str, str, int]] = field(default_factory=list)
    #: core/v1 Events created, as sent
    events: list[JSONObject] = field(default_factory=list)
    #: bearer-token authentication (None: every request is anonymous and allowed)
    auth: Authentication | None = None
    #: the RBAC the requests are authorized against (None: every request is allowed)
    rbac: Rbac | None = None
    #: every request answered 403 by ``rbac``: the Status message
    forbidden: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._uids = itertools.count(1)
        #: set (and replaced) on every change: a watch waits on the one it saw last, so a
        #: change between its look at the history and its wait is never missed. Not an
        #: asyncio.Condition: on Python 3.11 a watch cancelled at teardown while waiting
        #: on one hung re-acquiring its lock (a CI run hung there)
        self._changed = asyncio.Event()
        self._watches: dict[int, web.Request] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ---- lifecycle --------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Listen on a free port of 127.0.0.1."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.1
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    async def stop(self) -> None:
        """Close every stream and stop listening."""
        self.drop_watches()
        if self._runner is not None:
            await self._runner.cleanup()

    def check(self) -> None:
        """Raise if any request was not one the double expects."""
        if self.unexpected:
            raise AssertionError(
                "the API double got unexpected requests: " + "; ".join(self.unexpected)
            )
        if self.forbidden:
            raise AssertionError("the deployed RBAC forbade: " + "; ".join(self.forbidden))

    def write_kubeconfig(
        self, path: Path, *, context: str = "double", user: JSONObject | None = None
    ) -> Path:
        """A kubeconfig whose context ``context`` points at the double, as ``user`` (a
        kubeconfig ``users[].user``; a static token by default)."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "double", "cluster": {"server": self.url}}],
            "users": [{"name": "tide", "user": user or {"token": "double-token"}}],
            "contexts": [{"name": context, "context": {"cluster": "double", "user": "tide"}}],
            "current-context": context,
        }
        path.write_text(yaml.safe_dump(config))
        return path

    # ---- changing the cluster ---------------------------------------------------------

    def create(self, plural: str, obj: JSONObject) -> JSONObject:
        """Store a new object (a uid and resourceVersion are assigned) and emit ADDED."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", f"uid-{next(self._uids)}")
        kind = KINDS[plural]
        obj.setdefault("apiVersion", f"{kind.group}/{kind.version}".lstrip("/"))
        obj.setdefault("kind", kind.kind)
        self.objects.setdefault(plural, {})[self._key(obj)] = obj
        return self._emit(plural, "ADDED", obj)

    def update(self, plural: str, obj: JSONObject) -> JSONObject:
        """Replace a stored object (its uid is kept) and emit MODIFIED."""
        obj = copy.deepcopy(obj)
        key = self._key(obj)
        old = self.objects[plural][key]
        obj["metadata"]["uid"] = old["metadata"]["uid"]
        obj.setdefault("apiVersion", old.get("apiVersion"))
        obj.setdefault("kind", old.get("kind"))
        self.objects[plural][key] = obj
        return self._emit(plural, "MODIFIED", obj)

    def delete(self, plural: str, key: str) -> JSONObject:
        """Remove an object and emit DELETED (its last state, at a new resourceVersion)."""
        obj = self.objects[plural].pop(key)
        return self._emit(plural, "DELETED", obj)

    def get(self, plural: str, key: str) -> JSONObject:
        """A stored object."""
        return self.objects[plural][key]

    def compact(self) -> None:
        """Forget the history: a watch from any version before now gets 410 Gone."""
        self.compacted_before = self.rv + 1
        self.history.clear()

    def drop_watches(self) -> None:
        """Cut every open watch connection, as a load balancer or a restart would."""
        for request in list(self._watches.values()):
            if request.transport is not None:
                request.transport.abort()
        self._watches.clear()

    def _key(self, obj: JSONObject) -> str:
        meta = obj["metadata"]
        return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]

    def _emit(self, plural: str, event: str, obj: JSONObject) -> JSONObject:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        self.history.append((self.rv, plural, event, copy.deepcopy(obj)))
        self._wake()
        return obj

    def _wake(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # ---- serving ----------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if self.auth is not None and (refused := self.auth.refuse(request)) is not None:
            if _verb(request, _parse(request.path)) is None:  # 401 first, and still loud
                self._unexpected(request, "no such route, and unauthenticated")
            return refused
        route = _parse(request.path)
        verb = _verb(request, route)
        if route is None or verb is None:
            return self._unexpected(request, "no such route")
        resource = route.plural + (f"/{route.subresource}" if route.subresource else "")
        self.requests.append(
            Request(request.method, request.path, dict(request.query), verb, route.group, resource)
        )
        if self.faults.delay:
            await asyncio.sleep(self.faults.delay)
        if (
            self.faults.fail
            and self.faults.fail_match in request.path
            and self.faults.fail_method in ("", request.method)
        ):
            self.faults.fail -= 1
            return self._fault()
        denied = self._authorize(request, route, verb)
        if denied is not None:
            return denied
        if route.group == "metrics.k8s.io":
            return self._metrics(request, route, verb)
        if route.plural == "events" and route.group == "" and verb == "create":
            if route.namespace is None or route.name is not None:
                return self._unexpected(request, "events: only namespaced creates")
            self.events.append(await request.json())
            return web.json_response({"kind": "Event", "apiVersion": "v1"}, status=201)
        kind = KINDS.get(route.plural)
        if kind is None or (kind.group, kind.version) != (route.group, route.version):
            return self._unexpected(request, "no such collection")
        if route.plural not in self.served:
            return _status(404, "NotFound", "the server could not find the requested resource")
        if verb in ("list", "watch") and route.namespace is None:
            if verb == "watch":
                return await self._watch(request, route.plural)
            return self._list(request, kind)
        return await self._object(request, route, verb)

    # ---- RBAC (tests/kuberbac.py) ------------------------------------------------------

    def _authorize(self, request: web.Request, route: Route, verb: str) -> web.Response | None:
        """None when ``rbac`` grants the request (or there is none), else the 403."""
        if self.rbac is None:
            return None
        asked = Attributes(
            user=self.rbac.identity(request.headers.get("Authorization", "")),
            verb=verb,
            group=route.group,
            version=route.version,
            resource=route.plural,
            subresource=route.subresource or "",
            namespace=route.namespace or "",
            name=route.name or "",
        )
        if self.rbac.allows(asked):
            return None
        body = forbidden_status(asked)
        self.forbidden.append(body["message"])
        return web.json_response(body, status=403, headers={"X-Content-Type-Options": "nosniff"})

    def _fault(self) -> web.Response:
        code, wait = self.faults.fail_status, self.faults.retry_after
        headers = {} if wait is None else {"Retry-After": str(wait)}
        if code == 429:
            return web.Response(
                status=429, text=THROTTLED, content_type="text/plain", headers=headers
            )
        if code == 422:
            answer = _status(422, "Invalid", PATCH_REJECTED, details={})
        else:
            answer = _status(code, "InternalError", f"injected fault {code}")
        answer.headers.update(headers)
        return answer

    def _unexpected(self, request: web.Request, why: str) -> web.Response:
        line = f"{request.method} {request.path_qs} ({why})"
        self.unexpected.append(line)
        return _status(500, "InternalError", f"kube double: unexpected request {line}")

    def _list(self, request: web.Request, kind: Kind) -> web.Response:
        items = [
            self.objects.get(kind.plural, {})[k] for k in sorted(self.objects.get(kind.plural, {}))
        ]
        token = request.query.get("continue") or ""
        listed_at, _, offset = token.partition(":")
        if token and int(listed_at) < self.compacted_before:
            return _status(410, "Expired", CONTINUE_EXPIRED)
        start = int(offset or 0)
        limit = int(request.query.get("limit") or 0) or len(items) or 1
        page = items[start : start + limit]
        meta: JSONObject = {"resourceVersion": str(self.rv)}
        if start + limit < len(items):
            meta["continue"] = f"{int(listed_at or self.rv)}:{start + limit}"
            if self.faults.compact_each_page:  # a busy cluster: writes, then compaction
                self.rv += 1
                self.compacted_before = self.rv
                self.history.clear()
        body = {"kind": f"{kind.kind}List", "apiVersion": "v1", "metadata": meta, "items": page}
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def _watch(self, request: web.Request, plural: str) -> web.StreamResponse:
        since = int(request.query.get("resourceVersion") or self.rv)
        if since < self.compacted_before:
            gone = {
                "type": "ERROR",
                "object": {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "code": 410,
                    "reason": "Expired",
                    "message": f"too old resource version: {since} ({self.rv})",
                },
            }
            return web.Response(body=orjson.dumps(gone) + b"\n", content_type="application/json")
        if self.faults.close_watches:
            return web.Response(body=b"", content_type="application/json")
        response = web.StreamResponse()
        response.content_type = "application/json"
        await response.prepare(request)
        timeout = float(request.query.get("timeoutSeconds") or 300)
        bookmarks = request.query.get("allowWatchBookmarks") == "true"
        self._watches[id(request)] = request
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while loop.time() < deadline and request.transport is not None:
                changed = self._changed  # before the look: a later change sets it
                for rv, what, event, obj in [h for h in self.history if h[0] > since]:
                    since = rv
                    if what == plural:
                        await response.write(orjson.dumps({"type": event, "object": obj}) + b"\n")
                if bookmarks:
                    mark = {"metadata": {"resourceVersion": str(max(since, self.rv))}}
                    await response.write(orjson.dumps({"type": "BOOKMARK", "object": mark}) + b"\n")
                wait = min(self.bookmark_interval, max(0.0, deadline - loop.time()))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), wait)
        except (ConnectionResetError, RuntimeError):
            return response
        finally:
            self._watches.pop(id(request), None)
        if request.transport is not None:
            await response.write_eof()
        return response

    def _metrics(self, request: web.Request, route: Route, verb: str) -> web.Response:
        if verb != "list" or route.plural not in METRICS_KINDS or route.namespace is not None:
            return self._unexpected(request, "metrics: only lists are served")
        if not self.metrics_served:
            return _status(404, "NotFound", "the server could not find the requested resource")
        items = [
            self.metrics.get(route.plural, {})[k]
            for k in sorted(self.metrics.get(route.plural, {}))
        ]
        body = {
            "kind": f"{METRICS_KINDS[route.plural]}List",
            "apiVersion": "metrics.k8s.io/v1beta1",
            "metadata": {},
            "items": items,
        }
        return web.Response(body=orjson.dumps(body), content_type="application/json")

    async def _object(self, request: web.Request, route: Route, verb: str) -> web.Response:
        answer = await self._answer(request, route, verb)
        if verb in ("create", "patch", "update", "delete"):
            key = f"{route.namespace}/{route.name}" if route.namespace else str(route.name)
            what = route.plural + (f"/{route.subresource}" if route.subresource else "")
            self.mutations.append((f"{verb} {what}", key, answer.status))
        return answer

    async def _answer(self, request: web.Request, route: Route, verb: str) -> web.Response:
        key = f"{route.namespace}/{route.name}" if route.namespace else str(route.name)
        store = self.objects.setdefault(route.plural, {})
        if route.subresource == "eviction" and verb == "create":
            return self._evict(key, await _body(request))
        if route.subresource == "binding" and verb == "create":
            return self._bind(key, await request.json())
        if route.subresource == "status" and verb == "patch" and route.plural == "pods":
            return self._patch_status(key, await request.json())
        if route.subresource is not None:
            return self._unexpected(request, f"subresource {route.subresource}")
        if verb == "get":
            if key not in store:
                return _status(404, "NotFound", f"{route.plural} {key!r} not found")
            return web.json_response(store[key])
        if verb == "patch" and route.plural == "nodes":
            return self._patch_node(key, await request.json(), request.content_type)
        if route.plural == "leases" and verb in ("create", "update"):
            return self._lease(route, verb, await request.json())
        return self._unexpected(request, f"{verb} on {route.plural}")

    def _evict(self, key: str, body: JSONObject) -> web.Response:
        pod = self.objects.get("pods", {}).get(key)
        if pod is None:
            return _status(404, "NotFound", f"pods {key!r} not found")
        options = body.get("deleteOptions") or {}
        uid = (options.get("preconditions") or {}).get("uid")
        if uid and uid != pod["metadata"]["uid"]:
            return _status(409, "Conflict", f"Precondition failed: UID in precondition: {uid}")
        if pod["metadata"].get("deletionTimestamp"):
            return web.json_response(
                {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 200}
            )
        budgets = self._pdbs_of(pod)
        if len(budgets) > 1:
            return _status(500, "InternalError", TWO_BUDGETS)
        for pdb in budgets:
            if int(pdb.get("status", {}).get("disruptionsAllowed", 1)) <= 0:
                name = pdb["metadata"]["name"]
                return _status(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    details={
                        "causes": [
                            {
                                "reason": "DisruptionBudget",
                                "message": f"The disruption budget {name} needs more healthy pods",
                            }
                        ]
                    },
                )
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = pod.get("spec", {}).get("terminationGracePeriodSeconds", 30)
        if self.grace_scale and grace:
            dying = copy.deepcopy(pod)
            dying["metadata"]["deletionTimestamp"] = "2000-01-01T00:00:00Z"
            dying["metadata"]["deletionGracePeriodSeconds"] = grace
            self.update("pods", dying)
            uid = pod["metadata"]["uid"]
            asyncio.get_running_loop().call_later(grace * self.grace_scale, self._gone, key, uid)
        else:
            self.delete("pods", key)
        return web.json_response(
            {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}, status=201
        )

    def _gone(self, key: str, uid: str) -> None:
        pod = self.objects.get("pods", {}).get(key)
        if pod is not None and pod["metadata"]["uid"] == uid:
            self.delete("pods", key)

    def _patch_status(self, key: str, patch: JSONObject) -> web.Response:
        pod = self.objects.get("pods", {}).get(key)
        if pod is None:
            return _status(404, "NotFound", f"pods {key!r} not found")
        pod = copy.deepcopy(pod)
        pod.setdefault("status", {}).update(patch.get("status") or {})
        return web.json_response(self.update("pods", pod))

    def _pdbs_of(self, pod: JSONObject) -> list[JSONObject]:
        labels = pod["metadata"].get("labels") or {}
        found = []
        for pdb in self.objects.get("poddisruptionbudgets", {}).values():
            if pdb["metadata"].get("namespace") != pod["metadata"].get("namespace"):
                continue
            wanted = (pdb.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
            if all(labels.get(k) == v for k, v in wanted.items()):
                found.append(pdb)
        return found

    def _bind(self, key: str, body: JSONObject) -> web.Response:
        pod = self.objects.get("pods", {}).get(key)
        if pod is None:
            return _status(404, "NotFound", f"pods {key!r} not found")
        if pod.get("spec", {}).get("nodeName"):
            return _status(409, "Conflict", f"pod {key} is already assigned to a node")
        pod = copy.deepcopy(pod)
        pod.setdefault("spec", {})["nodeName"] = body["target"]["name"]
        self.update("pods", pod)
        return web.json_response(
            {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}, status=201
        )

    def _patch_node(self, key: str, patch: Any, content_type: str) -> web.Response:
        node = self.objects.get("nodes", {}).get(key)
        if node is None:
            return _status(404, "NotFound", f"nodes {key!r} not found")
        node = copy.deepcopy(node)
        current = node["metadata"]["resourceVersion"]
        if content_type == "application/json-patch+json":
            for op in patch:
                if (
                    op["op"] == "test"
                    and op["path"] == "/metadata/resourceVersion"
                    and op["value"] != current
                ):
                    return _status(422, "Invalid", PATCH_REJECTED, details={})
                if op["op"] in ("add", "replace"):
                    *parents, last = op["path"].strip("/").split("/")
                    target = node
                    for part in parents:
                        target = target.setdefault(part, {})
                    target[last] = op["value"]
        else:
            wanted = (patch.get("metadata") or {}).get("resourceVersion")
            if wanted is not None and wanted != current:
                return _status(409, "Conflict", "the object has been modified")
            for section, values in patch.items():
                if section != "metadata" and isinstance(values, dict):
                    node.setdefault(section, {}).update(values)
        return web.json_response(self.update("nodes", node))

    def _lease(self, route: Route, verb: str, body: JSONObject) -> web.Response:
        store = self.objects.setdefault("leases", {})
        key = f"{route.namespace}/{body['metadata']['name']}"
        if verb == "create":
            if key in store:
                return _status(409, "AlreadyExists", f"leases {key!r} already exists")
            body["metadata"]["namespace"] = route.namespace
            return web.json_response(self.create("leases", body), status=201)
        if route.name != body["metadata"]["name"]:
            return _status(400, "BadRequest", f"leases {key!r}: the name does not match the URL")
        if key not in store:
            return _status(404, "NotFound", f"leases {key!r} not found")
        if body["metadata"].get("resourceVersion") != store[key]["metadata"]["resourceVersion"]:
            return _status(409, "Conflict", "the object has been modified")
        return web.json_response(self.update("leases", body))


async def _body(request: web.Request) -> JSONObject:
    """The JSON object a request carries ({} when it carries none)."""
    if not request.can_read_body:
        return {}
    body = await request.json()
    return body if isinstance(body, dict) else {}


def _parse(path: str) -> Route | None:
    """``/api/v1[/namespaces/NS]/PLURAL[/NAME[/SUB]]`` or the same under ``/apis/GROUP``."""
    parts = path.strip("/").split("/")
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    if not 1 <= len(rest) <= 3:
        return None
    return Route(group, version, rest[0], namespace, *rest[1:])


def _verb(request: web.Request, route: Route | None) -> str | None:
    if route is None:
        return None
    collection = route.name is None
    if request.method == "GET":
        if not collection:
            return "get"
        return "watch" if request.query.get("watch") in ("true", "1") else "list"
    verbs = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    return verbs.get(request.method)
