"""The wiring of the live controller (``tide run``): settings and a policy in, a loop out.

:func:`wire_live` takes the process settings, the loaded policy, the recorder's options,
and the connected client, the open log and the clock, and builds the run: the
:class:`~controller.policy.step.Step` on a :class:`~controller.drive.loop.live.LiveLoop`
(the configuration's triggers on the clock), the
:class:`~controller.drive.effector.kubernetes.KubernetesEffector` behind the exactly-once
:class:`~controller.drive.effector.applier.Applier`, and the
:class:`~controller.drive.sources.recorder.Recorder` whose sources feed the loop and whose
hash chain writes its records, plus the ``config.applied`` record (with its behaviour
level) the run starts with. The command (``controller.cli.run_cmd``) connects, serves,
prepares, runs and reports; nothing here prints or exits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from controller.drive.clock import Clock
from controller.drive.effector.applier import Applier
from controller.drive.effector.kubernetes import EffectorOptions, KubernetesEffector
from controller.drive.effector.limits import EvictionLimits
from controller.drive.kube.client import KubeClient
from controller.drive.kube.lease import LeaseElector
from controller.drive.loop.leadership import Leadership
from controller.drive.loop.live import LiveLoop
from controller.drive.observe.hooks import LiveObserver, NoObserver
from controller.drive.settings import Settings
from controller.drive.sources.recorder import Recorder, RecorderOptions
from controller.policy.framework.config import run_behaviour
from controller.policy.loader import Policy
from controller.policy.step import Step
from projections.checkpoints import CheckpointPolicy
from streams.events import Event, make_event
from streams.log import EventLog
from streams.payloads import ConfigPayload, as_json


def lease_elector(client: KubeClient, settings: Settings) -> LeaseElector:
    """The Lease elector of the ``leader_election`` settings group."""
    group = settings.leader_election
    return LeaseElector(
        client,
        name=group.lease_name,
        namespace=group.lease_namespace,
        identity=group.identity,
        lease_duration=group.lease_duration_seconds,
        renew_deadline=group.renew_deadline_seconds,
        retry_period=group.retry_period_seconds,
    )


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


@dataclass(frozen=True)
class LiveRun:
    """A wired live run: the loop (step, triggers, applier), the recorder feeding it, and
    the ``config.applied`` record to prepare the recorder with."""

    loop: LiveLoop
    recorder: Recorder
    applied: Event


@dataclass(frozen=True)
class LiveParts:
    """What a live run is wired from, besides the settings and the policy: the connected
    client, the open log, the clock, and the optional leadership and observer."""

    client: KubeClient
    log: EventLog
    clock: Clock
    leadership: Leadership | None = None
    observer: LiveObserver | None = None


def wire_live(
    settings: Settings,
    policy: Policy,
    *,
    options: RecorderOptions,
    parts: LiveParts,
    source: str,
    warn: Callable[[str], None],
) -> LiveRun:
    """Build the live run of ``policy`` under ``settings`` (see the module docstring).

    ``options``: the recorder's (its sources and their intervals); ``parts``: what is already
    open; ``source``: the configuration's origin recorded in ``config.applied``; ``warn``
    hears the recorder's warnings.
    """
    clock = parts.clock
    observer = parts.observer if parts.observer is not None else NoObserver()
    step = Step(config=policy.config, eviction=policy.eviction)
    loop = LiveLoop(
        step,
        parts.log,
        clock=clock,
        config=policy.config,
        offset=settings.triggers.clock_offset,
        leadership=parts.leadership,
        observer=observer,
    )
    effector = KubernetesEffector(
        parts.client,
        now=clock.now,
        options=effector_options(settings),
        event_failed=observer.event_failed,
    )
    loop.applier = Applier(effector, loop.effects, loop.write, now=clock.now)
    loop.readers.append(effector.guard.seen)
    recorder = Recorder(
        parts.client, parts.log, now=clock.now, options=options, warn=warn, sink=loop.feed
    )
    loop.append = recorder.chain.append
    try:  # checkpoints kept while running, at the writers' intervals (docs/checkpoints.md)
        loop.checkpoint_policy = CheckpointPolicy.from_env()
    except ValueError as exc:
        warn(f"{exc}: no checkpoints kept while running")
    payload: ConfigPayload = {
        "config": dict(policy.raw),
        "source": source,
        "behaviour": run_behaviour(policy.config),
    }
    applied = make_event("config.applied", clock.now(), as_json(payload))
    return LiveRun(loop, recorder, applied)
