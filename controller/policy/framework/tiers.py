"""Tiers of plugin entries, with Volcano's per-entry enable flags.

Inside the framework a flag counts only when it is set and true (volcano-sh/volcano
pkg/scheduler/framework/session_plugins.go, ``isEnabled``): unset is off. The configuration loader
fills unset flags with true, as Volcano's loader does, so a pasted Volcano configuration behaves the
same; tiers built by hand (in tests) enable only what they name. :meth:`PluginConf.of` builds such
hand-made entries.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from controller.policy.framework.points import ALL_FLAGS, FLAGS_DEFAULT_OFF


@dataclass(frozen=True)
class PluginConf:
    """One plugin entry of a tier: its name, raw arguments and enable flags."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    flags: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))
    #: The arguments as parsed by the plugin's ``parse_args`` (set by the loader; None
    #: in hand-built entries, which the engine then parses itself).
    args: Any = field(default=None, compare=False)

    def enabled(self, flag: str) -> bool:
        """Whether ``flag`` is set and true (unset counts as disabled)."""
        return self.flags.get(flag) is True

    @classmethod
    def of(
        cls,
        name: str,
        *flags: str,
        all_flags: bool = False,
        arguments: Mapping[str, Any] | None = None,
    ) -> PluginConf:
        """A hand-built entry enabling ``flags`` (or every flag, as a file would)."""
        chosen = default_flags() if all_flags else {flag: True for flag in flags}
        return cls(
            name=name,
            arguments=MappingProxyType(dict(arguments or {})),
            flags=MappingProxyType(chosen),
        )


@dataclass(frozen=True)
class TierConf:
    """An ordered group of plugin entries; earlier tiers are consulted first."""

    plugins: tuple[PluginConf, ...]


#: spellings seen in pasted configurations -> the flag they mean (the rescheduling seed
#: writes ``enableVictim``; Volcano's option is ``enabledVictim``)
FLAG_ALIASES: Mapping[str, str] = MappingProxyType({"enableVictim": "enabledVictim"})


def default_flags(explicit: Mapping[str, bool] | None = None) -> dict[str, bool]:
    """Every known flag true (but the default-off ones), overridden by ``explicit``.

    An alias (:data:`FLAG_ALIASES`) sets its flag unless the flag itself is also given.
    """
    flags = {flag: flag not in FLAGS_DEFAULT_OFF for flag in ALL_FLAGS}
    given = dict(explicit or {})
    for alias, flag in FLAG_ALIASES.items():
        if alias in given and flag not in given:
            given[flag] = given[alias]
    flags.update(given)
    return flags
