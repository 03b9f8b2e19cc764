"""The loop's pure step: what is decided, and what is written, for each kind of record."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import pytest

from controller.drive.clock import VirtualClock
from controller.drive.loop.virtual import VirtualLoop
from controller.drive.triggers import trigger_event
from controller.policy.loader import load_config
from controller.policy.pressure.config import parse_eviction_config
from controller.policy.step import QUIET_TICK_LIMIT, Step
from projections.world import World
from streams.backends.memory import MemoryLog
from streams.events import Event
from tests.builders import at, build_node, build_pod, node_metrics, watch

CONFIG = {
    "actions": "allocate, shuffle",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}]},
        {
            "plugins": [
                {"name": "predicates"},
                {"name": "tdm", "arguments": {"tdm.revocable-zone.rz1": "10:00-21:00"}},
            ]
        },
    ],
}
ZONE = {"volcano.sh/revocable-zone": "rz1"}
PREEMPTABLE = {"volcano.sh/revocable-zone": "*", "volcano.sh/preemptable": "true"}


def step_over(*records: Event, eviction: bool = False) -> Step:
    """A step whose World folded ``records`` (offsets in order)."""
    step = Step(
        config=load_config(CONFIG),
        eviction=parse_eviction_config({}) if eviction else None,
    )
    step.fold(r.with_offset(i) for i, r in enumerate(records))
    return step


def quiet_cluster() -> list[Event]:
    return [watch("nodes", build_node("n1")), watch("pods", build_pod("ns", "a", node="n1"))]


def tick(when: datetime) -> Event:
    return trigger_event(when, "session-tick", "tick")


@pytest.mark.parametrize(
    ("kind", "zone", "written"),
    [
        pytest.param("tick", None, 0, id="a tick that decides nothing is not written"),
        pytest.param("evict-period", "rz1", 0, id="an empty evict period is not written"),
        pytest.param("window-end", "rz1", 1, id="a window end is always written"),
        pytest.param("window-start", "rz1", 1, id="a window start is always written"),
    ],
)
def test_firings_that_decide_nothing(kind: str, zone: str | None, written: int) -> None:
    step = step_over(*quiet_cluster())
    trigger = trigger_event(at(1), f"x/{kind}", kind, zone)
    assert [r.type for r in step.on_trigger(trigger)] == ["trigger.fired"] * written
    assert step.sessions == 1


def test_a_trigger_is_decided_before_it_is_folded_and_written_with_its_decisions() -> None:
    pending = build_pod("ns", "p", node="", phase="Pending")
    step = step_over(watch("nodes", build_node("n1")), watch("pods", pending))
    position = step.world.position
    trigger = tick(at(1))
    records = step.on_trigger(trigger)
    assert [r.type for r in records] == ["trigger.fired", "decision.bind"]
    assert records[0] is trigger and records[1].cause == trigger.id
    assert step.world.position == position  # nothing folded until the driver wrote it


@pytest.mark.parametrize(
    ("later", "changed", "runs"),
    [
        pytest.param(timedelta(seconds=1), False, False, id="unchanged within the limit: quiet"),
        pytest.param(QUIET_TICK_LIMIT, False, True, id="unchanged at the limit: runs"),
        pytest.param(timedelta(seconds=1), True, True, id="changed cluster: runs"),
    ],
)
def test_quiet_ticks(later: timedelta, changed: bool, runs: bool) -> None:
    step = step_over(*quiet_cluster())
    step.on_trigger(tick(at(1)))
    if changed:
        step.on_input(watch("pods", build_pod("ns", "b", node="n1")).with_offset(10))
    step.on_trigger(tick(at(1) + later))
    assert step.sessions == (2 if runs else 1)


def test_a_window_boundary_makes_the_next_tick_run() -> None:
    step = step_over(*quiet_cluster())
    step.on_trigger(tick(at(1)))
    step.on_trigger(trigger_event(at(1), "tdm/rz1/window-end", "window-end", "rz1"))
    step.on_trigger(tick(at(1) + timedelta(seconds=1)))
    assert step.sessions == 3


def test_a_sample_is_decided_after_it_is_folded() -> None:
    hot = [
        watch("nodes", build_node("n1", cpu="10")),
        watch("pods", build_pod("ns", "be", node="n1", labels={"koordinator.sh/qosClass": "BE"})),
    ]
    step = step_over(*hot, eviction=True)
    samples = [
        node_metrics("n1", cpu="9900m", memory="1Gi", when=at(0, base=at(i))) for i in (1, 2, 3)
    ]
    decided = [step.on_input(s.with_offset(10 + i)) for i, s in enumerate(samples)]
    assert [len(d) for d in decided[:2]] == [0, 0]
    assert {d.type for d in decided[2]} >= {"decision.evict"}
    assert all(d.cause == samples[2].id for d in decided[2])
    assert step.world.position == 13


def test_without_configurations_nothing_is_decided() -> None:
    step = Step(config=None, eviction=None)
    assert step.on_trigger(tick(at(1))) == []
    assert step.next_followup() is None


def test_the_virtual_loop_orders_equal_times_and_moves_its_clock_forward() -> None:
    pending = build_pod("ns", "p", node="", phase="Pending")
    step = Step(config=load_config(CONFIG), eviction=None)
    loop = VirtualLoop(step, log=MemoryLog())
    loop.push([watch("nodes", build_node("n1"), at(1)), watch("pods", pending, at(1))])
    assert loop.run(until=None) == []  # no triggers: nothing decides
    assert isinstance(loop.clock, VirtualClock) and loop.clock.now() == at(1)
    assert [e.offset for e in loop.log.events] == [0, 1]
    with pytest.raises(ValueError, match="cannot go back"):
        loop.clock.advance(at(0))


def test_a_loop_with_triggers_needs_an_end() -> None:
    from controller.drive.triggers import TriggerSet

    config = load_config(CONFIG)
    step = Step(config=config, eviction=None)
    loop = VirtualLoop(step, log=MemoryLog(), triggers=TriggerSet.from_config(config, start=at(0)))
    with pytest.raises(ValueError, match="needs an end"):
        loop.run(until=None)


def test_a_simulation_writes_a_trigger_and_its_decisions_in_one_batch() -> None:
    from controller.simulate.runner import Simulation

    pending = build_pod("ns", "p", node="", phase="Pending", annotations=PREEMPTABLE)
    inputs = [watch("nodes", build_node("n1", labels=ZONE), at(1)), watch("pods", pending, at(1))]
    result = Simulation(load_config(CONFIG)).run(inputs, until=at(1) + timedelta(seconds=2))
    types = [e.type for e in result.log.events]
    first = types.index("trigger.fired")
    assert types[first : first + 3] == ["trigger.fired", "decision.bind", "effect.applied"]


# ---- inputs: what is written, when it is folded, who may decide --------------------------


def hot_node() -> list[Event]:
    """A node with a best-effort pod on it (three hot samples in a row evict it)."""
    pod = build_pod("ns", "be", node="n1", labels={"koordinator.sh/qosClass": "BE"})
    return [watch("nodes", build_node("n1", cpu="10")), watch("pods", pod)]


def hot_samples(count: int = 3, *, first: int = 10) -> list[Event]:
    """``count`` hot samples of ``n1``, a minute apart, written from offset ``first``."""
    return [
        node_metrics("n1", cpu="9900m", memory="1Gi", when=at(i)).with_offset(first + i)
        for i in range(count)
    ]


def written(*records: Event) -> list[Event]:
    """``records`` as a log stores them after ``hot_node``'s: offsets from 2 on."""
    return [r.with_offset(2 + i) for i, r in enumerate(records)]


