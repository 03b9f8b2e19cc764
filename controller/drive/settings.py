"""Process settings: where the log and checkpoints live, which cluster, how effects apply.

Policy (what to decide) is configuration, loaded by :mod:`controller.policy.loader` and recorded
on the log; *settings* say how this process runs and never change a decision. They are
grouped like kopf's ``OperatorSettings`` (nolar/kopf kopf/_cogs/configs/configuration.py):
one frozen object built once at the edge (the CLI) and passed explicitly to what needs it,
never read from globals.

Validation is pydantic's (v2); :func:`load_settings` turns its errors into a
:class:`~controller.policy.framework.errors.ConfigError` naming the dotted key and the value
(``effector.eviction_grace_seconds: -1: Input should be greater than or equal to 0``).
Unknown keys are errors: a misspelt setting must not be silently ignored, and the error
names the setting it is a near miss of (``effector.dryrun: True: unknown setting (did you
mean dry_run?)``; :mod:`controller.policy.framework.spelling`).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from controller.policy.framework.errors import ConfigError
from controller.policy.framework.spelling import near_miss
from streams.urls import DEFAULT_LOG

__all__ = [
    "DEFAULT_LOG",
    "CheckpointSettings",
    "EffectorSettings",
    "KubeSettings",
    "LeaderElectionSettings",
    "LogSettings",
    "ObserveSettings",
    "Settings",
    "TriggerSettings",
    "load_settings",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class LogSettings(BaseModel):
    """The event log this process reads and appends to."""

    model_config = _FROZEN

    url: str = DEFAULT_LOG
    """Log URL (``sqlite:///path.db``, ``memory://``) or a plain ``.db`` path."""

    @field_validator("url")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a log")
        return value


class CheckpointSettings(BaseModel):
    """Where folded projections are checkpointed, so a restart need not refold from 0."""

    model_config = _FROZEN

    url: str | None = None
    """Checkpoint store URL or ``.db`` path; None keeps no checkpoints (fold from offset 0)."""


class KubeSettings(BaseModel):
    """Which Kubernetes cluster the live sources and effector talk to."""

    model_config = _FROZEN

    kubeconfig: Path | None = None
    """A kubeconfig file; None: in-cluster configuration, else ``$KUBECONFIG`` / ``~/.kube``."""
    context: str | None = None
    """The kubeconfig context to use; None: the file's current context."""


class EffectorSettings(BaseModel):
    """How decisions become effects on the cluster."""

    model_config = _FROZEN

    dry_run: bool = False
    """Record decisions but apply none (each effect is recorded as skipped)."""
    eviction_grace_seconds: int | None = Field(default=None, ge=0)
    """Grace period of an eviction in seconds; None: the pod's own termination grace."""
    use_eviction_api: bool = True
    """Evict through the Eviction API (honours PodDisruptionBudgets) rather than a delete."""
    max_evictions_per_node: int | None = Field(default=None, ge=0)
    """Guard rail of ``tide run``: evictions applied per node per minute; None: no limit."""
    max_evictions_per_namespace: int | None = Field(default=None, ge=0)
    """Guard rail of ``tide run``: evictions applied per namespace per minute; None: no limit."""
    max_evictions_per_cluster: int | None = Field(default=None, ge=0)
    """Guard rail of ``tide run``: evictions applied in the cluster per minute; None: no limit."""
    attempts: int = Field(default=4, ge=1)
    """Tries of an API call answered with a 5xx, a throttling 429 or nothing at all."""


class TriggerSettings(BaseModel):
    """Process-level trigger options (the schedules themselves are policy)."""

    model_config = _FROZEN

    tick: timedelta | None = None
    """Override of the configuration's ``sessionTick``; None: use the configuration's."""
    clock_offset: timedelta = timedelta(0)
    """``tide run`` only: added to the wall clock for the whole run (records, triggers,
    decisions), so a trial or a test can meet an ``HH:MM`` window boundary seconds after
    the start; zero in production."""

    @field_validator("tick")
    @classmethod
    def _positive(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value <= timedelta(0):
            raise ValueError("must be positive")
        return value


def _pod_identity() -> str:
    """This replica's name: ``$POD_NAME`` (the downward API), else the host name (a pod's
    host name is its name)."""
    return os.environ.get("POD_NAME") or socket.gethostname() or "tide"


class LeaderElectionSettings(BaseModel):
    """Leader election among the replicas of ``tide run`` (one leads and acts)."""

    model_config = _FROZEN

    enabled: bool = False
    """Campaign for a Lease before acting; False: this replica always leads."""
    lease_name: str = Field(default="tide-leader", min_length=1)
    """The ``coordination.k8s.io/v1`` Lease the replicas share."""
    lease_namespace: str = Field(default="tide", min_length=1)
    """The Lease's namespace (tide's own)."""
    identity: str = Field(default_factory=_pod_identity, min_length=1)
    """This replica's ``holderIdentity``; default ``$POD_NAME``, else the host name."""
    lease_duration_seconds: float = Field(default=15.0, gt=0)
    """How long after the leader's last renewal a standby may take over."""
    renew_deadline_seconds: float = Field(default=10.0, gt=0)
    """How long the leader retries renewing before it stops acting."""
    retry_period_seconds: float = Field(default=2.0, gt=0)
    """Time between two attempts to acquire or renew."""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not (
            self.lease_duration_seconds > self.renew_deadline_seconds > self.retry_period_seconds
        ):
            raise ValueError(
                "need lease_duration_seconds > renew_deadline_seconds > retry_period_seconds"
            )
        return self


class ObserveSettings(BaseModel):
    """What ``tide run`` tells its operators: the metrics/health endpoint and the logs."""

    model_config = _FROZEN

    metrics_address: str = "127.0.0.1"
    """Address ``/metrics``, ``/healthz`` and ``/readyz`` listen on (``0.0.0.0`` in a pod)."""
    metrics_port: int = Field(default=8080, ge=0, le=65535)
    """Their port (0: any free port)."""
    json_logs: bool = False
    """Log one JSON object per line (for a log collector) instead of plain text."""


class Settings(BaseModel):
    """Every process setting, grouped; build once with :func:`load_settings`."""

    model_config = _FROZEN

    log: LogSettings = LogSettings()
    """The event log."""
    checkpoints: CheckpointSettings = CheckpointSettings()
    """The checkpoint store."""
    kube: KubeSettings = KubeSettings()
    """The Kubernetes connection."""
    effector: EffectorSettings = EffectorSettings()
    """How effects are applied."""
    triggers: TriggerSettings = TriggerSettings()
    """Trigger overrides."""
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)
    """Leader election of ``tide run``."""
    observe: ObserveSettings = ObserveSettings()
    """The metrics endpoint and the logs of ``tide run``."""


def load_settings(raw: Mapping[str, Any] | None = None) -> Settings:
    """Validate a nested mapping of settings (e.g. from CLI options) into :class:`Settings`.

    Raises:
        ConfigError: the first invalid value, naming its dotted key and the value.
    """
    try:
        return Settings.model_validate(dict(raw or {}))
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join(str(part) for part in error["loc"]) or "<settings>"
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = _unknown_key(error["loc"])
        raise ConfigError(key, error.get("input"), message) from exc


def _unknown_key(where: tuple[int | str, ...]) -> str:
    """The message of a key no settings group has, with the key it is a near miss of."""
    model: type[BaseModel] = Settings
    for part in where[:-1]:
        inner = model.model_fields[str(part)].annotation
        if not (isinstance(inner, type) and issubclass(inner, BaseModel)):
            return "unknown setting"
        model = inner
    meant = near_miss(str(where[-1]), model.model_fields)
    return "unknown setting" + (f" (did you mean {meant}?)" if meant else "")
