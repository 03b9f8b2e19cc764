"""`tide record`: watch a real cluster onto the log, read only.

The command is the composition root of the recorder: it validates the configuration,
reads the cluster configuration (kubeconfig or in-cluster), opens the log, hands the
wall clock's ``now`` to :class:`controller.drive.sources.recorder.Recorder`, turns SIGTERM and
SIGINT into a clean stop, prints progress on a terminal, and leaves a World checkpoint in
the log's file when it stops. Every failure it cannot recover from is one line on stderr.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from controller.cli.common import fail, read_policy, run_against_cluster, stop_on_signals
from controller.drive.clock import SystemClock
from controller.drive.kube.client import KubeClient, KubeConfigError
from controller.drive.settings import DEFAULT_LOG, Settings, load_settings
from controller.drive.sources.health import parse_address
from controller.drive.sources.recorder import Recorder, RecorderOptions
from controller.policy.framework.errors import ConfigError
from streams.backends import open_log
from streams.events import make_event
from streams.payloads import ConfigPayload, as_json

#: seconds between two progress lines on a terminal
PROGRESS_EVERY = 2.0

# The options `tide record` and `tide run` share (both watch a cluster onto a log).
ConfigOption = Annotated[Path, typer.Option("--config", "-c", help="tide configuration YAML.")]
KubeconfigOption = Annotated[
    Path | None, typer.Option(help="kubeconfig file (default: in-cluster, $KUBECONFIG).")
]
ContextOption = Annotated[str | None, typer.Option(help="kubeconfig context.")]
LogOption = Annotated[str, typer.Option(help="Log URL or .db path to append to.")]
MetricsIntervalOption = Annotated[
    float, typer.Option(help="Seconds between metrics.k8s.io polls; 0 polls none.")
]
WatchTimeoutOption = Annotated[
    int, typer.Option(help="Seconds each watch request lasts before it is renewed.")
]


def recorder_options(
    metrics_interval: float, watch_timeout: int, health_address: str | None
) -> RecorderOptions:
    """The recorder's options from the command line, or a one-line error naming the option."""
    if metrics_interval < 0:
        fail(f"--metrics-interval {metrics_interval}: must be 0 (none) or positive")
    if watch_timeout <= 0:
        fail(f"--watch-timeout {watch_timeout}: must be positive")
    return RecorderOptions(
        metrics_interval=metrics_interval or None,
        watch_timeout=watch_timeout,
        health_address=health_address,
    )


def _warn(line: str) -> None:
    typer.echo(f"warning: {line}", err=True)


def _say(line: str) -> None:
    typer.echo(line, err=True)


async def _progress(recorder: Recorder) -> None:
    last, then = 0, time.monotonic()
    while True:
        await asyncio.sleep(PROGRESS_EVERY)
        now = time.monotonic()
        rate = (recorder.written - last) / (now - then)
        last, then = recorder.written, now
        _say(
            f"listed {recorder.tap.stats.listed} objects · {recorder.written} records · "
            f"{rate:.0f} records/s · lag {recorder.lag * 1000:.0f} ms"
        )


async def _announce_ready(recorder: Recorder) -> None:
    while not recorder.ready:
        await asyncio.sleep(0.05)
    _say(f"ready: {recorder.tap.stats.listed} objects listed, {recorder.written} records written")


async def _record(settings: Settings, options: RecorderOptions, config: ConfigPayload) -> None:
    clock = SystemClock()
    try:
        client = await KubeClient.connect(settings.kube.kubeconfig, settings.kube.context)
    except KubeConfigError as exc:
        fail(str(exc))
    async with client, await open_log(settings.log.url) as log:
        recorder = Recorder(client, log, now=clock.now, options=options, warn=_warn)
        applied = make_event("config.applied", clock.now(), as_json(config))
        try:
            await recorder.prepare(applied)
        except OSError as exc:
            fail(f"--health-address {options.health_address}: {exc}")
        stop = stop_on_signals()
        health = recorder.health
        where = f"; probes on http://{health.host}:{health.port}" if health is not None else ""
        _say(f"recording {client.host} onto {log.url or settings.log.url}{where}")
        helpers = [asyncio.create_task(_announce_ready(recorder))]
        if sys.stderr.isatty():
            helpers.append(asyncio.create_task(_progress(recorder)))
        try:
            await recorder.run(stop)
        finally:
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
        _say(f"stopped: {recorder.written} records written")


def record(
    config: ConfigOption,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    log: LogOption = DEFAULT_LOG,
    metrics_interval: MetricsIntervalOption = 10.0,
    health_address: Annotated[
        str, typer.Option(help="host:port of /healthz and /readyz; '' serves none.")
    ] = "127.0.0.1:8081",
    watch_timeout: WatchTimeoutOption = 300,
) -> None:
    """Watch a cluster (read only) and append what it sees to the log, until SIGTERM."""
    policy = read_policy(config)
    try:
        settings = load_settings(
            {"log": {"url": log}, "kube": {"kubeconfig": kubeconfig, "context": context}}
        )
    except ConfigError as exc:
        fail(str(exc))
    options = recorder_options(metrics_interval, watch_timeout, health_address or None)
    if health_address:
        try:
            parse_address(health_address)
        except ValueError as exc:
            fail(f"--health-address: {exc}")
    if policy.eviction is not None and metrics_interval == 0:
        _warn("--metrics-interval 0: pressure eviction is configured but gets no samples")
    payload: ConfigPayload = {"config": dict(policy.raw), "source": str(config)}
    run_against_cluster(_record(settings, options, payload), settings.log.url)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
    app.command("record")(record)