@pytest.mark.parametrize(
    ("record", "eviction", "point", "standby_writes"),
    [
        pytest.param(node_metrics("n1", cpu="1", memory="1Gi"), True, True, False, id="sample"),
        pytest.param(
            node_metrics("n1", cpu="1", memory="1Gi"), False, False, True, id="sample-no-eviction"
        ),
        pytest.param(watch("nodes", build_node("n2")), True, False, True, id="watch-event"),
        pytest.param(
            trigger_event(at(1), "session-tick", "tick"), True, False, True, id="not-a-sample"
        ),
    ],
)
def test_decision_points_and_what_a_standby_writes(
    record: Event, eviction: bool, point: bool, standby_writes: bool
) -> None:
    step = step_over(eviction=eviction)
    assert step.decides_on(record) is point
    assert step.writes(record, leading=True)  # a leader writes every input
    assert step.writes(record, leading=False) is standby_writes


def test_a_sample_decides_on_its_third_hot_minute() -> None:
    step = step_over(*hot_node(), eviction=True)
    decided = [step.on_input(s) for s in hot_samples()]
    assert [len(d) for d in decided[:2]] == [0, 0]
    assert {d.type for d in decided[2]} >= {"decision.evict"}


def _logged(step: Step, records: list[Event]) -> list[Event]:
    for record in records:
        step.on_logged(record)
    return []


