"""Plugins declare their schedules as data; the plan turns any plugin's declarations into
triggers without naming the plugin (the seam a rescheduling interval will use)."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.drive.triggers import TriggerConfig, TriggerSet, build_triggers, plan
from controller.policy.builtins import BUILTIN_PLUGINS
from controller.policy.framework.plugin import (
    Cron,
    Interval,
    PluginContext,
    PluginSpec,
    Schedule,
)
from controller.policy.loader import load_config
from controller.policy.plugins import gang

T0 = datetime(2026, 11, 21, 10, 0, 30, tzinfo=UTC)
BERLIN = ZoneInfo("Europe/Berlin")


@dataclass(frozen=True)
class HourAnchor:
    """Anchored at the last full hour before registration."""

    def before(self, at: datetime) -> datetime:
        return at.replace(minute=0, second=0, microsecond=0)


def fake_spec(declared: tuple[Schedule, ...]) -> PluginSpec:
    def parse_args(raw: Mapping[str, Any]) -> Mapping[str, Any]:
        return dict(raw)

    def schedules(args: Any, ctx: PluginContext) -> tuple[Schedule, ...]:
        assert isinstance(ctx, PluginContext)
        return declared

    return PluginSpec("resched", parse_args, gang.build, schedules)


def config_with(spec: PluginSpec, timezone: str = "UTC") -> Any:
    registry = {**BUILTIN_PLUGINS, spec.name: spec}
    raw = {
        "actions": "allocate",
        "timezone": timezone,
        "tiers": [{"plugins": [{"name": "gang"}, {"name": spec.name}]}],
    }
    return load_config(raw, plugins=registry), registry


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        pytest.param(
            Schedule("resched/interval", "rescheduling", Interval(timedelta(minutes=5))),
            [T0 + timedelta(minutes=5 * i) for i in range(3)],
            id="interval-from-registration",
        ),
        pytest.param(
            Schedule(
                "resched/interval", "rescheduling", Interval(timedelta(minutes=20), HourAnchor())
            ),
            [datetime(2026, 11, 21, 10, m, tzinfo=UTC) for m in (20, 40)]
            + [datetime(2026, 11, 21, 11, 0, tzinfo=UTC)],
            id="interval-anchored",
        ),
        pytest.param(
            Schedule("resched/daily", "rescheduling", Cron(12, 0, 0, BERLIN), zone="z"),
            [datetime(2026, 11, 21, 11, 0, tzinfo=UTC)],  # 12:00 CET
            id="cron-in-zone",
        ),
    ],
)
def test_a_declared_schedule_shows_up_in_the_plan(
    schedule: Schedule, expected: list[datetime]
) -> None:
    config, registry = config_with(fake_spec((schedule,)))
    ts = TriggerSet.from_config(config, start=T0, plugins=registry)
    assert [spec.name for spec in ts.specs] == sorted(["session-tick", schedule.name])
    got = [f for f in ts.due(T0 + timedelta(hours=1)) if f.name == schedule.name]
    assert [f.at for f in got][: len(expected)] == expected
    assert {(f.kind, f.zone) for f in got} == {(schedule.kind, schedule.zone)}


def test_without_the_plugin_in_the_registry_nothing_is_declared() -> None:
    config, _ = config_with(
        fake_spec((Schedule("resched/interval", "rescheduling", Interval(timedelta(1))),))
    )
    assert [spec.name for spec in TriggerSet.from_config(config, start=T0).specs] == [
        "session-tick"
    ]


def test_ranks_break_ties_before_names() -> None:
    at = Cron(10, 1, 0)
    declared = (
        Schedule("a-late", "x", at, rank=5),
        Schedule("b-early", "x", at, rank=0),
    )
    config, registry = config_with(fake_spec(declared))
    ts = TriggerSet.from_config(config, start=T0, plugins=registry)
    names = [f.name for f in ts.due(T0 + timedelta(seconds=30)) if f.at.minute == 1]
    assert names == ["b-early", "a-late", "session-tick"]


@pytest.mark.parametrize(
    ("schedules", "message"),
    [
        (
            (Schedule("session-tick", "x", Interval(timedelta(minutes=1))),),
            "two triggers are named 'session-tick'",
        ),
        ((Schedule("r", "x", Interval(timedelta(0))),), "an interval must be positive"),
    ],
)
def test_bad_declarations_are_refused(schedules: tuple[Schedule, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_triggers(TriggerConfig(schedules=schedules), start=T0)


def test_the_plan_names_no_plugin() -> None:
    tree = ast.parse(inspect.getsource(plan))
    imported = [
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    ] + [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    assert not [name for name in imported if name.startswith("controller.policy.plugins")]
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    strings = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]
    assert not [text for text in strings if "tdm" in text.lower() or "window" in text]
