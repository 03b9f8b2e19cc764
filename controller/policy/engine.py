"""The engine: one trigger in, the decisions it causes out.

:func:`run_cycle` is the pure function that both the live loop and ``tide replay
--verify`` call: it opens a session over the world folded up to the trigger, runs the
configured actions in order, closes the session and returns the committed decision
events (``at`` = the trigger's time, ``cause`` = its id). No I/O, no clock, no
randomness; iteration is sorted throughout, so the same log prefix gives the same
decisions.

An action runs only on the trigger kinds it names (``Action.triggers``; e.g. allocate on
the session tick only, shuffle on every trigger); a trigger without a kind runs them all.

Plugins and actions are built once per configuration object (their arguments were
already validated by :func:`~controller.policy.loader.load_policy`), so a cycle pays
only for the session. Built plugins keep no state between sessions: per-session state
is created in ``on_session_open``.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.policy.builtins import BUILTIN_ACTIONS, BUILTIN_PLUGINS
from controller.policy.framework.config import TideConfig, plugin_context, plugin_entries
from controller.policy.framework.plugin import Action, ActionSpec, Plugin, PluginContext, PluginSpec
from controller.policy.framework.session import open_session
from projections.world import PolicyInputs
from streams.events import Event
from streams.payloads import as_trigger

__all__ = ["build_cycle", "run_cycle"]


@dataclass(frozen=True)
class _Built:
    registry: Mapping[str, PluginSpec]
    action_registry: Mapping[str, ActionSpec]
    ctx: PluginContext
    plugins: tuple[Plugin, ...]
    actions: tuple[Action, ...]


_CACHE: weakref.WeakKeyDictionary[TideConfig, _Built] = weakref.WeakKeyDictionary()


def build_cycle(
    config: TideConfig,
    *,
    registry: Mapping[str, PluginSpec] = BUILTIN_PLUGINS,
    actions: Mapping[str, ActionSpec] = BUILTIN_ACTIONS,
) -> _Built:
    """The plugins and actions of ``config``, built once and cached per config object.

    A plugin named in several tier entries is built once, from its first entry's
    arguments. Names missing from the registries are skipped (the loader has warned).
    """
    cached = _CACHE.get(config)
    if cached is not None and cached.registry is registry and cached.action_registry is actions:
        return cached
    ctx = plugin_context(config)
    plugins: dict[str, Plugin] = {}
    for conf, spec, args in plugin_entries(config, registry):
        if conf.name not in plugins:
            plugins[conf.name] = spec.build(args, ctx)
    built_actions: list[Action] = []
    for name in config.actions:
        action_spec = actions.get(name)
        if action_spec is None:
            continue
        if name in config.action_args:
            action_args = config.action_args[name]
        else:
            action_args = action_spec.parse_args(config.configurations.get(name, {}))
        built_actions.append(action_spec.build(action_args))
    built = _Built(registry, actions, ctx, tuple(plugins.values()), tuple(built_actions))
    _CACHE[config] = built
    return built


def run_cycle(
    world: PolicyInputs,
    trigger: Event,
    config: TideConfig,
    *,
    registry: Mapping[str, PluginSpec] = BUILTIN_PLUGINS,
    actions: Mapping[str, ActionSpec] = BUILTIN_ACTIONS,
) -> list[Event]:
    """Run one session for ``trigger`` over ``world``; return the committed decisions."""
    built = build_cycle(config, registry=registry, actions=actions)
    ssn = open_session(world, trigger, tiers=config.tiers, plugins=built.plugins, ctx=built.ctx)
    decisions = run_actions(ssn, built.actions, trigger)
    return decisions


def run_actions(ssn: Any, actions: Any, trigger: Event) -> list[Any]:
    """Run the ``actions`` that answer ``trigger``'s kind in ``ssn``, close and dispose of
    the session, and return its committed decisions (the one action loop: ``run_cycle``
    and the offline bind view, ``replay.bindview``, both run it)."""
    kind = as_trigger(trigger).get("kind")
    running = [
        action
        for action in actions
        if (wanted := getattr(action, "triggers", None)) is None or kind is None or kind in wanted
    ]
    try:
        for position, action in enumerate(running, start=1):
            ssn.last_action = position == len(running)
            action.execute(ssn)
    finally:
        ssn.close()
    decisions = list(ssn.decisions)
    ssn.dispose()  # nobody can reach the session past this call
    return decisions