def _standby(step: Step, records: list[Event]) -> list[Event]:
    return [d for r in records for d in step.on_input(r, leading=False)]


def _refolded(step: Step, records: list[Event]) -> list[Event]:
    refold = step.refold()
    for record in records:
        refold.fold(record)
    assert refold.adopt() is step.world
    return []


@pytest.mark.parametrize(
    "fold",
    [
        pytest.param(_logged, id="read back on a start"),
        pytest.param(_standby, id="written by a standby"),
        pytest.param(_refolded, id="another writer's, folded afresh"),
    ],
)
def test_records_folded_without_deciding(fold: Callable[[Step, list[Event]], list[Event]]) -> None:
    """Three hot samples would evict at a leader that wrote them; folded any of these ways
    they decide nothing, and the World is exactly their fold."""
    records = [*(r.with_offset(i) for i, r in enumerate(hot_node())), *hot_samples()]
    step = Step(config=None, eviction=parse_eviction_config({}))
    assert fold(step, records) == []
    assert step.world.dump() == World().fold(records).dump()


def test_a_refold_is_decided_on_only_once_adopted() -> None:
    step = step_over(*quiet_cluster(), eviction=True)
    step.on_trigger(tick(at(1)))
    before, sessions = step.world, step.sessions
    refold = step.refold()
    for i, record in enumerate([*quiet_cluster(), *hot_samples(first=2)]):
        refold.fold(record.with_offset(i))
    assert step.world is before  # a log read halfway is not decided on
    assert refold.adopt() is step.world is not before
    assert step.world.position == 5 and step.sessions == sessions  # the step's memory kept


@pytest.mark.parametrize(
    ("count", "decides"),
    [
        pytest.param(1, False, id="first hot sample: folded, nothing decided"),
        pytest.param(2, False, id="second hot sample: folded, nothing decided"),
        pytest.param(3, True, id="third hot sample: decided after its fold"),
    ],
)
def test_a_sample_folded_ahead_decides_as_the_written_one(count: int, decides: bool) -> None:
    """The live loop folds a leader's sample before writing it (one batch with its
    decisions), the virtual loop after: the decisions are the same, and once the batch
    is written and folded back so is the World, but for its position: samples folded
    ahead that decided nothing leave it behind them until a record is folded at its
    offset (why the virtual loop, whose World is its log's checkpoint, writes first)."""
    samples = [s.with_offset(-1) for s in hot_samples(count)]
    after, ahead = step_over(*hot_node(), eviction=True), step_over(*hot_node(), eviction=True)
    log_after, log_ahead = MemoryLog(), MemoryLog()
    log_after.append_now(written(*hot_node())), log_ahead.append_now(written(*hot_node()))
    for sample in samples:
        [stored] = log_after.append_now([sample])  # the virtual loop: written first
        decisions = after.on_input(stored)
        after.fold(log_after.append_now(decisions))
        batch = ahead.on_input_ahead(sample)  # the live loop: folded first
        assert batch[0] is sample and batch[1:] == decisions
        ahead.fold(log_ahead.append_now(batch))
    assert bool(decisions) is decides
    assert all(d.cause == samples[-1].id for d in decisions)
    assert log_ahead.events == log_after.events  # the same records, the same offsets
    if decides:  # the decisions folded at their offsets move the position past all
        assert ahead.world.dump() == after.world.dump()
    else:  # samples folded ahead move no position: it stays after the node's records
        assert (ahead.world.position, after.world.position) == (2, 2 + count)


def test_the_sample_folded_ahead_is_not_folded_again() -> None:
    """``fold`` skips the input folded ahead (the next hot sample would evict if the
    second one counted twice) and only it, only in the batch written next."""
    step = step_over(*hot_node(), eviction=True)
    first, second, third = (s.with_offset(-1) for s in hot_samples())  # not yet written
    for sample, offset in ((first, 2), (second, 3)):
        assert step.on_input_ahead(sample) == [sample]
        step.fold([sample.with_offset(offset)])
    assert {d.type for d in step.on_input_ahead(third)[1:]} >= {"decision.evict"}
