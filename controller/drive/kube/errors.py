"""The Kubernetes adapter's error tree: what went wrong with an API call, and whether to retry.

Callers above the adapter (sources, later the effector) decide on the *kind* of failure,
never on an HTTP status or a client library's exception type: a 410 means "relist", a 404
on a list means "this API is not served here" (a missing CRD), a 429 or a 5xx means "back
off and retry". Every error carries ``.retriable`` (the way client-go's
``k8s.io/apimachinery/pkg/api/errors`` predicates ``IsTooManyRequests`` /
``IsServerTimeout`` / ``IsInternalError`` are used by its retry helpers) and the request it
came from, so a one-line message can name it.
"""

from __future__ import annotations

__all__ = [
    "ClientError",
    "Conflict",
    "Forbidden",
    "Gone",
    "KubeError",
    "NotFound",
    "ServerError",
    "TooManyRequests",
    "TransportError",
    "error_for",
]


class KubeError(Exception):
    """Root of the adapter's errors: ``what`` is the request, ``status`` the HTTP status
    (0 when no response came), ``message`` the API server's own message when it sent one."""

    retriable = False

    def __init__(self, what: str, status: int = 0, message: str = "") -> None:
        detail = f": {message}" if message else ""
        super().__init__(f"{what}: HTTP {status}{detail}" if status else f"{what}{detail}")
        self.what = what
        self.status = status
        self.message = message


class TransportError(KubeError):
    """No answer: the connection failed, was dropped, or timed out."""

    retriable = True


class ClientError(KubeError):
    """A 4xx answer: the request itself is wrong or not allowed; retrying will not help."""


class NotFound(ClientError):
    """404: the object, or the whole API (a CRD that is not installed), does not exist."""


class Forbidden(ClientError):
    """401/403: the credentials may not do this (RBAC)."""


class Conflict(ClientError):
    """409: a precondition (resourceVersion) failed or the object already exists."""


class Gone(ClientError):
    """410: the resourceVersion asked for is older than the server's history; relist."""


class TooManyRequests(ClientError):
    """429: throttled, or an eviction a PodDisruptionBudget forbids; retry later."""

    retriable = True


class ServerError(KubeError):
    """A 5xx answer (or an unexpected status): the server failed; retry."""

    retriable = True


_BY_STATUS: dict[int, type[KubeError]] = {
    401: Forbidden,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    429: TooManyRequests,
}


def error_for(what: str, status: int, message: str = "") -> KubeError:
    """The error of an answer with ``status`` to the request ``what``."""
    kind = _BY_STATUS.get(status)
    if kind is None:
        kind = ClientError if 400 <= status < 500 else ServerError
    return kind(what, status, message)
