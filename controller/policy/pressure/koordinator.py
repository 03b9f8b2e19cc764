"""Koordinator's own eviction configuration pasted under ``eviction:``, read for what it says.

A user may paste Koordinator's real configuration instead of tide's keys: the
``resource-threshold-config`` of the ``slo-controller-config`` ConfigMap (``{"clusterStrategy":
{...}}``), a NodeSLO object, or its ``spec.resourceUsedThresholdWithBE`` directly
(koordinator-sh/koordinator apis/slo/v1alpha1/nodeslo_types.go,
``ResourceThresholdStrategy``). Those keys are not tide's, so read as tide's they would be
"unknown" while every eviction ran at its defaults. Here they are translated:

* ``enable`` → ``enabled`` (an explicit ``false`` switches pressure eviction off);
* ``memoryEvictThresholdPercent`` → ``memoryEvict.evictThreshold``;
* ``cpuEvictBEUsageThresholdPercent`` → ``cpuEvict.evictThreshold``; CPU eviction is on only
  when it is given (the koordlet's CPU eviction needs it);
* faulty-pod and predictive eviction, which Koordinator does not have, are off;
* every other key (``cpuSuppressThresholdPercent``, ``memoryEvictLowerPercent``,
  ``cpuEvictBESatisfaction*Percent``, ``nodeStrategies``, ...) is named as not modelled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.policy.framework.errors import ConfigError
from streams.payloads import RawConfig

TRANSLATED = {
    "memoryEvictThresholdPercent": ("memoryEvict", "evictThreshold"),
    "cpuEvictBEUsageThresholdPercent": ("cpuEvict", "evictThreshold"),
}
#: keys that only Koordinator's shapes carry: one of them marks the section as Koordinator's
_MARKERS = frozenset(
    {
        "clusterStrategy",
        "nodeStrategies",
        "resourceUsedThresholdWithBE",
        "cpuSuppressThresholdPercent",
        "memoryEvictLowerPercent",
        "cpuEvictBESatisfactionLowerPercent",
        "cpuEvictBESatisfactionUpperPercent",
        "cpuEvictTimeWindowSeconds",
        *TRANSLATED,
    }
)


def is_koordinator(raw: Mapping[str, Any]) -> bool:
    """Whether ``raw`` is one of Koordinator's shapes rather than tide's keys."""
    return raw.get("kind") == "NodeSLO" or not _MARKERS.isdisjoint(str(k) for k in raw)


def _strategy(raw: Mapping[str, Any], path: str) -> tuple[Mapping[str, Any], str]:
    """The ``ResourceThresholdStrategy`` inside one of Koordinator's shapes, and its path."""
    if raw.get("kind") == "NodeSLO" or "spec" in raw:
        spec = raw.get("spec")
        if not isinstance(spec, Mapping):
            raise ConfigError(f"{path}.spec", spec, "a NodeSLO's spec must be a mapping")
        raw, path = spec, f"{path}.spec"
    for key in ("resourceUsedThresholdWithBE", "clusterStrategy"):
        if key in raw:
            inner = raw[key]
            if not isinstance(inner, Mapping):
                raise ConfigError(f"{path}.{key}", inner, "must be a mapping")
            return inner, f"{path}.{key}"
    return raw, path


def translate(raw: Mapping[str, Any], path: str = "eviction") -> tuple[RawConfig, list[str]]:
    """tide's ``eviction:`` keys for a Koordinator shape, and one note per key read or left."""
    strategy, where = _strategy(raw, path)
    out: RawConfig = {
        "cpuEvict": {"enabled": False},
        "memoryEvict": {"enabled": True},
        "faultyEvict": {"enabled": False},
        "predictiveEvict": {"enabled": False},
    }
    notes: list[str] = [f"{where}: read as Koordinator's ResourceThresholdStrategy"]
    unmodelled: list[str] = []
    for key in sorted(str(k) for k in strategy):
        value = strategy[key]
        if key in ("enable", "enabled"):
            if not isinstance(value, bool):
                raise ConfigError(f"{where}.{key}", value, "must be true or false")
            out["enabled"] = value
        elif key in TRANSLATED:
            section, field = TRANSLATED[key]
            out[section] = {**out[section], "enabled": True, field: value}
            notes.append(f"{where}.{key}: read as {path}.{section}.{field}")
        else:
            unmodelled.append(key)
    if unmodelled:
        notes.append(f"{where}: not modelled by tide, ignored: {', '.join(unmodelled)}")
    if "enabled" not in out:
        out["enabled"] = False  # Koordinator's default: the strategy is off unless enabled
        notes.append(f"{where}.enable: not set; Koordinator's default is off")
    return out, notes
