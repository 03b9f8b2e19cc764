"""The guard rails are a fold of the log: a restart still counts the last minute."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controller.drive.effector.limits import EvictionLimits, LimitGuard
from streams.events import Event, make_event

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def evict(name: str, node: str = "n1") -> Event:
    data = {"kind": "evict", "namespace": "ns", "pod": name, "node": node, "reason": "x"}
    return make_event("decision.evict", T0, data)


def outcome(decision: Event, type_: str, after: timedelta) -> Event:
    data = {"decision": decision.id, "kind": "evict", "target": f"ns/{decision.data['pod']}"}
    if type_ != "effect.applied":
        data["error"] = "refused"
    return make_event(type_, T0 + after, data)


@pytest.mark.parametrize(
    ("outcomes", "reads", "now", "refused"),
    [
        pytest.param(["effect.applied"], 1, timedelta(seconds=30), True, id="applied-counts"),
        pytest.param(["effect.failed"], 1, timedelta(seconds=30), False, id="failed-does-not"),
        pytest.param(["effect.skipped"], 1, timedelta(seconds=30), False, id="skipped-does-not"),
        pytest.param(["effect.applied"], 1, timedelta(seconds=75), False, id="older-than-a-min"),
        pytest.param([], 1, timedelta(seconds=30), False, id="no-outcome-yet"),
        pytest.param(["effect.applied"], 2, timedelta(seconds=30), True, id="read-twice"),
    ],
)
def test_the_guard_counts_the_logs_applied_evictions(
    outcomes: list[str], reads: int, now: timedelta, refused: bool
) -> None:
    decision = evict("a")
    records = [decision] + [outcome(decision, t, timedelta(seconds=10)) for t in outcomes]
    guard = LimitGuard(EvictionLimits(per_node=1))
    for _ in range(reads):
        for record in records:
            guard.seen(record)
    answer = guard.refusal(node="n1", namespace="ns", now=T0 + now)
    assert (answer is not None) is refused
    assert guard.refusal(node="n2", namespace="ns", now=T0 + now) is None


def test_a_log_read_twice_counts_each_eviction_once() -> None:
    first, second = evict("a"), evict("b")
    records = [
        first,
        second,
        outcome(first, "effect.applied", timedelta(seconds=1)),
        outcome(second, "effect.applied", timedelta(seconds=2)),
    ]
    guard = LimitGuard(EvictionLimits(per_node=3))
    for record in records + records:
        guard.seen(record)
    assert guard.refusal(node="n1", namespace="ns", now=T0 + timedelta(seconds=5)) is None
    guard.applied(node="n1", namespace="ns", now=T0 + timedelta(seconds=6))
    assert guard.refusal(node="n1", namespace="ns", now=T0 + timedelta(seconds=7)) is not None
