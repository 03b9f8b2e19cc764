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

A configuration a person gives (``strict=True``: the CLI's ``--config``) is held to more:
a top-level key, an action or a plugin whose name is a near miss of one tide implements
(:mod:`controller.policy.framework.spelling`: ``timezne``, ``shufle``, ``tmd``) is an error
with "did you mean …?", not a warning — while a name Volcano defines and tide does not
implement (``binpack``, ``reclaim``) is still skipped with its one warning. A log's own
``config.applied`` is history and loads as it was recorded (never strict).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from controller.policy.builtins import BUILTIN_ACTIONS, BUILTIN_PLUGINS
from controller.policy.framework import config as scheduler_config
from controller.policy.framework.config import ActionRegistry, PluginRegistry, TideConfig
from controller.policy.framework.errors import ConfigError
from controller.policy.framework.spelling import near_miss
from controller.policy.framework.unwrap import is_kube_object
from controller.policy.pressure.config import EvictionConfig, parse_eviction_config

__all__ = ["FOREIGN_ACTIONS", "FOREIGN_PLUGINS", "Policy", "load_config", "load_policy"]

#: Volcano's plugins tide does not implement (volcano-sh/volcano pkg/scheduler/plugins):
#: skipped with a warning, never taken for a misspelling of one tide has
FOREIGN_PLUGINS = frozenset(
    {
        "binpack",
        "capacity",
        "cdp",
        "deviceshare",
        "drf",
        "extender",
        "network-topology-aware",
        "nodegroup",
        "numaaware",
        "overcommit",
        "pdb",
        "resource-strategy-fit",
        "resourcequota",
        "sla",
        "task-topology",
    }
)
#: Volcano's actions tide does not implement (pkg/scheduler/actions)
FOREIGN_ACTIONS = frozenset({"enqueue", "reclaim"})


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
    strict: bool = False,
) -> Policy:
    """Load and validate both configurations of ``source`` into one :class:`Policy`.

    Args:
        source: a file path, YAML text or an already parsed mapping.
        plugins: the plugin table that validates every plugin's arguments.
        actions: the action table that validates every action's ``configurations``.
        default_behaviour: the behaviour level of a configuration without one (an old
            log's configuration: ``LEGACY_BEHAVIOUR``).
        strict: a near miss of a name tide implements is an error (a configuration a
            person gives), not a warning (a log's recorded configuration).

    Raises:
        ConfigError: a value is invalid; the message names the key and the value.
    """
    plain = isinstance(source, Mapping) and not is_kube_object(source)
    if strict and plain and isinstance(source, Mapping):  # before "no actions or tiers"
        keys = scheduler_config.TIDE_KEYS | scheduler_config.VOLCANO_KEYS
        for key in sorted(str(k) for k in source):
            _check(key, source[key], key, keys, "top-level key")
    config = load_config(
        source, plugins=plugins, actions=actions, default_behaviour=default_behaviour
    )
    if strict:
        _refuse_near_misses(config.raw, plugins=plugins, actions=actions)
    eviction = parse_eviction_config(config.eviction) if config.eviction else None
    # a wrapped configuration (a ConfigMap) is recorded unwrapped: what runs is what
    # config.applied records
    raw = source if plain and isinstance(source, Mapping) else config.raw
    warnings = (*config.warnings, *(eviction.warnings if eviction else ()))
    return Policy(config, eviction, raw, warnings)


def _refuse_near_misses(
    raw: Mapping[str, Any], *, plugins: PluginRegistry, actions: ActionRegistry
) -> None:
    """Raise on the first name in ``raw`` (an unwrapped, already validated configuration)
    that is a near miss of a top-level key, an action or a plugin tide implements."""
    keys = scheduler_config.TIDE_KEYS | scheduler_config.VOLCANO_KEYS
    for key in sorted(str(k) for k in raw):
        _check(key, raw[key], key, keys, "top-level key")
    if "actions" in raw:
        names = raw["actions"]
        listed = names.split(",") if isinstance(names, str) else list(names)
        for name in (str(n).strip() for n in listed):
            _check("actions", names, name, actions, "action", foreign=FOREIGN_ACTIONS)
    configurations = raw.get("configurations")
    if isinstance(configurations, list):
        for i, entry in enumerate(configurations):
            name = str(entry.get("name"))
            key = f"configurations[{i}].name"
            _check(key, name, name, actions, "action", foreign=FOREIGN_ACTIONS)
    for i, tier in enumerate(raw.get("tiers") or []):
        for j, entry in enumerate(tier.get("plugins") or []):
            name = str(entry.get("name"))
            key = f"tiers[{i}].plugins[{j}].name"
            _check(key, name, name, plugins, "plugin", foreign=FOREIGN_PLUGINS)


def _check(
    key: str,
    value: Any,
    name: str,
    known: Iterable[str],
    what: str,
    *,
    foreign: Iterable[str] = (),
) -> None:
    meant = near_miss(name, known, foreign=foreign)
    if meant is not None:
        problem = f"tide has no {what} {name!r} (did you mean {meant}?)"
        raise ConfigError(key, _brief(value), problem)


def _brief(value: Any) -> Any:
    """A value short enough for the one error line (a section is not printed whole)."""
    if isinstance(value, Mapping):
        return _Elided("{...}")
    if isinstance(value, list):
        return _Elided("[...]")
    return value


@dataclass(frozen=True)
class _Elided:
    """Stands for a section in an error line: shown as ``{...}`` or ``[...]``."""

    text: str

    def __repr__(self) -> str:
        return self.text
