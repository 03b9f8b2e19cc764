"""`tide run`: the live controller — watch, decide on the real clock, act through the API.

The command is the composition root of the live loop: it validates the configuration and
the settings, connects to the cluster, opens the log, folds it, records the configuration
(``config.applied``, with its behaviour level), and runs
:class:`controller.loop.live.LiveLoop` with the recorder's sources feeding it, the
configuration's triggers on the (possibly shifted) wall clock, and the Kubernetes
effector behind the exactly-once applier. ``--dry-run`` decides and records everything and
calls nothing that changes the cluster (every outcome ``effect.skipped: dry-run``). SIGTERM
or SIGINT stops the sources, lets the effects under way finish, hands back the ones
waiting for their time, and leaves a World checkpoint in the log's file.

The leadership and the observer are parameters of :func:`run_live`, so a caller wires a
Lease elector and a Prometheus observer with a few lines; the command uses
:class:`~controller.loop.leadership.AlwaysLeader` and
:class:`~controller.observe.hooks.NoObserver`.
"""

from __future__ import annotations

import asyncio
import signal
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import typer

from controller.cli.common import fail, read_policy, save_checkpoint
from controller.effector.applier import Applier
from controller.effector.kubernetes import EffectorOptions, KubernetesEffector
from controller.effector.limits import EvictionLimits
from controller.framework.errors import ConfigError
from controller.kube.client import KubeClient, KubeConfigError
from controller.kube.errors import KubeError
from controller.loop.leadership import Leadership
from controller.loop.live import LiveLoop
from controller.loop.step import Step
from controller.observe.hooks import LiveObserver
from controller.policy import Policy
from controller.settings import DEFAULT_LOG, Settings, load_settings
from controller.sources.health import parse_address
from controller.sources.recorder import Recorder, RecorderOptions
from controller.triggers.clock import ShiftedClock, SystemClock
from projections.ownership import CURRENT as CURRENT_BEHAVIOUR
from streams.backends import open_log
from streams.events import make_event
from streams.log import LogError
from streams.payloads import ConfigPayload, as_json


def _warn(line: str) -> None:
    typer.echo(f"warning: {line}", err=True)


def _say(line: str) -> None:
    typer.echo(line, err=True)


def effector_options(settings: Settings) -> EffectorOptions:
    """The effector's options from the ``effector`` settings group."""
    group = settings.effector
    return EffectorOptions(
        dry_run=group.dry_run,
        grace_seconds=group.eviction_grace_seconds,
        attempts=group.attempts,
        limits=EvictionLimits(
            per_node=group.max_evictions_per_node,
            per_namespace=group.max_evictions_per_namespace,
            per_cluster=group.max_evictions_per_cluster,
        ),
    )


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
    """Run the live controller until ``stop`` (default: SIGTERM / SIGINT); the loop run."""
    if stop is None:  # first: a SIGTERM while starting is a clean stop too
        stop = asyncio.Event()
        running = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            running.add_signal_handler(signum, stop.set)
    offset = settings.triggers.clock_offset
    clock = ShiftedClock(SystemClock(), offset) if offset else SystemClock()
    try:
        client = await KubeClient.connect(settings.kube.kubeconfig, settings.kube.context)
    except KubeConfigError as exc:
        fail(str(exc))
    async with client, await open_log(settings.log.url) as log:
        step = Step(config=policy.config, eviction=policy.eviction)
        loop = LiveLoop(
            step,
            log,
            clock=clock,
            config=policy.config,
            offset=offset,
            leadership=leadership,
            observer=observer,
        )
        effector = KubernetesEffector(client, now=clock.now, options=effector_options(settings))
        loop.applier = Applier(effector, loop.effects, loop.write, now=clock.now)
        recorder = Recorder(client, log, now=clock.now, options=options, warn=_warn, sink=loop.feed)
        loop.append = recorder.chain.append
        payload: ConfigPayload = {
            "config": dict(policy.raw),
            "source": source,
            "behaviour": CURRENT_BEHAVIOUR,
        }
        try:
            await recorder.prepare(make_event("config.applied", clock.now(), as_json(payload)))
        except OSError as exc:
            fail(f"--health-address {options.health_address}: {exc}")
        folded = await loop.prepare()
        pending = len(loop.effects.pending)
        mode = "dry run: nothing will be changed" if settings.effector.dry_run else "acting"
        _say(
            f"running against {client.host} onto {log.url or settings.log.url} ({mode}); "
            f"{folded} records folded, {pending} decisions to reconcile"
        )
        await loop.run(stop, recorder)
        _say(
            f"stopped: {len(loop.decisions)} decisions written, "
            f"{len(loop.effects.pending)} without an outcome"
        )
        return loop


def run(
    config: Annotated[Path, typer.Option("--config", "-c", help="tide configuration YAML.")],
    kubeconfig: Annotated[
        Path | None, typer.Option(help="kubeconfig file (default: in-cluster, $KUBECONFIG).")
    ] = None,
    context: Annotated[str | None, typer.Option(help="kubeconfig context.")] = None,
    log: Annotated[str, typer.Option(help="Log URL or .db path to append to.")] = DEFAULT_LOG,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Decide and record; change nothing in the cluster.")
    ] = False,
    metrics_interval: Annotated[
        float, typer.Option(help="Seconds between metrics.k8s.io polls; 0 polls none.")
    ] = 10.0,
    health_address: Annotated[
        str, typer.Option(help="host:port of /healthz and /readyz; '' serves none.")
    ] = "127.0.0.1:8081",
    watch_timeout: Annotated[
        int, typer.Option(help="Seconds each watch request lasts before it is renewed.")
    ] = 300,
    clock_offset: Annotated[
        float,
        typer.Option(help="Seconds added to the wall clock (trials and tests only; 0 live)."),
    ] = 0.0,
    max_evictions_per_node: Annotated[
        int | None, typer.Option(help="Guard rail: evictions per node per minute.")
    ] = None,
    max_evictions_per_namespace: Annotated[
        int | None, typer.Option(help="Guard rail: evictions per namespace per minute.")
    ] = None,
    max_evictions_per_cluster: Annotated[
        int | None, typer.Option(help="Guard rail: evictions in the cluster per minute.")
    ] = None,
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
            }
        )
    except ConfigError as exc:
        fail(str(exc))
    if metrics_interval < 0:
        fail(f"--metrics-interval {metrics_interval}: must be 0 (none) or positive")
    if watch_timeout <= 0:
        fail(f"--watch-timeout {watch_timeout}: must be positive")
    if health_address:
        try:
            parse_address(health_address)
        except ValueError as exc:
            fail(f"--health-address: {exc}")
    options = RecorderOptions(
        metrics_interval=metrics_interval or None,
        watch_timeout=watch_timeout,
        health_address=health_address or None,
    )
    try:
        asyncio.run(run_live(settings, policy, options, source=str(config)))
    except KubeError as exc:
        fail(f"{exc} (does the ClusterRole in deploy/ grant it?)")
    except (LogError, ValueError) as exc:
        fail(str(exc))
    save_checkpoint(settings.log.url)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
    app.command("run")(run)
