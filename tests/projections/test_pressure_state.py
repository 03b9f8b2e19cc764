"""PressureState: cooldowns, verification, rate window, rounds, taints, reservations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from projections.pressure import RECOVERED, STEADY, STILL_HIGH, PressureState
from streams.events import Event, format_time, make_event
from tests.builders import T0, build_pod, watch

GI = 2**30


def t(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def fold(state: PressureState, events: list[Event]) -> PressureState:
    for event in events:
        state.apply(event.with_offset(state.position))
    return state


def evict(
    pod: str,
    at: float,
    *,
    node: str = "n1",
    source: str = "pressure",
    evict_at: float | None = None,
    cooldown: dict[str, Any] | None = None,
    round_: dict[str, Any] | None = None,
    taint_until: float | None = None,
    reserve: tuple[float, float, float] | None = None,
    reason: str = "cpu-pressure",
) -> Event:
    evidence: dict[str, Any] = {}
    if cooldown is not None:
        evidence["cooldown"] = cooldown
    if round_ is not None:
        evidence["round"] = round_
    if taint_until is not None:
        evidence["taint_until"] = format_time(t(taint_until))
    if reserve is not None:
        cpu, mem, until = reserve
        evidence["reserve"] = {"cpu_milli": cpu, "memory": mem, "until": format_time(t(until))}
        evidence["owner"] = f"ReplicaSet/{pod}-rs"
    return make_event(
        "decision.evict",
        t(at),
        {
            "kind": "evict",
            "namespace": "default",
            "pod": pod,
            "uid": f"uid-{pod}",
            "node": node,
            "reason": reason,
            "source": source,
            "notice_at": format_time(t(at)),
            "evict_at": format_time(t(evict_at if evict_at is not None else at)),
            "evidence": evidence,
        },
    )


def cooldown(until: float, *, factor: float = 1.0, resource: str = "cpu") -> dict[str, Any]:
    return {
        "resource": resource,
        "until": format_time(t(until)),
        "factor": factor,
        "configured": 60,
        "threshold": 90,
        "margin": 5,
        "capacity": 100_000,
    }


def sample(at: float, cpu_cores: float, node: str = "n1") -> Event:
    return make_event(
        "metrics.node",
        t(at),
        {"metadata": {"name": node}, "usage": {"cpu": f"{cpu_cores}", "memory": "1Gi"}},
    )


def test_non_pressure_decisions_are_ignored() -> None:
    state = fold(PressureState(), [evict("p", 0, source="tdm", cooldown=cooldown(60))])
    assert state.cooldowns == {} and state.evicted == {} and state.window == {}


def test_cooldown_until_is_the_latest_of_a_rounds_batches() -> None:
    state = fold(
        PressureState(),
        [
            evict("a", 0, cooldown=cooldown(60)),
            evict("b", 10, cooldown=cooldown(70)),
            evict("c", 20, cooldown=cooldown(50)),
        ],
    )
    held = state.cooldown("n1", "cpu")
    assert held is not None and held.until == t(70)
    assert state.cooling("n1", "cpu", t(69.9)) and not state.cooling("n1", "cpu", t(70))
    assert not state.cooling("n1", "memory", t(0)) and not state.cooling("n2", "cpu", t(0))


@pytest.mark.parametrize(
    ("cores", "verdict"),
    [(84.9, RECOVERED), (85, STEADY), (90, STEADY), (90.1, STILL_HIGH)],
)
def test_verification_at_first_sample_after_cooldown(cores: float, verdict: str) -> None:
    state = fold(
        PressureState(),
        [
            evict("a", 0, cooldown=cooldown(60)),
            sample(59, 50),  # still cooling: not the verification
            sample(61, cores),
            sample(62, 10),
        ],
    )
    held = state.cooldown("n1", "cpu")
    assert held is not None and held.verdict == verdict and held.after == pytest.approx(cores)
    assert state.awaiting == {}


def test_rate_window_counts_evict_at_and_prunes() -> None:
    state = fold(
        PressureState(),
        [evict("a", 0, evict_at=10), evict("b", 5, evict_at=15), evict("c", 50, evict_at=60)],
    )
    assert state.evictions_since("n1", t(9)) == 3
    assert state.evictions_since("n1", t(10)) == 2
    assert state.evictions_since("n1", t(60)) == 0
    fold(state, [evict("d", 80, evict_at=90)])  # 10 and 15 are ≤ 80 - 60: pruned
    assert state.window["n1"] == [t(60), t(90)]


def test_evicted_uids_until_deleted_or_failed() -> None:
    a, b = evict("a", 0), evict("b", 0)
    state = fold(PressureState(), [a, b])
    assert state.is_evicted("uid-a") and state.is_evicted("uid-b")
    pod = build_pod("default", "a")
    pod["metadata"]["uid"] = "uid-a"
    failed = make_event(
        "effect.failed",
        t(1),
        {"decision": b.id, "kind": "evict", "target": "default/b", "error": "PDB"},
        cause=b.id,
    )
    fold(state, [watch("pods", pod, t(1), event="DELETED"), failed])
    assert state.evicted == {}


def test_rounds_pending_fired_and_lapsed() -> None:
    plan = ["default/a", "default/b", "default/c"]
    first = {"id": "r1", "resource": "cpu", "batch": 0, "plan": plan, "next_at": format_time(t(10))}
    state = fold(PressureState(), [evict("a", 0, round_=first), evict("b", 0, round_=first)])
    [pending] = state.pending_rounds()
    assert pending.remaining() == ["default/c"] and pending.next_due == t(10)
    assert state.planned("n1") == {"default/c"} and state.planned("n2") == set()
    # the batch fires: pending no more (whether or not it decides anything)
    trigger = make_event("trigger.fired", t(10), {"kind": "eviction-batch", "trigger": "x"})
    fold(state, [trigger])
    assert state.pending_rounds() == []
    last = {**first, "batch": 1, "next_at": None}
    fold(state, [evict("c", 10, round_=last)])
    assert state.rounds == {}


def test_a_round_whose_batch_time_passed_lapses() -> None:
    body = {
        "id": "r1",
        "resource": "cpu",
        "batch": 0,
        "plan": ["default/a", "default/b"],
        "next_at": format_time(t(10)),
    }
    state = fold(PressureState(), [evict("a", 0, round_=body), sample(10, 10)])
    assert [r.id for r in state.pending_rounds()] == ["r1"]  # due now: still offered
    fold(state, [sample(11, 10)])
    assert state.pending_rounds() == []


def taint(at: float, until: float, node: str = "n1") -> Event:
    return make_event(
        "decision.taint",
        t(at),
        {
            "kind": "taint",
            "node": node,
            "reason": "eviction-taint",
            "source": "pressure",
            "taint": {"key": "koordinator.sh/eviction", "value": "", "effect": "NoSchedule"},
            "evidence": {"until": format_time(t(until))},
        },
    )


def test_taints_extend_and_are_removed() -> None:
    first = taint(0, 310)
    state = fold(
        PressureState(), [first, evict("a", 0, taint_until=310), evict("b", 50, taint_until=360)]
    )
    held = state.active_taint("n1")
    assert held is not None and held.until == t(360) and held.since == t(0)
    untaint = make_event(
        "decision.untaint",
        t(360),
        {
            "kind": "untaint",
            "node": "n1",
            "source": "pressure",
            "reason": "eviction-taint",
            "taint": {},
            "evidence": {},
        },
    )
    fold(state, [untaint])
    assert state.active_taint("n1") is None
    again = taint(400, 700)
    failed = make_event(
        "effect.failed",
        t(400),
        {"decision": again.id, "kind": "taint", "target": "n1", "error": "gone"},
    )
    fold(state, [again, failed])
    assert state.taints == {}


def test_reservations_and_owners() -> None:
    state = fold(
        PressureState(),
        [evict("a", 0, reserve=(2000, GI, 600)), evict("b", 100, reserve=(1000, GI, 700))],
    )
    assert state.reserved("n1", t(50)).milli_cpu == 2000
    assert state.reserved("n1", t(100)).milli_cpu == 3000
    assert state.reserved("n1", t(600)).milli_cpu == 1000
    assert state.reserved("n1", t(700)).milli_cpu == 0
    assert state.evicted_owners("n1", t(100)) == {"ReplicaSet/a-rs", "ReplicaSet/b-rs"}


def test_dump_is_deterministic_and_load_restores() -> None:
    body = {
        "id": "r1",
        "resource": "cpu",
        "batch": 0,
        "plan": ["default/a", "default/b"],
        "next_at": format_time(t(10)),
    }
    events = [
        taint(0, 310),
        evict("a", 0, cooldown=cooldown(60), round_=body, taint_until=310, reserve=(1, 2, 600)),
        evict("x", 1, node="n2", cooldown=cooldown(61, resource="memory")),
    ]
    one = fold(PressureState(), events)
    two = fold(PressureState(), events)
    assert one.dump() == two.dump()
    restored = PressureState()
    restored.load(one.dump())
    assert restored.dump() == one.dump()
    assert restored.position == 3
    assert restored.clock == datetime(2026, 11, 21, 20, 0, 1, tzinfo=UTC)
    assert [r.id for r in restored.pending_rounds()] == ["r1"]
