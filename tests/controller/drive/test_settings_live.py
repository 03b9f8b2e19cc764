"""The settings of `tide run`'s operations: leader election and the metrics endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from controller.drive.settings import load_settings
from controller.policy.framework.errors import ConfigError


def test_defaults_bind_locally_and_elect_nobody() -> None:
    settings = load_settings()
    assert settings.leader_election.enabled is False
    assert (settings.observe.metrics_address, settings.observe.metrics_port) == ("127.0.0.1", 8080)
    assert settings.observe.json_logs is False
    election = settings.leader_election
    assert (
        election.lease_duration_seconds,
        election.renew_deadline_seconds,
        election.retry_period_seconds,
    ) == (15.0, 10.0, 2.0)


@pytest.mark.parametrize(
    ("env", "identity"),
    [
        pytest.param({"POD_NAME": "tide-run-7f9c-abcde"}, "tide-run-7f9c-abcde", id="pod-name"),
        pytest.param({}, None, id="host-name"),
    ],
)
def test_the_identity_defaults_to_the_pod_name(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], identity: str | None
) -> None:
    import socket

    monkeypatch.delenv("POD_NAME", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    got = load_settings().leader_election.identity
    assert got == (identity or socket.gethostname())


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"leader_election": {"renew_deadline_seconds": 20}},
            "need lease_duration_seconds > renew_deadline_seconds > retry_period_seconds",
            id="deadline-beyond-lease",
        ),
        pytest.param(
            {"leader_election": {"retry_period_seconds": 0}},
            "leader_election.retry_period_seconds: 0: Input should be greater than 0",
            id="zero-retry",
        ),
        pytest.param(
            {"leader_election": {"identity": ""}},
            'leader_election.identity: "": String should have at least 1 character',
            id="empty-identity",
        ),
        pytest.param(
            {"observe": {"metrics_port": 70000}},
            "observe.metrics_port: 70000: Input should be less than or equal to 65535",
            id="port-out-of-range",
        ),
    ],
)
def test_errors_name_the_key(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(raw)
    assert message in str(info.value)


def test_values_are_read() -> None:
    settings = load_settings(
        {
            "leader_election": {"enabled": True, "identity": "a", "lease_duration_seconds": 30},
            "observe": {"metrics_address": "0.0.0.0", "metrics_port": 9090, "json_logs": True},
        }
    )
    assert settings.leader_election.enabled and settings.leader_election.identity == "a"
    assert settings.leader_election.lease_duration_seconds == 30
    assert settings.observe.metrics_address == "0.0.0.0"
    assert settings.observe.json_logs is True
