"""The error tree: each status maps to the kind callers act on, and to whether to retry."""

from __future__ import annotations

import random

import pytest

from controller.drive.kube.errors import (
    ClientError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeError,
    NotFound,
    PermanentServerError,
    ServerError,
    TooManyRequests,
    TransportError,
    error_for,
)
from controller.drive.kube.retry import Backoff, retrying


@pytest.mark.parametrize(
    ("status", "kind", "retriable"),
    [
        (400, ClientError, False),
        (401, Forbidden, False),
        (403, Forbidden, False),
        (404, NotFound, False),
        (409, Conflict, False),
        (410, Gone, False),
        (422, Invalid, False),
        (429, TooManyRequests, True),
        (500, ServerError, True),
        (503, ServerError, True),
        (504, ServerError, True),
    ],
    ids=lambda value: str(value) if isinstance(value, int | bool) else value.__name__,
)
def test_status_maps_to_kind(status: int, kind: type[KubeError], retriable: bool) -> None:
    error = error_for("GET /api/v1/pods", status, "because")
    assert type(error) is kind
    assert error.retriable is retriable
    assert str(error) == f"GET /api/v1/pods: HTTP {status}: because"


BUDGET_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."
TWO_BUDGETS = (
    "Internal error occurred: This pod has more than one PodDisruptionBudget, which the"
    " eviction subresource does not support."
)


@pytest.mark.parametrize(
    ("status", "message", "causes", "kind", "retriable", "budget"),
    [
        pytest.param(
            429,
            BUDGET_MESSAGE,
            (("DisruptionBudget", "The disruption budget a needs 1"),),
            TooManyRequests,
            True,
            True,
            id="budget-429-by-cause",
        ),
        pytest.param(
            429, BUDGET_MESSAGE, (), TooManyRequests, True, True, id="budget-429-by-message"
        ),
        pytest.param(
            429,
            "Too many requests, please try again later.",
            (),
            TooManyRequests,
            True,
            False,
            id="throttling-429",
        ),
        pytest.param(500, TWO_BUDGETS, (), PermanentServerError, False, None, id="two-budgets"),
        pytest.param(500, "etcdserver: leader changed", (), ServerError, True, None, id="5xx"),
    ],
)
def test_what_the_answer_says_decides_the_kind(
    status: int,
    message: str,
    causes: tuple[tuple[str, str], ...],
    kind: type[KubeError],
    retriable: bool,
    budget: bool | None,
) -> None:
    """The same status means different things (a budget's 429 or throttling; a permanent
    500): the body decides, as kube-apiserver writes it."""
    error = error_for("POST eviction", status, message, causes=causes, retry_after=3.0)
    assert type(error) is kind
    assert error.retriable is retriable
    assert error.retry_after == 3.0
    if budget is not None:
        assert isinstance(error, TooManyRequests) and error.budget is budget


def test_transport_errors_are_retriable_and_say_no_status() -> None:
    error = TransportError("WATCH /api/v1/pods", 0, "connection reset")
    assert error.retriable
    assert str(error) == "WATCH /api/v1/pods: connection reset"


def test_backoff_bounds_double_up_to_the_cap_and_jitter_stays_under_them() -> None:
    backoff = Backoff(0.5, 4.0, random.Random(7))
    bounds, delays = [], []
    for _ in range(6):
        bounds.append(backoff.bound())
        delays.append(backoff.next_delay())
    assert bounds == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert all(0 <= d <= b for d, b in zip(delays, bounds, strict=True))
    assert len(set(delays)) == len(delays)  # jittered, not a fixed schedule
    backoff.reset()
    assert backoff.bound() == 0.5


@pytest.mark.parametrize(
    ("failures", "attempts", "outcome"),
    [
        ([], None, "ok"),
        ([ServerError("x", 500)], None, "ok"),
        ([TooManyRequests("x", 429), TransportError("x")], None, "ok"),
        ([ServerError("x", 500)] * 3, 3, "ServerError"),
        ([NotFound("x", 404)], None, "NotFound"),
        ([Gone("x", 410)], None, "Gone"),
    ],
    ids=["first-try", "one-5xx", "429-then-drop", "attempts-spent", "404-at-once", "410-at-once"],
)
async def test_retrying(failures: list[KubeError], attempts: int | None, outcome: str) -> None:
    pending = list(failures)
    calls, slept = 0, []

    async def call() -> str:
        nonlocal calls
        calls += 1
        if pending:
            raise pending.pop(0)
        return "ok"

    async def sleep(delay: float) -> None:
        slept.append(delay)

    backoff = Backoff(0.1, 1.0, random.Random(1))
    try:
        result = await retrying(call, backoff=backoff, attempts=attempts, sleep=sleep)
    except KubeError as exc:
        result = type(exc).__name__
    assert result == outcome
    retried = [f for f in failures[: calls - 1] if f.retriable]
    assert len(slept) == len(retried)
    assert backoff.attempt == (0 if outcome == "ok" else len(slept))


async def test_retrying_waits_what_the_server_asked() -> None:
    """A ``Retry-After`` replaces the backoff's delay (client-go's ``checkWait``)."""
    pending = [TooManyRequests("x", 429, retry_after=7.0), ServerError("x", 503)]
    slept: list[float] = []

    async def call() -> str:
        if pending:
            raise pending.pop(0)
        return "ok"

    async def sleep(delay: float) -> None:
        slept.append(delay)

    backoff = Backoff(0.1, 0.2, random.Random(1))
    assert await retrying(call, backoff=backoff, sleep=sleep) == "ok"
    assert slept[0] == 7.0 and 0 <= slept[1] <= 0.1


def test_backoff_refuses_a_cap_below_its_base() -> None:
    with pytest.raises(ValueError, match="0 < base <= cap"):
        Backoff(2.0, 1.0)
