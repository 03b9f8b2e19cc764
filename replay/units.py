"""Numbers as a person reads them: cores, GiB, %, seconds, never float artefacts.

Decision evidence stores raw numbers (CPU in millicores, memory in bytes, pressure in
percent, durations in seconds) because the policies compute with them. Readers want
units. :func:`humanize` walks an evidence mapping and turns every number whose key
names its unit into text with that unit, rounded to what matters.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

GIB = float(1 << 30)

_PERCENT_KEYS = frozenset(
    {
        "pressure",
        "threshold",
        "level",
        "margin",
        "release_margin",
        "memory_pressure",
        "current",
        "baseline",
        "predicted",
        "advance_threshold",
        "target_percent",
    }
)
_SECONDS_KEYS = frozenset(
    {"seconds", "configured", "memory_leak_duration", "prediction_window", "trend_window"}
)
_CPU_KEYS = frozenset({"cpu_milli"})
_MEMORY_KEYS = frozenset({"memory", "allocatable"})
_RESOURCE_KEYS = frozenset({"capacity", "usage", "target", "freed", "freed_before"})


def number(value: float, digits: int = 2) -> str:
    """``value`` rounded to ``digits`` decimals with trailing zeros dropped (``96``, ``2.5``)."""
    exact = Decimal(repr(float(value))).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP)
    text = f"{exact:f}".rstrip("0").rstrip(".") if digits else f"{exact:f}"
    return "0" if text in ("-0", "") else text


def cores(milli: float) -> str:
    """Millicores as cores: ``2000.0`` → ``"2 cores"``."""
    value = number(milli / 1000.0)
    return f"{value} core" + ("" if value == "1" else "s")


def gib(num_bytes: float) -> str:
    """Bytes as GiB: ``4294967296.0`` → ``"4 GiB"``."""
    return f"{number(num_bytes / GIB)} GiB"


def percent(value: float) -> str:
    """A percentage: ``96.125`` → ``"96.13 %"``."""
    return f"{number(value)} %"


def seconds(value: float) -> str:
    """A duration: ``60.0`` → ``"60 s"``, ``3600.0`` → ``"1 h"``."""
    if value >= 3600 and value % 3600 == 0:
        return f"{number(value / 3600)} h"
    if value >= 60 and value % 60 == 0:
        return f"{number(value / 60)} min"
    return f"{number(value)} s"


def amount(resource: str, value: float) -> str:
    """``value`` of ``resource`` (cpu in millicores, memory in bytes) with its unit."""
    if resource == "cpu":
        return cores(value)
    if resource == "memory":
        return gib(value)
    return number(value)


def humanize(value: Any, *, key: str = "", resource: str = "") -> Any:
    """``value`` (evidence JSON) with every number whose key names its unit as text.

    ``resource`` (``cpu``/``memory``) gives the unit of resource-valued keys (``usage``,
    ``capacity``, ``target``, ``freed``); a mapping with its own ``resource`` key sets
    it for its children. Keys are sorted so the output is the same on every run.
    """
    if isinstance(value, Mapping):
        inner = str(value.get("resource") or resource)
        return {str(k): humanize(value[k], key=str(k), resource=inner) for k in sorted(value)}
    if isinstance(value, list):
        return [humanize(item, key=key, resource=resource) for item in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        if key in _PERCENT_KEYS:
            return percent(value)
        if key in _SECONDS_KEYS or key == "eta_seconds":
            return seconds(value)
        if key in _CPU_KEYS:
            return cores(value)
        if key in _MEMORY_KEYS:
            return gib(value)
        if key in _RESOURCE_KEYS and resource in ("cpu", "memory"):
            return amount(resource, value)
        if key == "trend_per_minute":
            return f"{number(value)} %/min"
        if key == "growth":
            return f"×{number(value)}"
        if isinstance(value, float):
            return float(number(value, 3)) if value != int(value) else int(value)
        return value
    return value
