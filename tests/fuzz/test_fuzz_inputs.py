"""The fuzz corpus (tests/fuzz/corpus.py) through import, fold, export, configuration and
scenario loading and simulation: no traceback, no hang, no good line lost, every bad
line set aside (or refused) with a one-line reason naming its line or key, and every
stored record exportable, re-importable and foldable."""

from __future__ import annotations

import asyncio
import io
from collections import Counter
from pathlib import Path

import pytest
import typer

from controller.cli.common import RECORD_CHECKS, read_policy
from controller.policy.loader import load_policy
from controller.simulate.generated import generated_problem
from controller.simulate.runner import Simulation
from controller.simulate.scenario import ScenarioError, load_scenario
from projections.world import World
from streams.backends.memory import MemoryLog
from streams.codec import encode
from streams.events import Event
from streams.recording import import_recording, parse_line
from tests.fuzz.conftest import time_limit
from tests.fuzz.corpus import (
    BASE_CONFIG,
    RECORDING_KINDS,
    Case,
    config_body,
    files,
    good_events,
    recording_cases,
    scenario_body,
)

RECORDINGS = recording_cases(810)
CONFIGS = files("config", 120, config_body)
SCENARIOS = files("scenario", 100, scenario_body)
POLICY = load_policy(dict(BASE_CONFIG))
#: classes whose every case is invalid: the bad line must be set aside
ALWAYS_BAD = {"time", "quantity", "name", "conflict", "envelope"}


def _check_stored(events: list[Event]) -> None:
    """Exportable, re-importable and foldable without a skip."""
    world = World()
    for event in events:
        line = encode(event)
        again = parse_line(line, source="export", line=event.offset + 1)
        assert isinstance(again, Event), again
        world.apply(event)
    assert world.cluster.skipped == 0


def test_the_corpus_is_large_and_covers_every_class() -> None:
    kinds = Counter(case_id.split("-")[0] for case_id, _, _ in RECORDINGS)
    assert set(kinds) == set(RECORDING_KINDS)
    assert len(RECORDINGS) + len(CONFIGS) + len(SCENARIOS) >= 1000


@pytest.mark.parametrize(
    ("kind", "lines", "bad"),
    [(case_id.split("-")[0], lines, bad) for case_id, lines, bad in RECORDINGS],
    ids=[c[0] for c in RECORDINGS],
)
def test_recording_case(kind: str, lines: list[bytes], bad: int) -> None:
    log = MemoryLog()
    with time_limit():
        summary = asyncio.run(
            import_recording(io.BytesIO(b"\n".join(lines) + b"\n"), log, extra=RECORD_CHECKS)
        )
    stored = {e.id for e in log.events}
    good = [parse_line(raw, source="good", line=0) for i, raw in enumerate(lines) if i != bad]
    assert all(isinstance(e, Event) and e.id in stored for e in good)  # no good line lost
    if kind in ALWAYS_BAD:
        assert len(summary.set_aside) == 1
    for item in summary.set_aside:
        assert item.line == bad + 1
        assert item.reason and "\n" not in item.reason
    assert len(summary.set_aside) + summary.imported + summary.duplicates == len(lines)
    with time_limit():
        _check_stored(log.events)
        if bad % 8 == 0:  # a sample through the simulator as well
            Simulation(POLICY.config, eviction=POLICY.eviction).run(
                [e for e in log.events if e.type.startswith(("k8s.", "metrics."))]
            )


@pytest.mark.parametrize("case", CONFIGS, ids=[c.id for c in CONFIGS])
def test_configuration_case(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(case.body)
    try:
        with time_limit():
            policy = read_policy(path)
    except typer.Exit:
        errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
        assert len(errors) == 1 and str(path) in errors[0]
        return
    with time_limit():
        Simulation(policy.config, eviction=policy.eviction).run(_minute())


@pytest.mark.parametrize("case", SCENARIOS, ids=[c.id for c in SCENARIOS])
def test_scenario_case(case: Case, tmp_path: Path) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_bytes(case.body)
    try:
        with time_limit():
            events, _, until = load_scenario(path)
    except ScenarioError as exc:
        assert str(path) in str(exc) and "\n" not in str(exc)
        return
    assert generated_problem(events) is None
    with time_limit():
        Simulation(POLICY.config, eviction=POLICY.eviction).run(events, until=until)


def _minute() -> list[Event]:
    return good_events()
