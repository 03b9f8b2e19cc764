"""The API double's authentication: bearer tokens that expire, answered as kube-apiserver does.

Why apart from the double: who a request is comes before what it asks for (the apiserver
authenticates before routing and authorization), and a test of expiring credentials needs
only this part (:class:`Authentication`, set as ``ApiDouble.auth``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

__all__ = ["UNAUTHORIZED", "Authentication", "Presented"]

#: kube-apiserver's answer to a request it cannot authenticate (filters/authentication.go
#: ``Unauthorized``: ``apierrors.NewUnauthorized("Unauthorized")``, written as a Status)
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


@dataclass(frozen=True)
class Presented:
    """The bearer token one request carried ("" for none) and whether it was accepted."""

    at: float
    method: str
    path: str
    token: str
    accepted: bool


@dataclass
class Authentication:
    """kube-apiserver's bearer-token authentication: a request whose token is missing,
    unknown or expired is answered 401 with the apiserver's ``Status`` (staging/src/k8s.io/
    apiserver/pkg/endpoints/filters/authentication.go ``Unauthorized``), before any routing
    or authorization. ``tokens`` maps each accepted token to its expiry (``now()`` seconds;
    ``math.inf``: never); ``ledger``, when set, is a file of ``TOKEN EXPIRY`` lines an exec
    plugin appends to as it hands a token out, read as the token authenticator would look a
    token up. Every request's token is kept in ``presented``."""

    tokens: dict[str, float] = field(default_factory=dict)
    ledger: Path | None = None
    now: Callable[[], float] = time.time
    presented: list[Presented] = field(default_factory=list)

    def accept(self, token: str, *, until: float = math.inf) -> None:
        """Accept ``token`` until ``until``."""
        self.tokens[token] = until

    def revoke(self, token: str) -> None:
        """Stop accepting ``token`` (it expired, or was rotated out)."""
        self.tokens[token] = -math.inf

    def expiry(self, token: str) -> float | None:
        """Until when ``token`` is accepted (None: unknown)."""
        if token in self.tokens:
            return self.tokens[token]
        if self.ledger is not None and self.ledger.exists():
            for line in self.ledger.read_text().splitlines():
                issued, _, until = line.partition(" ")
                if issued == token:
                    return float(until)
        return None

    def refuse(self, request: web.Request) -> web.Response | None:
        """The 401 for ``request``, or None when its token is good."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        expiry = self.expiry(token) if token else None
        now = self.now()
        good = expiry is not None and now < expiry
        self.presented.append(Presented(now, request.method, request.path, token, good))
        if good:
            return None
        return web.json_response(UNAUTHORIZED, status=401)
