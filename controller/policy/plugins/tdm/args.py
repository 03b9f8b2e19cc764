"""TDM plugin arguments: parsing and validation, so a bad value stops startup.

Upstream reads an untyped ``Arguments`` map: a zone window that does not parse makes the zone
inactive forever at run time, an unparsable ``tdm.evict.period`` silently becomes one
minute, a negative one is accepted, and a non-string value crashes the scheduler
(volcano-sh/volcano pkg/scheduler/plugins/tdm/tdm.go, ``New``: ``v.(string)`` type
assertions). Here every one of those stops startup with a
:class:`~controller.policy.framework.errors.ConfigError` naming the key and the value.

Keys (all under the plugin's ``arguments``):

* ``tdm.revocable-zone.<zone>``: ``"HH:MM-HH:MM"`` (string), one per zone;
* ``tdm.evict.period``: a Go duration string, strictly positive; default ``"1m"``;
* ``tdm.evict.shared-timer``: boolean (or a Go boolean string); default false. True
  restores Volcano's single evict timer shared by all zones.

Zone keys are matched by *prefix*; upstream matches by substring (``x.tdm.revocable-zone.rz1``
is zone ``x.rz1`` there). A key that contains ``tdm.revocable-zone.`` elsewhere, or any other
key starting with ``tdm.``, is rejected as a probable typo; keys outside ``tdm.`` are ignored,
as for every plugin (a pasted Volcano configuration may carry them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from controller.policy.framework.errors import ConfigError
from controller.policy.plugins.tdm.window import (
    DurationError,
    Window,
    WindowError,
    format_go_duration,
    parse_go_duration,
    parse_window,
)

ZONE_PREFIX = "tdm.revocable-zone."
EVICT_PERIOD = "tdm.evict.period"
SHARED_TIMER = "tdm.evict.shared-timer"
DEFAULT_EVICT_PERIOD = timedelta(minutes=1)

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


@dataclass(frozen=True, slots=True)
class Zone:
    """A configured revocable zone and its daily window."""

    name: str
    window: Window


@dataclass(frozen=True, slots=True)
class TdmArgs:
    """Validated TDM arguments; ``zones`` sorted by name."""

    zones: tuple[Zone, ...] = ()
    evict_period: timedelta = DEFAULT_EVICT_PERIOD
    shared_timer: bool = False

    def zone(self, name: str) -> Zone | None:
        for zone in self.zones:
            if zone.name == name:
                return zone
        return None

    @property
    def evict_period_text(self) -> str:
        return format_go_duration(self.evict_period)


def _parse_period(value: Any) -> timedelta:
    if not isinstance(value, str):
        raise ConfigError(EVICT_PERIOD, value, "must be a Go duration string such as '1m'")
    try:
        period = parse_go_duration(value)
    except DurationError as exc:
        raise ConfigError(EVICT_PERIOD, value, str(exc)) from exc
    if period <= timedelta(0):
        raise ConfigError(EVICT_PERIOD, value, "must be positive")
    return period


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _TRUE:
        return True
    if isinstance(value, str) and value in _FALSE:
        return False
    raise ConfigError(SHARED_TIMER, value, "must be true or false")


def parse_args(raw: Mapping[str, Any]) -> TdmArgs:
    """Validate the plugin's ``arguments`` map; raises ``ConfigError`` naming key and value."""
    zones: list[Zone] = []
    period = DEFAULT_EVICT_PERIOD
    shared = False
    for key in sorted(raw):
        value = raw[key]
        if not isinstance(key, str):
            raise ConfigError(str(key), value, "argument names must be strings")
        if key.startswith(ZONE_PREFIX):
            name = key[len(ZONE_PREFIX) :]
            if not name:
                raise ConfigError(key, value, "the zone name is empty")
            try:
                zones.append(Zone(name, parse_window(value)))
            except WindowError as exc:
                raise ConfigError(key, value, str(exc)) from exc
        elif key == EVICT_PERIOD:
            period = _parse_period(value)
        elif key == SHARED_TIMER:
            shared = _parse_bool(value)
        elif ZONE_PREFIX in key or key.startswith("tdm."):
            raise ConfigError(key, value, "unknown TDM argument")
    return TdmArgs(tuple(zones), period, shared)
