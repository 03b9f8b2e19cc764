"""The tide configuration: a Volcano scheduler configuration plus a few tide keys.

A user pastes their Volcano ``volcano-scheduler.conf`` (``actions``, ``tiers``,
``configurations``) as is; tide adds ``timezone`` (IANA; TDM windows are read in it),
``schedulerName`` (the pods tide may bind), ``sessionTick`` (Go duration) and the
``eviction:`` section (Koordinator-style; parsed by the pressure-eviction module).

Everything is validated at load and a mistake stops startup with a message naming the
key and the value (:class:`ConfigError`); each plugin's and action's arguments are
parsed by its own ``parse_args``. Plugins and actions tide does not implement are named
in one warning and skipped, never dropped silently. As Volcano's loader does, every
unset enable flag of a plugin entry is filled with true.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from controller.policy.framework.durations import parse_duration
from controller.policy.framework.errors import ConfigError
from controller.policy.framework.plugin import ActionSpec, PluginContext, PluginSpec
from controller.policy.framework.points import ALL_FLAGS, VICTIM
from controller.policy.framework.safe_yaml import YAMLLimitError, load_yaml_text
from controller.policy.framework.tiers import PluginConf, TierConf, default_flags
from controller.policy.framework.unwrap import unwrap
from projections.behaviour import CURRENT, LEGACY, Change, active
from streams.payloads import RawConfig

PluginRegistry = Mapping[str, PluginSpec]
ActionRegistry = Mapping[str, ActionSpec]

#: Volcano's built-in default (``pkg/scheduler/util.go``), used when neither
#: ``actions`` nor ``tiers`` is given.
VOLCANO_DEFAULT: Mapping[str, Any] = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {
            "plugins": [
                {"name": "overcommit"},
                {"name": "drf"},
                {"name": "predicates"},
                {"name": "proportion"},
                {"name": "nodeorder"},
            ]
        },
    ],
}
#: The behaviour level key: a configuration runs with the plugins that existed at its level.
#: Loading stamps the level in force into ``raw`` (so ``config.applied`` carries it) when the
#: configuration names a plugin or action newer than :data:`LEGACY_BEHAVIOUR`; a configuration read
#: back from an old log has none and means :data:`LEGACY_BEHAVIOUR`.
BEHAVIOUR = "behaviour"
#: before ``nodeorder``, ``usage`` and ``rescheduling`` (plugins) and ``preempt`` and
#: ``backfill`` (actions) existed (they were skipped): ``projections.behaviour.LEGACY``
LEGACY_BEHAVIOUR = LEGACY
#: one level for every rule that changed: the newest of ``projections.behaviour.CHANGES``
CURRENT_BEHAVIOUR = CURRENT
TIDE_KEYS = frozenset(
    {"timezone", "schedulerName", "sessionTick", "eviction", "preemptableByDefault", BEHAVIOUR}
)

VOLCANO_KEYS = frozenset({"actions", "tiers", "configurations", "metrics"})


@dataclass(frozen=True, eq=False)
class TideConfig:
    """A loaded, validated configuration.

    Immutable, compared and hashed by identity: the engine caches the plugins it builds
    per configuration object, so a configuration is parsed and built once.
    """

    actions: tuple[str, ...] = ("allocate",)
    tiers: tuple[TierConf, ...] = ()
    #: action name -> its raw ``configurations`` arguments.
    configurations: Mapping[str, Mapping[str, Any]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    timezone: str = "UTC"
    scheduler_name: str = "volcano"
    #: every scheduler name whose pods tide owns (the first is the one tide binds for)
    scheduler_names: tuple[str, ...] = ("volcano",)
    #: upstream Volcano's default for a task with no ``volcano.sh/preemptable`` mark
    preemptable_by_default: bool = False
    tick: timedelta = timedelta(seconds=1)
    #: The raw ``eviction:`` section (parsed by the pressure-eviction module).
    eviction: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: The whole parsed YAML, for ``config.applied``.
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    warnings: tuple[str, ...] = ()
    #: action name -> its parsed arguments (from the action's ``parse_args``).
    action_args: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


def run_behaviour(config: TideConfig) -> int:
    """The behaviour level a new run of ``config`` stamps on ``config.applied``.

    The configuration's own ``behaviour`` key where it has one (a configuration stamped 2
    keeps level 2's rules exactly, the quiet-tick rule included), else
    :data:`CURRENT_BEHAVIOUR`.
    """
    level = config.raw.get(BEHAVIOUR)
    if isinstance(level, int) and not isinstance(level, bool):
        return level
    return CURRENT_BEHAVIOUR


def plugin_context(config: TideConfig) -> PluginContext:
    """What every plugin of ``config`` may know besides its arguments (zone, scheduler)."""
    return PluginContext(
        timezone=ZoneInfo(config.timezone), scheduler_name=config.scheduler_name, options={}
    )


def plugin_entries(
    config: TideConfig, registry: Mapping[str, PluginSpec]
) -> Iterator[tuple[PluginConf, PluginSpec, Any]]:
    """Every plugin entry of every tier, in order, with its spec and parsed arguments.

    Entries naming a plugin missing from ``registry`` are skipped (the loader has warned).
    Arguments already validated by :func:`load_config` are reused, not parsed again.
    """
    for tier in config.tiers:
        for conf in tier.plugins:
            spec = registry.get(conf.name)
            if spec is None:
                continue
            yield (
                conf,
                spec,
                conf.args if conf.args is not None else spec.parse_args(conf.arguments),
            )


def load_config(
    source: Path | str | Mapping[str, Any],
    *,
    plugins: PluginRegistry,
    actions: ActionRegistry,
    default_behaviour: int = CURRENT_BEHAVIOUR,
) -> TideConfig:
    """Load and validate a configuration from a file path, YAML text or a mapping.

    ``default_behaviour`` is the level of a configuration without a ``behaviour`` key
    (replay passes :data:`LEGACY_BEHAVIOUR` for a log's own configuration); plugins and
    actions whose spec's ``since`` change is not active at that level are skipped as
    unimplemented.

    A ``str`` naming an existing file is read as that file; any other ``str`` is YAML
    text. ``plugins``/``actions`` are the registries that validate every plugin's and
    action's arguments (the framework sits below the tables:
    :func:`controller.policy.loader.load_config` passes the built-in ones).

    Raises:
        ConfigError: a value is invalid; the message names the key and the value.
    """
    raw, notes = unwrap(_read(source))
    level = _behaviour(raw.get(BEHAVIOUR, default_behaviour))
    plugin_table = {name: spec for name, spec in plugins.items() if _exists(spec.since, level)}
    action_table = {name: spec for name, spec in actions.items() if _exists(spec.since, level)}
    unknown = sorted(str(k) for k in raw if k not in TIDE_KEYS | VOLCANO_KEYS)
    if "actions" in raw or "tiers" in raw:
        scheduler = raw
    elif unknown:
        raise ConfigError(
            "<configuration>",
            ", ".join(unknown),
            "no actions or tiers, and keys tide does not know: not running Volcano's "
            "built-in default in its place (is it a wrapped or misspelled configuration?)",
        )
    else:
        scheduler = {**VOLCANO_DEFAULT, **raw}
    skipped_plugins: list[str] = []
    skipped_actions: list[str] = []
    action_names = _actions(scheduler.get("actions", ""))
    implemented: list[str] = []
    for name in action_names:
        (implemented if name in action_table else skipped_actions).append(name)
    warnings = list(notes)
    tiers = _tiers(scheduler.get("tiers"), plugin_table, skipped_plugins, warnings)
    configurations = _configurations(raw.get("configurations"))
    if BEHAVIOUR not in raw and (
        any(plugin_table[conf.name].since is not None for tier in tiers for conf in tier.plugins)
        or any(action_table[name].since is not None for name in implemented)
    ):
        raw[BEHAVIOUR] = level  # only where the level matters: older logs stay byte-equal
    action_args = {}
    for name in implemented:
        tracked = TrackedArgs(configurations.get(name, {}))
        action_args[name] = action_table[name].parse_args(tracked)
        if tracked.unread():
            warnings.append(
                f"configurations.{name}: action {name} ignores {', '.join(tracked.unread())} "
                "(tide does not implement them)"
            )
    if skipped_plugins or skipped_actions:
        warnings.append(_skipped_warning(skipped_plugins, skipped_actions))
    warnings.extend(_silent_noops(action_names, tiers))
    for tier in tiers:
        for conf in tier.plugins:
            check = plugin_table[conf.name].warnings
            if check is not None:
                found = check(conf.args, tuple(implemented))
                warnings.extend(w for w in found if w not in warnings)
    names = _scheduler_names(raw.get("schedulerName", "volcano"))
    if unknown:
        warnings.append(f"unknown top-level configuration keys ignored: {', '.join(unknown)}")
    return TideConfig(
        actions=tuple(implemented),
        tiers=tiers,
        configurations=MappingProxyType(configurations),
        timezone=_timezone(raw.get("timezone", "UTC")),
        scheduler_name=names[0],
        scheduler_names=names,
        preemptable_by_default=_flag("preemptableByDefault", raw.get("preemptableByDefault")),
        tick=_tick(raw.get("sessionTick", "1s")),
        eviction=MappingProxyType(_mapping("eviction", raw.get("eviction") or {})),
        raw=MappingProxyType(dict(raw)),
        warnings=tuple(warnings),
        action_args=MappingProxyType(action_args),
    )


def _read(source: Path | str | Mapping[str, Any]) -> RawConfig:
    if isinstance(source, Mapping):
        return dict(source)
    is_file = isinstance(source, Path) or os.path.isfile(source)
    text = Path(source).read_text(encoding="utf-8") if is_file else str(source)
    try:
        loaded = load_yaml_text(text, where="<configuration>")
    except YAMLLimitError as exc:
        shown = str(source) if is_file else "<YAML text>"
        reason = str(exc).removeprefix("<configuration>: ")
        raise ConfigError("<configuration>", shown[:80], reason) from exc
    if loaded is None:
        return {}
    return _mapping("<configuration>", loaded)


def _mapping(key: str, value: Any) -> RawConfig:
    if not isinstance(value, Mapping):
        raise ConfigError(key, value, "must be a mapping")
    return {str(k): v for k, v in value.items()}


def _actions(value: Any) -> list[str]:
    if isinstance(value, str):
        names = [part.strip() for part in value.split(",")]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        names = [v.strip() for v in value]
    else:
        raise ConfigError("actions", value, "must be a comma-separated string or a list of names")
    return [name for name in names if name]


class TrackedArgs(Mapping[str, Any]):
    """Arguments that remember which keys a ``parse_args`` looked at.

    A key never read (by ``[]``, ``get`` or ``in``) is one tide ignores; iterating the
    arguments counts as reading them all (the parser saw every key).
    """

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self._raw = raw
        self._read: set[str] = set()
        self._all = False

    def __getitem__(self, key: str) -> Any:
        self._read.add(key)
        return self._raw[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self._read.add(key)
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        self._all = True
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def unread(self) -> list[str]:
        """The keys no one read, sorted."""
        if self._all:
            return []
        return sorted(str(k) for k in self._raw if k not in self._read)


def _silent_noops(action_names: list[str], tiers: tuple[TierConf, ...]) -> list[str]:
    """Configurations that would run and quietly do nothing, one warning each."""
    warnings = []
    if not action_names:
        warnings.append("no actions configured: no session will schedule or evict anything")
    plugins = {conf.name for tier in tiers for conf in tier.plugins}
    if "tdm" in plugins and action_names and "shuffle" not in action_names:
        warnings.append(
            "plugin tdm is configured but action shuffle is not in actions: its window-close "
            "evictions will never happen (add shuffle to actions)"
        )
    return warnings


def _tiers(
    value: Any, table: PluginRegistry, skipped: list[str], warnings: list[str]
) -> tuple[TierConf, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError("tiers", value, "must be a list of tiers")
    tiers = []
    for i, tier in enumerate(value):
        key = f"tiers[{i}]"
        entries = _mapping(key, tier).get("plugins") or []
        if not isinstance(entries, list):
            raise ConfigError(f"{key}.plugins", entries, "must be a list of plugins")
        confs = []
        for j, entry in enumerate(entries):
            conf = _plugin(f"{key}.plugins[{j}]", entry, table, warnings)
            if conf is None:
                skipped.append(str(_mapping(f"{key}.plugins[{j}]", entry)["name"]))
            else:
                confs.append(conf)
        tiers.append(TierConf(tuple(confs)))
    return tuple(tiers)


#: spellings of flags that mean a known one (seed 002 writes ``enableVictim``)
FLAG_ALIASES = {"enableVictim": VICTIM}


def _plugin(key: str, entry: Any, table: PluginRegistry, warnings: list[str]) -> PluginConf | None:
    fields = _mapping(key, entry)
    name = fields.get("name")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{key}.name", name, "must be a plugin name")
    flags: dict[str, bool] = {}
    for option, flag in fields.items():
        if option in ("name", "arguments"):
            continue
        if not option.lower().startswith("enable"):
            raise ConfigError(f"{key}.{option}", flag, f"unknown option of plugin {name}")
        if not isinstance(flag, bool):
            raise ConfigError(f"{key}.{option}", flag, "must be true or false")
        if option in FLAG_ALIASES:
            option = FLAG_ALIASES[option]
        elif option not in ALL_FLAGS:
            close = difflib.get_close_matches(option, ALL_FLAGS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            warnings.append(f"{key}.{option}: unknown flag of plugin {name}, ignored{hint}")
            continue
        flags[option] = flag
    arguments = _mapping(f"{key}.arguments", fields.get("arguments") or {})
    spec = table.get(name)
    if spec is None:
        return None
    tracked = TrackedArgs(arguments)
    args = spec.parse_args(tracked)
    ignored = tracked.unread()
    if ignored:
        warnings.append(
            f"{key}.arguments: plugin {name} ignores {', '.join(ignored)} (tide does not "
            "implement them)"
        )
    return PluginConf(
        name=name,
        arguments=MappingProxyType(arguments),
        flags=MappingProxyType(default_flags(flags)),
        args=args,
    )


def _configurations(value: Any) -> dict[str, Mapping[str, Any]]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k): _mapping(f"configurations.{k}", v or {}) for k, v in value.items()}
    if not isinstance(value, list):
        raise ConfigError("configurations", value, "must be a list of {name, arguments}")
    out: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(value):
        fields = _mapping(f"configurations[{i}]", entry)
        name = fields.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"configurations[{i}].name", name, "must be an action name")
        out[name] = _mapping(f"configurations[{i}].arguments", fields.get("arguments") or {})
    return out


def _exists(since: Change | None, level: int) -> bool:
    """Whether a plugin or action introduced by change ``since`` runs at ``level``."""
    return since is None or active(level, since)


def _behaviour(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(BEHAVIOUR, value, "must be an integer behaviour level")
    if not LEGACY_BEHAVIOUR <= value <= CURRENT_BEHAVIOUR:
        raise ConfigError(
            BEHAVIOUR, value, f"unknown level (from {LEGACY_BEHAVIOUR} to {CURRENT_BEHAVIOUR})"
        )
    return value


def _timezone(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError("timezone", value, "must be an IANA time zone name")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError("timezone", value, "unknown IANA time zone") from exc
    return value


def _scheduler_names(value: Any) -> tuple[str, ...]:
    """``schedulerName``: one name or a list of names (pods of other schedulers are not
    tide's: they form no job and are never a victim)."""
    values = value if isinstance(value, list) and value else [value]
    names = []
    for item in values:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError("schedulerName", value, "must be a name or a list of names")
        names.append(item.strip())
    return tuple(names)


def _flag(key: str, value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ConfigError(key, value, "must be true or false")
    return value


#: the shortest and longest session ticks: a virtual clock ticking every microsecond never
#: finishes a day, and one tick an hour or more schedules nothing in time
MIN_TICK = timedelta(milliseconds=100)
MAX_TICK = timedelta(hours=1)


def _tick(value: Any) -> timedelta:
    try:
        tick = parse_duration(value)
    except ValueError as exc:
        raise ConfigError("sessionTick", value, "not a duration such as 1s or 500ms") from exc
    if tick <= timedelta(0):
        raise ConfigError("sessionTick", value, "must be positive")
    if tick < MIN_TICK:
        raise ConfigError("sessionTick", value, f"must be at least {MIN_TICK.total_seconds()}s")
    if tick > MAX_TICK:
        raise ConfigError("sessionTick", value, "must be at most 1h")
    return tick


def _skipped_warning(plugins: list[str], actions: list[str]) -> str:
    parts = []
    if plugins:
        parts.append("plugins " + ", ".join(sorted(set(plugins))))
    if actions:
        parts.append("actions " + ", ".join(sorted(set(actions))))
    return f"tide does not implement {' and '.join(parts)}; they are skipped"
