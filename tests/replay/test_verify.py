"""`tide replay --verify`: passes on the logs the simulation writes, fails on an altered one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from controller.cli import app
from controller.policy.loader import load_config
from controller.simulate.runner import Simulation, save_log
from controller.simulate.scenario import load_scenario
from replay.verify import _ConfigCache, replay
from streams.events import Event

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def simulated_log() -> list[Event]:
    raw = yaml.safe_load((EXAMPLES / "tdm-config.yaml").read_text())
    events, _, until = load_scenario(EXAMPLES / "tdm-window-close.yaml")
    sim = Simulation(load_config(raw))
    sim.run(events, until=until)
    return sim.log.events


def test_altering_one_decision_fails_verification() -> None:
    events = simulated_log()
    index = next(i for i, e in enumerate(events) if e.type == "decision.evict")
    original = events[index]
    other_pod = "train-9" if original.data["pod"] != "train-9" else "train-8"
    altered = dataclasses.replace(original, data={**original.data, "pod": other_pod})
    tampered = [*events[:index], altered, *events[index + 1 :]]
    report = replay(tampered)
    assert not report.ok
    first = report.differences[0]
    assert first.cause_id == original.cause
    assert any(other_pod in line for line in first.recorded)
    assert any(original.data["pod"] in line for line in first.replayed)


def test_a_removed_decision_fails_verification() -> None:
    events = simulated_log()
    index = next(i for i, e in enumerate(events) if e.type == "decision.evict")
    report = replay([*events[:index], *events[index + 1 :]])
    assert not report.ok


def test_cli_verify_exit_codes(tmp_path: Path) -> None:
    events = simulated_log()
    good = tmp_path / "good.db"
    save_log(f"sqlite:///{good}", events)
    runner = CliRunner()
    result = runner.invoke(app, ["replay", str(good), "--verify"])
    assert result.exit_code == 0, result.output
    assert "identical" in result.output

    index = next(i for i, e in enumerate(events) if e.type == "decision.evict")
    altered = dataclasses.replace(
        events[index], data={**events[index].data, "reason": "cpu-pressure"}
    )
    bad = tmp_path / "bad.db"
    save_log(f"sqlite:///{bad}", [*events[:index], altered, *events[index + 1 :]])
    result = runner.invoke(app, ["replay", str(bad), "--verify"])
    assert result.exit_code == 1
    assert "decisions differ at offset" in result.output


# -- replay --from, resumed from a checkpoint, and sparse offsets ----------------------


def _decision_points(events: list[Event]) -> list[int]:
    return [e.offset for e in events if e.type in ("trigger.fired", "metrics.node")]


def test_replay_from_checks_only_the_points_at_or_after_it() -> None:
    events = simulated_log()
    points = _decision_points(events)
    whole = replay(events)
    middle = points[len(points) // 2]
    later = replay(events, start=middle)
    assert later.ok and whole.ok
    assert 0 < later.checked < whole.checked
    index = next(i for i, e in enumerate(events) if e.type == "decision.evict")
    cause = next(e.offset for e in events if e.id == events[index].cause)
    altered = dataclasses.replace(events[index], data={**events[index].data, "pod": "zzz"})
    tampered = [*events[:index], altered, *events[index + 1 :]]
    assert not replay(tampered, start=cause).ok
    assert replay(tampered, start=cause + 1).ok  # the altered decision is before --from


def test_replay_from_a_resumed_world_equals_a_refold() -> None:
    from projections.world import World

    events = simulated_log()
    for start in _decision_points(events)[::7]:
        for cut in (0, start // 2, start):
            resumed = World().fold(e for e in events if e.offset < cut)
            rest = [e for e in events if e.offset >= cut]
            got = replay(rest, start=start, world=resumed)
            want = replay(events, start=start)
            assert (got.checked, got.decisions, got.ok) == (want.checked, want.decisions, True)


def test_cli_replay_from(tmp_path: Path) -> None:
    from controller.compose.simulated import save_checkpoint

    events = simulated_log()
    db = tmp_path / "log.db"
    save_log(f"sqlite:///{db}", events)
    runner = CliRunner()
    plain = runner.invoke(app, ["replay", str(db), "--verify"])
    assert plain.exit_code == 0, plain.output
    start = _decision_points(events)[-1]
    refold = runner.invoke(app, ["replay", str(db), "--verify", "--from", str(start)])
    assert refold.exit_code == 0, refold.output
    save_checkpoint(f"sqlite:///{db}")  # at the head: beyond --from, so not usable
    again = runner.invoke(app, ["replay", str(db), "--verify", "--from", str(start)])
    assert again.output == refold.output
    end = runner.invoke(app, ["replay", str(db), "--verify", "--from", str(len(events))])
    assert end.exit_code == 0 and "replayed 0 decision points" in end.output
    # without --from, output is what it was before the checkpoint existed
    assert runner.invoke(app, ["replay", str(db), "--verify"]).output == plain.output


def test_replay_on_a_sparse_log(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from streams import backends
    from streams.backends.memory import MemoryLog
    from tests.streams import sparse

    monkeypatch.setitem(backends.OPENERS, "sparse", "tests.streams.sparse")
    monkeypatch.setattr(sparse, "LOGS", {})
    log = sparse.SparseLog(sparse.LOGS.setdefault("s", MemoryLog()))
    events = simulated_log()
    stored = asyncio.run(log.append([e.with_offset(-1) for e in events]))
    assert stored[1].offset - stored[0].offset == sparse.STRIDE
    runner = CliRunner()
    result = runner.invoke(app, ["replay", "sparse://s", "--verify"])
    assert result.exit_code == 0, result.output
    assert result.output == replay_output(events)
    start = _decision_points(stored)[-1]
    later = runner.invoke(app, ["replay", "sparse://s", "--verify", "--from", str(start)])
    assert later.exit_code == 0, later.output
    assert f"replayed {replay(events, start=_decision_points(events)[-1]).checked} " in later.output


def replay_output(events: list[Event]) -> str:
    report = replay(events)
    return (
        f"replayed {report.checked} decision points, {report.decisions} recorded decisions: "
        "identical\n"
    )


@pytest.mark.parametrize(
    ("raw_stamp", "record_stamp", "has_nodeorder"),
    [
        pytest.param(None, 1, False, id="unstamped-record-is-legacy"),
        pytest.param(None, 2, True, id="record-stamp-sets-the-level"),
        pytest.param(2, 1, True, id="stamp-inside-the-config-wins"),
        pytest.param(1, 2, False, id="legacy-stamp-inside-the-config-wins"),
    ],
)
def test_a_logs_configuration_runs_at_its_records_level(
    raw_stamp: int | None, record_stamp: int, has_nodeorder: bool
) -> None:
    raw: dict[str, object] = {
        "actions": "allocate",
        "tiers": [{"plugins": [{"name": "priority"}, {"name": "nodeorder"}]}],
    }
    if raw_stamp is not None:
        raw["behaviour"] = raw_stamp
    policy = _ConfigCache(None, None).get(raw, record_stamp)
    names = {p.name for tier in policy.config.tiers for p in tier.plugins}
    assert ("nodeorder" in names) is has_nodeorder
    assert "priority" in names
