"""Process settings: grouped, documented field by field, errors naming key and value."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from controller.drive.settings import DEFAULT_LOG, Settings, load_settings
from controller.policy.framework.errors import ConfigError


def test_defaults() -> None:
    settings = load_settings()
    assert settings == Settings()
    assert settings.log.url == DEFAULT_LOG == "tide.db"
    assert settings.checkpoints.url is None
    assert (settings.kube.kubeconfig, settings.kube.context) == (None, None)
    assert settings.effector.dry_run is False
    assert settings.triggers.tick is None


def test_values_are_read_per_group() -> None:
    settings = load_settings(
        {
            "log": {"url": "sqlite:///x.db"},
            "kube": {"kubeconfig": "/k/config", "context": "prod"},
            "effector": {"dry_run": True, "eviction_grace_seconds": 30},
            "triggers": {"tick": "PT2S"},
        }
    )
    assert settings.log.url == "sqlite:///x.db"
    assert settings.kube.kubeconfig == Path("/k/config")
    assert settings.effector.eviction_grace_seconds == 30
    assert settings.triggers.tick == timedelta(seconds=2)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"effector": {"eviction_grace_seconds": -1}},
            "effector.eviction_grace_seconds: -1: Input should be greater than or equal to 0",
        ),
        ({"log": {"url": " "}}, 'log.url: " ": must name a log'),
        ({"triggers": {"tick": 0}}, "triggers.tick: 0: must be positive"),
        ({"kube": {"namespace": "x"}}, 'kube.namespace: "x": unknown setting'),
        ({"kube": {"contxt": "x"}}, 'kube.contxt: "x": unknown setting (did you mean context?)'),
        ({"efector": {}}, "efector: {}: unknown setting (did you mean effector?)"),
        (
            {"effector": {"dryrun": True}},
            "effector.dryrun: True: unknown setting (did you mean dry_run?)",
        ),
        (
            {"leader_election": {"lease_nam": "x"}},
            'leader_election.lease_nam: "x": unknown setting (did you mean lease_name?)',
        ),
        (
            {"effector": {"dry_run": "maybe"}},
            'effector.dry_run: "maybe": Input should be a valid boolean, unable to interpret input',
        ),
    ],
)
def test_errors_name_key_and_value(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(raw)
    assert str(info.value) == message


def test_settings_are_frozen() -> None:
    settings = load_settings()
    with pytest.raises(ValueError):
        settings.log.url = "elsewhere.db"


def _models(model: type[BaseModel]) -> list[type[BaseModel]]:
    out = [model]
    for info in model.model_fields.values():
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            out += _models(info.annotation)
    return out


@pytest.mark.parametrize("model", _models(Settings), ids=lambda m: m.__name__)
def test_every_field_has_a_docstring(model: type[BaseModel]) -> None:
    assert model.__doc__
    assert {name: bool(info.description) for name, info in model.model_fields.items()} == {
        name: True for name in model.model_fields
    }


def _log_defaults() -> dict[str, object]:
    import typer.core
    import typer.main

    from controller.cli import app

    def walk(command: Any, path: str) -> dict[str, object]:
        found: dict[str, object] = {}
        if isinstance(command, typer.core.TyperGroup):  # its commands load when looked up
            ctx = typer.Context(command)
            for name in sorted(command.list_commands(ctx)):
                found |= walk(command.get_command(ctx, name), f"{path} {name}")
        for param in command.params:
            if "--log" in param.opts:
                found[path] = param.default
        return found

    return walk(typer.main.get_command(app), "tide")


def test_one_log_default_for_every_command() -> None:
    defaults = _log_defaults()
    assert {"tide state", "tide log export", "tide audit why"} <= set(defaults)
    # `tide simulate --log` is optional (keep the log only when asked): None, not a default.
    assert {path: d for path, d in defaults.items() if d is not None} == {
        path: DEFAULT_LOG for path, d in defaults.items() if d is not None
    }
    assert defaults["tide simulate"] is None
