"""`tide run`: the live controller — watch, decide on the real clock, act through the API.

The command validates the configuration and the settings, connects to the cluster, opens
the log and hands them to :func:`controller.compose.live.wire_live`, which builds the run:
:class:`controller.drive.loop.live.LiveLoop` with the recorder's sources feeding it, the
configuration's triggers on the (possibly shifted) wall clock, and the Kubernetes effector
behind the exactly-once applier; it then records the configuration (``config.applied``,
with its behaviour level), folds the log and runs the loop. ``--dry-run`` decides and
records everything and calls nothing that changes the cluster (every outcome
``effect.skipped: dry-run``). SIGTERM or SIGINT stops the sources, lets the effects under
way finish, hands back the ones waiting for their time, and leaves a World checkpoint in
the log's file.

With ``--leader-elect`` the replicas campaign for a ``coordination.k8s.io/v1`` Lease
(:class:`~controller.drive.kube.lease.LeaseElector`) and only the leader decides and acts; on
SIGTERM the leader finishes its calls in flight, then releases the Lease, so a standby
takes over at its next retry. One HTTP server (:mod:`controller.drive.observe.http`) serves
``/metrics`` (a :class:`~controller.drive.observe.metrics.PrometheusObserver`), ``/healthz`` and
``/readyz`` on ``--metrics-address``/``--metrics-port``; the address really bound is
printed. ``--log-format json`` writes one JSON object per log line, the lines about a
decision and its effect carrying its id.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from enum import StrEnum
from typing import Annotated

import typer

from controller.cli.common import fail, read_policy, run_against_cluster, stop_on_signals
from controller.cli.record_cmd import (
    ConfigOption,
    ContextOption,
    KubeconfigOption,
    LogOption,
    MetricsIntervalOption,
    WatchTimeoutOption,
    recorder_options,
)
from controller.compose.live import LiveParts, LiveRun, lease_elector, wire_live
from controller.drive.clock import ShiftedClock, SystemClock
from controller.drive.kube.client import KubeClient, KubeConfigError
from controller.drive.kube.lease import LeaseElector
from controller.drive.loop.leadership import Leadership
from controller.drive.loop.live import LiveLoop
from controller.drive.observe.hooks import LiveObserver
from controller.drive.observe.http import MetricsServer, serve
from controller.drive.observe.logs import configure_logging
from controller.drive.observe.metrics import PrometheusObserver
from controller.drive.settings import DEFAULT_LOG, Settings, load_settings
from controller.drive.sources.recorder import RecorderOptions
from controller.policy.framework.errors import ConfigError
from controller.policy.loader import Policy
from streams.backends import open_log
from streams.backends.checkpoints import open_log_store
from streams.log import EventLog


class LogFormat(StrEnum):
    """``--log-format``."""

    text = "text"
    json = "json"


def _warn(line: str) -> None:
    typer.echo(f"warning: {line}", err=True)


def _say(line: str) -> None:
    typer.echo(line, err=True)


async def run_live(
    settings: Settings,
    policy: Policy,
    options: RecorderOptions,
    *,
    source: str,
    leadership: Leadership | None = None,
    observer: LiveObserver | None = None,
    stop: asyncio.Event | None = None,
) -> LiveLoop:
    """Run the live controller until ``stop`` (default: SIGTERM / SIGINT); the loop run.

    ``leadership`` None: a Lease elector when ``settings.leader_election`` is enabled, else
    this replica always leads. A :class:`PrometheusObserver` is served on the
    ``settings.observe`` address (``/metrics``, ``/healthz``, ``/readyz``).
    """
    if stop is None:  # first: a SIGTERM while starting is a clean stop too
        stop = stop_on_signals()
    offset = settings.triggers.clock_offset
    clock = ShiftedClock(SystemClock(), offset) if offset else SystemClock()
    try:
        client = await KubeClient.connect(settings.kube.kubeconfig, settings.kube.context)
    except KubeConfigError as exc:
        fail(str(exc))
    async with client, await open_log(settings.log.url) as log:
        if leadership is None and settings.leader_election.enabled:
            leadership = lease_elector(client, settings)
        readiness = Readiness()
        server = await _serve(observer, settings, readiness)
        parts = LiveParts(client, log, clock, leadership=leadership, observer=observer)
        wired = wire_live(settings, policy, options=options, parts=parts, source=source, warn=_warn)
        loop = wired.loop
        try:
            await wired.recorder.prepare(wired.applied)
        except OSError as exc:
            fail(f"--health-address {options.health_address}: {exc}")
        readiness.run = wired
        if isinstance(leadership, LeaseElector):
            _say(
                f"leader election on lease {leadership.namespace}/{leadership.name} "
                f"as {leadership.identity}"
            )
        # start, and take the lead, from the latest checkpoint kept with the log (read
        # only here; written on the way out, by run_against_cluster)
        loop.checkpoints = await open_log_store(log.url or settings.log.url, create=False)
        try:
            folded = await loop.prepare()
            readiness.folded = folded
            _say_running(settings, client=client, log=log, folded=folded, loop=loop)
            await loop.run(stop, wired.recorder)
        finally:
            if loop.checkpoints is not None:
                await loop.checkpoints.close()
            if server is not None:
                await server.close()
        _say(
            f"stopped: {loop.decided} decisions written, "
            f"{len(loop.effects.pending)} without an outcome"
        )
        return loop


class Readiness:
    """What ``/readyz`` names, a line each, filled in as the run is wired and folded."""

    def __init__(self) -> None:
        self.run: LiveRun | None = None
        self.folded: int | None = None

    def lines(self) -> list[str]:
        """The log's fold, then the recorder's sources and metrics, then the lead."""
        if self.run is None:
            return ["log: not open yet"]
        if self.folded is None:
            return ["log: folding"]
        _, sources = self.run.recorder.report()
        lead = "this replica" if self.run.loop.leading else "not this replica (standby)"
        return [f"log: {self.folded} records folded", *sources, f"leader: {lead}"]


async def _serve(
    observer: LiveObserver | None, settings: Settings, readiness: Readiness
) -> MetricsServer | None:
    """Serve ``/metrics``, ``/healthz`` and ``/readyz`` of a Prometheus observer."""
    if not isinstance(observer, PrometheusObserver):
        return None
    address = settings.observe.metrics_address
    try:
        server = await serve(
            observer,
            host=address,
            port=settings.observe.metrics_port,
            report=readiness.lines,
        )
    except OSError as exc:
        fail(f"--metrics-address {address} --metrics-port: {exc}")
    _say(f"serving /metrics /healthz /readyz on {server.url}")
    return server


def _say_running(
    settings: Settings, *, client: KubeClient, log: EventLog, folded: int, loop: LiveLoop
) -> None:
    mode = "dry run: nothing will be changed" if settings.effector.dry_run else "acting"
    _say(
        f"running against {client.host} onto {log.url or settings.log.url} ({mode}); "
        f"{folded} records folded, {len(loop.effects.pending)} decisions to reconcile"
    )


DryRunOption = Annotated[
    bool, typer.Option("--dry-run", help="Decide and record; change nothing in the cluster.")
]
ClockOffsetOption = Annotated[
    float, typer.Option(help="Seconds added to the wall clock (trials and tests only; 0 live).")
]
PerNodeOption = Annotated[
    int | None, typer.Option(help="Guard rail: evictions per node per minute.")
]
PerNamespaceOption = Annotated[
    int | None, typer.Option(help="Guard rail: evictions per namespace per minute.")
]
PerClusterOption = Annotated[
    int | None, typer.Option(help="Guard rail: evictions in the cluster per minute.")
]
LeaderElectOption = Annotated[
    bool,
    typer.Option(
        "--leader-elect/--no-leader-elect",
        help="Campaign for a Lease; only the leader decides and acts.",
    ),
]
LeaseNameOption = Annotated[str, typer.Option(help="The Lease the replicas share.")]
LeaseNamespaceOption = Annotated[str, typer.Option(help="The Lease's namespace.")]
LeaderIdentityOption = Annotated[
    str | None,
    typer.Option(help="This replica's holderIdentity (default: $POD_NAME, else host name)."),
]
LeaseDurationOption = Annotated[
    float, typer.Option(help="Seconds after the last renewal before a standby takes over.")
]
RenewDeadlineOption = Annotated[
    float, typer.Option(help="Seconds the leader keeps failing to renew before it stops.")
]
RetryPeriodOption = Annotated[
    float, typer.Option(help="Seconds between two attempts to acquire or renew.")
]
MetricsAddressOption = Annotated[
    str, typer.Option(help="Address of /metrics, /healthz, /readyz (0.0.0.0: every one).")
]
MetricsPortOption = Annotated[
    int, typer.Option(help="Port of /metrics, /healthz, /readyz (0: any free port).")
]
LogFormatOption = Annotated[
    LogFormat, typer.Option(help="text for a terminal, json (one object a line) for a pod.")
]


def run(
    config: ConfigOption,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    log: LogOption = DEFAULT_LOG,
    dry_run: DryRunOption = False,
    metrics_interval: MetricsIntervalOption = 10.0,
    watch_timeout: WatchTimeoutOption = 300,
    clock_offset: ClockOffsetOption = 0.0,
    max_evictions_per_node: PerNodeOption = None,
    max_evictions_per_namespace: PerNamespaceOption = None,
    max_evictions_per_cluster: PerClusterOption = None,
    leader_elect: LeaderElectOption = False,
    lease_name: LeaseNameOption = "tide-leader",
    lease_namespace: LeaseNamespaceOption = "tide",
    leader_identity: LeaderIdentityOption = None,
    lease_duration: LeaseDurationOption = 15.0,
    renew_deadline: RenewDeadlineOption = 10.0,
    retry_period: RetryPeriodOption = 2.0,
    metrics_address: MetricsAddressOption = "127.0.0.1",
    metrics_port: MetricsPortOption = 8080,
    log_format: LogFormatOption = LogFormat.text,
) -> None:
    """Run the controller: watch the cluster, decide on the real clock, act (until SIGTERM)."""
    policy = read_policy(config)
    try:
        settings = load_settings(
            {
                "log": {"url": log},
                "kube": {"kubeconfig": kubeconfig, "context": context},
                "effector": {
                    "dry_run": dry_run,
                    "max_evictions_per_node": max_evictions_per_node,
                    "max_evictions_per_namespace": max_evictions_per_namespace,
                    "max_evictions_per_cluster": max_evictions_per_cluster,
                },
                "triggers": {"clock_offset": timedelta(seconds=clock_offset)},
                "leader_election": {
                    "enabled": leader_elect,
                    "lease_name": lease_name,
                    "lease_namespace": lease_namespace,
                    "lease_duration_seconds": lease_duration,
                    "renew_deadline_seconds": renew_deadline,
                    "retry_period_seconds": retry_period,
                }
                | ({"identity": leader_identity} if leader_identity is not None else {}),
                "observe": {
                    "metrics_address": metrics_address,
                    "metrics_port": metrics_port,
                    "json_logs": log_format is LogFormat.json,
                },
            }
        )
    except ConfigError as exc:
        fail(str(exc))
    # the one server of /metrics serves the probes too: the recorder serves none of its own
    options = recorder_options(metrics_interval, watch_timeout, None)
    configure_logging(json=settings.observe.json_logs)
    observer = PrometheusObserver()
    run_against_cluster(
        run_live(settings, policy, options, source=str(config), observer=observer),
        settings.log.url,
    )


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
    app.command("run")(run)
