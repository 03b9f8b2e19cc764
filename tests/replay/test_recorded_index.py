"""A streamed replay keeps the recorded decisions as digests and reads them back only to
describe a difference (:class:`replay.verify.RecordedDecisions`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import yaml

from controller.cli.reading import reader, replay_log
from controller.policy.loader import load_config
from controller.simulate.runner import Simulation, save_log
from controller.simulate.scenario import load_scenario
from replay.verify import RecordedDecisions, ReplayReport, recorded_decisions, replay
from streams.codec import decision_line
from streams.events import DECISION_TYPES, Event
from tests.replay.test_verify import EXAMPLES


def simulated_log() -> list[Event]:
    """A simulated log with decision points that decide several decisions."""
    raw = yaml.safe_load((EXAMPLES / "rescheduling-config.yaml").read_text())
    events, _, until = load_scenario(EXAMPLES / "rescheduling-hot-cold.yaml")
    sim = Simulation(load_config(raw))
    sim.run(events, until=until)
    return sim.log.events


def _tampered(events: list[Event]) -> list[Event]:
    """The log with the last decision of a cause that decided several altered."""
    by_cause = recorded_decisions(events)
    last = next(d[-1] for d in by_cause.values() if len(d) > 1)
    index = next(i for i, e in enumerate(events) if e.id == last.id)
    altered = dataclasses.replace(events[index], data={**events[index].data, "reason": "zzz"})
    return [*events[:index], altered, *events[index + 1 :]]


def test_a_streamed_difference_shows_the_recorded_lines_read_back(tmp_path: Path) -> None:
    tampered = _tampered(simulated_log())
    db = tmp_path / "bad.db"
    save_log(f"sqlite:///{db}", tampered)
    streamed, _ = replay_log(str(db), start=None)
    in_memory = replay(tampered)
    assert streamed.differences and streamed.differences == in_memory.differences
    assert any('"reason":"zzz"' in line for line in streamed.differences[0].recorded)
    assert streamed.decisions == in_memory.decisions


def _replayed(db: Path) -> tuple[ReplayReport, RecordedDecisions, list[int]]:
    """A streamed replay of ``db``, and the offsets its index read back."""
    fetched: list[int] = []
    with reader(str(db)) as source:

        def fetch(offset: int) -> Event:
            fetched.append(offset)
            return next(source.records(offset, offset + 1))

        index = RecordedDecisions.read(source.of_types(DECISION_TYPES), fetch=fetch)
        return replay(source.records(), recorded=index), index, fetched


def test_recorded_decisions_are_read_back_only_for_a_difference(tmp_path: Path) -> None:
    events = simulated_log()
    for log, differs in ((events, False), (_tampered(events), True)):
        db = tmp_path / f"{differs}.db"
        save_log(f"sqlite:///{db}", log)
        report, index, fetched = _replayed(db)
        assert report.ok is not differs
        by_cause = recorded_decisions(log)
        cause = report.differences[0].cause_id if differs else None
        assert fetched == ([e.offset for e in by_cause[cause]] if cause else [])
        assert index.count == sum(len(v) for v in by_cause.values())


def test_the_index_matches_only_the_same_lines_in_the_same_order() -> None:
    events = simulated_log()
    by_cause = recorded_decisions(events)
    index = RecordedDecisions.of(by_cause)
    for cause, decisions in by_cause.items():
        lines = [decision_line(e) for e in decisions]
        assert index.matches(cause, lines)
        assert index.lines(cause) == [line.decode() for line in lines]
        assert not index.matches(cause, lines[:-1])
        if len(lines) > 1:
            assert not index.matches(cause, lines[::-1])
    assert index.matches("no-such-cause", [])
    assert not index.matches("no-such-cause", [b"{}"])
