"""The one policy loader: scheduler configuration + eviction configuration → a :class:`Policy`.

A tide configuration file holds two configurations: the Volcano-style scheduler part
(``actions``, ``tiers``, ``configurations`` and tide's ``timezone`` / ``schedulerName`` /
``sessionTick``; :mod:`controller.policy.framework.config`) and the Koordinator-style
``eviction:`` section (:mod:`controller.policy.pressure.config`). Every consumer — the CLI, the
demo, the simulator and ``tide replay`` (from a log's ``config.applied``) — loads both
here, with the built-in plugin and action tables (:mod:`controller.policy.builtins`) unless told
otherwise, so they cannot drift apart.

Errors stay those of the two parsers: :class:`~controller.policy.framework.errors.ConfigError`
naming the key and the value. Warnings (skipped plugins/actions, unknown keys) are
collected in :attr:`Policy.warnings`, scheduler first, for the caller to print once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from controller.policy.builtins import BUILTIN_ACTIONS, BUILTIN_PLUGINS
from controller.policy.framework import config as scheduler_config
from controller.policy.framework.config import ActionRegistry, PluginRegistry, TideConfig
from controller.policy.framework.unwrap import is_kube_object
from controller.policy.pressure.config import EvictionConfig, parse_eviction_config

__all__ = ["Policy", "load_config", "load_policy"]


@dataclass(frozen=True, eq=False)
class Policy:
    """Everything a decision depends on besides the log: both configurations, validated.

    ``raw`` is the configuration as given (what ``config.applied`` records); ``eviction``
    is None when the configuration has no (or an empty) ``eviction:`` section.
    Compared and hashed by identity, like :class:`TideConfig`.
    """

    config: TideConfig
    eviction: EvictionConfig | None = None
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    warnings: tuple[str, ...] = ()

    @classmethod
    def of(cls, config: TideConfig, eviction: EvictionConfig | None = None) -> Policy:
        """A policy of configurations parsed elsewhere (tests, logs without a config)."""
        warnings = (*config.warnings, *(eviction.warnings if eviction else ()))
        return cls(config, eviction, config.raw, warnings)


def load_config(
    source: Path | str | Mapping[str, Any],
    *,
    plugins: PluginRegistry = BUILTIN_PLUGINS,
    actions: ActionRegistry = BUILTIN_ACTIONS,
    default_behaviour: int = scheduler_config.CURRENT_BEHAVIOUR,
) -> TideConfig:
    """The scheduler configuration alone, validated against the given tables.

    ``source`` is a file path, YAML text or a mapping (see
    :func:`controller.policy.framework.config.load_config`, also for ``default_behaviour``).

    Raises:
        ConfigError: a value is invalid; the message names the key and the value.
    """
    return scheduler_config.load_config(
        source, plugins=plugins, actions=actions, default_behaviour=default_behaviour
    )


def load_policy(
    source: Path | str | Mapping[str, Any],
    *,
    plugins: PluginRegistry = BUILTIN_PLUGINS,
    actions: ActionRegistry = BUILTIN_ACTIONS,
    default_behaviour: int = scheduler_config.CURRENT_BEHAVIOUR,
) -> Policy:
    """Load and validate both configurations of ``source`` into one :class:`Policy`.

    Args:
        source: a file path, YAML text or an already parsed mapping.
        plugins: the plugin table that validates every plugin's arguments.
        actions: the action table that validates every action's ``configurations``.
        default_behaviour: the behaviour level of a configuration without one (an old
            log's configuration: ``LEGACY_BEHAVIOUR``).

    Raises:
        ConfigError: a value is invalid; the message names the key and the value.
    """
    config = load_config(
        source, plugins=plugins, actions=actions, default_behaviour=default_behaviour
    )
    eviction = parse_eviction_config(config.eviction) if config.eviction else None
    # a wrapped configuration (a ConfigMap) is recorded unwrapped: what runs is what
    # config.applied records
    plain = isinstance(source, Mapping) and not is_kube_object(source)
    raw = source if plain and isinstance(source, Mapping) else config.raw
    warnings = (*config.warnings, *(eviction.warnings if eviction else ()))
    return Policy(config, eviction, raw, warnings)
