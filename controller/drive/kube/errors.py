"""The Kubernetes adapter's error tree: what went wrong with an API call, and whether to retry.

Callers above the adapter (sources, later the effector) decide on the *kind* of failure,
never on an HTTP status or a client library's exception type: a 410 means "relist", a 404
on a list means "this API is not served here" (a missing CRD), a 429 or a 5xx means "back
off and retry". Every error carries ``.retriable`` (the way client-go's
``k8s.io/apimachinery/pkg/api/errors`` predicates ``IsTooManyRequests`` /
``IsServerTimeout`` / ``IsInternalError`` are used by its retry helpers) and the request it
came from, so a one-line message can name it.

What a real kube-apiserver answers, and how it lands here (read from kubernetes/kubernetes:
``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go``,
``.../server/filters/priority-and-fairness.go``, ``pkg/registry/core/pod/storage/eviction.go``,
``staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go``):

* a JSON patch whose ``test`` op fails is **422** ``Invalid`` ("the server rejected our
  request due to an error in our request"), never 409: :class:`Invalid` — the same answer as
  a malformed patch, so the caller re-reads the object to tell the two apart;
* API Priority and Fairness throttles with **429**, a ``Retry-After`` header and a plain-text
  body; an eviction a PodDisruptionBudget forbids is also **429**, a ``Status`` whose
  ``details.causes`` name the ``DisruptionBudget``: :attr:`TooManyRequests.budget` tells them
  apart, and :attr:`KubeError.retry_after` carries the header on every error;
* a pod under more than one PodDisruptionBudget is refused with **500** ``InternalError``
  ("This pod has more than one PodDisruptionBudget, which the eviction subresource does not
  support"): a permanent condition, :class:`PermanentServerError`, not retried;
* an expired ``continue`` token of a paged list is **410** ``Expired``: :class:`Gone`, whose
  ``reason`` the pager reads.
"""

from __future__ import annotations

__all__ = [
    "ClientError",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeError",
    "NotFound",
    "PermanentServerError",
    "ServerError",
    "TooManyRequests",
    "TransportError",
    "error_for",
]


class KubeError(Exception):
    """Root of the adapter's errors: ``what`` is the request, ``status`` the HTTP status
    (0 when no response came), ``message`` the API server's own message when it sent one,
    ``reason`` its ``Status.reason`` (``Expired``, ``Invalid``...), ``causes`` the
    ``(reason, message)`` pairs of its ``details.causes``, and ``retry_after`` the seconds
    its ``Retry-After`` header asked the client to wait (None: no header)."""

    retriable = False

    def __init__(
        self,
        what: str,
        status: int = 0,
        message: str = "",
        *,
        reason: str = "",
        causes: tuple[tuple[str, str], ...] = (),
        retry_after: float | None = None,
    ) -> None:
        detail = f": {message}" if message else ""
        super().__init__(f"{what}: HTTP {status}{detail}" if status else f"{what}{detail}")
        self.what = what
        self.status = status
        self.message = message
        self.reason = reason
        self.causes = causes
        self.retry_after = retry_after


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
    """410: the resourceVersion asked for is older than the server's history (relist), or a
    list's ``continue`` token expired (``reason`` ``Expired``: list again without it)."""


class Invalid(ClientError):
    """422: the request cannot be applied — a JSON patch whose ``test`` failed, or a
    malformed patch or object (the API answers both alike)."""


#: ``policyv1.DisruptionBudgetCause``: the cause an eviction's 429 names its budget with
BUDGET_CAUSE = "DisruptionBudget"


class TooManyRequests(ClientError):
    """429: throttled (API Priority and Fairness, with ``Retry-After``; retry later), or an
    eviction a PodDisruptionBudget forbids (:attr:`budget`)."""

    retriable = True

    @property
    def budget(self) -> bool:
        """Whether this is an eviction's refusal by a PodDisruptionBudget, not throttling: a
        ``Status`` naming the ``DisruptionBudget`` cause (or, from servers that send no
        causes, its message naming the disruption budget)."""
        if any(reason == BUDGET_CAUSE for reason, _ in self.causes):
            return True
        return "disruption budget" in self.message.lower()


class ServerError(KubeError):
    """A 5xx answer (or an unexpected status): the server failed; retry."""

    retriable = True


class PermanentServerError(ServerError):
    """A 5xx whose message names a condition that no retry can change (a pod under more than
    one PodDisruptionBudget): the call fails for good at once."""

    retriable = False


#: fragments of 5xx messages that name a permanent condition
_PERMANENT_5XX = ("more than one PodDisruptionBudget",)


_BY_STATUS: dict[int, type[KubeError]] = {
    401: Forbidden,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def error_for(
    what: str,
    status: int,
    message: str = "",
    *,
    reason: str = "",
    causes: tuple[tuple[str, str], ...] = (),
    retry_after: float | None = None,
) -> KubeError:
    """The error of an answer with ``status`` to the request ``what`` (the rest: what the
    answer's ``Status`` body and ``Retry-After`` header said)."""
    kind = _BY_STATUS.get(status)
    if kind is None:
        kind = ClientError if 400 <= status < 500 else ServerError
        if kind is ServerError and any(part in message for part in _PERMANENT_5XX):
            kind = PermanentServerError
    return kind(what, status, message, reason=reason, causes=causes, retry_after=retry_after)
