"""Small, hot parsers shared by the cluster projection: quantities, Go booleans, times.

The cluster fold parses the same few strings (``"500m"``, ``"2Gi"``, one creation second)
hundreds of thousands of times. ``streams.quantity`` is exact (``Fraction``) and therefore
slow; here each distinct string is parsed once and the float kept in a bounded dict.
Units follow Volcano's ``NewResource`` (volcano-sh/volcano pkg/scheduler/api/resource_info.go):
cpu in milli, memory in bytes
(``Quantity.Value``, rounded up), ``pods`` plain, every other scalar in milli.

An invalid quantity counts as 0: bad records are quarantined by ``streams.validation``
before they reach the log, and a fold never stops on one value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from projections.model import Resource
from streams.events import parse_time
from streams.quantity import MAX_TEXT, QuantityError, to_int, to_milli

#: a cache is cleared (not evicted entry by entry) once it holds this many strings
CACHE_LIMIT = 1 << 16

MILLI_CACHE: dict[Any, float] = {}
UNITS_CACHE: dict[Any, float] = {}
TIME_CACHE: dict[str, datetime] = {}
_INT32 = re.compile(r"^[+-]?[0-9]+$")


def _parse_into(cache: dict[Any, float], convert: Callable[[Any], int], quantity: Any) -> float:
    """A cache miss of :func:`milli` / :func:`units`: convert (invalid → 0) and remember."""
    try:
        value = float(convert(quantity))
    except (QuantityError, TypeError, OverflowError):  # OverflowError: past a float
        value = 0.0
    # Only strings are kept: a number key would answer for an equal bool too (True == 1,
    # same hash), so ``True`` (not a quantity, 0) would read 1's value once 1 was seen.
    if type(quantity) is str:
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        cache[quantity] = value
    return value


def milli(quantity: Any) -> float:
    """``Quantity.MilliValue`` as a float (cpu and extended scalars); invalid → 0."""
    value = MILLI_CACHE.get(quantity)
    return _parse_into(MILLI_CACHE, to_milli, quantity) if value is None else value


def units(quantity: Any) -> float:
    """``Quantity.Value`` as a float (memory bytes, ``pods``); invalid → 0."""
    value = UNITS_CACHE.get(quantity)
    return _parse_into(UNITS_CACHE, to_int, quantity) if value is None else value


def milli_uncached(quantity: Any) -> float:
    """:func:`milli` without the cache, for values that rarely repeat (metric samples)."""
    try:
        return float(to_milli(quantity))
    except (QuantityError, TypeError, OverflowError):  # OverflowError: past a float
        return 0.0


def units_uncached(quantity: Any) -> float:
    """:func:`units` without the cache, for values that rarely repeat (metric samples)."""
    try:
        return float(to_int(quantity))
    except (QuantityError, TypeError, OverflowError):  # OverflowError: past a float
        return 0.0


def sample_cpu(quantity: Any) -> float:
    """:func:`milli_uncached` of a metrics sample's cpu, the usual nanocores
    (``"27092976432n"``) read without the quantity regex: ceil(n / 10^6) milli, exactly as
    :func:`streams.quantity.to_milli` rounds it. Any other form takes the full parse."""
    if type(quantity) is str and 1 < len(quantity) <= MAX_TEXT and quantity[-1] == "n":
        digits = quantity[:-1]
        if digits.isascii() and digits.isdigit():
            return float(-(-int(digits) // 1_000_000))
    return milli_uncached(quantity)


def sample_memory(quantity: Any) -> float:
    """:func:`units_uncached` of a metrics sample's memory, the usual ``"68555038Ki"``
    read without the quantity regex; any other form takes the full parse."""
    if type(quantity) is str and 2 < len(quantity) <= MAX_TEXT and quantity[-2:] == "Ki":
        digits = quantity[:-2]
        if digits.isascii() and digits.isdigit():
            return float(int(digits) * 1024)
    return units_uncached(quantity)


def time_or_none(value: Any) -> datetime | None:
    """An RFC 3339 time (cached: recordings repeat the same seconds), or None."""
    if not value or not isinstance(value, str):
        return None
    parsed = TIME_CACHE.get(value)
    if parsed is None:
        try:
            parsed = parse_time(value)
        except ValueError:
            return None
        if len(TIME_CACHE) >= CACHE_LIMIT:
            TIME_CACHE.clear()
        TIME_CACHE[value] = parsed
    return parsed


_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_bool(value: Any) -> bool | None:
    """Go's ``strconv.ParseBool``: the twelve accepted spellings, else None (an error)."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    return None


def parse_int32(value: Any) -> int | None:
    """Go's ``strconv.ParseInt(value, 10, 32)``: optional sign and digits only, in range."""
    if not isinstance(value, str) or not _INT32.match(value):
        return None
    number = int(value)
    return number if -(2**31) <= number < 2**31 else None


def add_requests(
    target: list[float], scalars: dict[str, float], requests: Mapping[str, Any]
) -> None:
    """Add a Kubernetes resource list into ``target = [cpu, mem]`` and ``scalars``."""
    for name, quantity in requests.items():
        if name == "cpu":
            target[0] += milli(quantity)
        elif name == "memory":
            target[1] += units(quantity)
        elif name == "pods":
            scalars["pods"] = scalars.get("pods", 0.0) + units(quantity)
        elif not name.startswith(("requests.", "limits.")):
            scalars[name] = scalars.get(name, 0.0) + milli(quantity)


def resource_from_list(resources: Any) -> Resource:
    """A node's or queue's resource list (``status.allocatable``, ``spec.capability``)."""
    acc = [0.0, 0.0]
    scalars: dict[str, float] = {}
    if isinstance(resources, Mapping):
        add_requests(acc, scalars, resources)
    return Resource(acc[0], acc[1], scalars)


def max_into(target: Resource, other: Resource) -> None:
    """Volcano's ``SetMaxResource``: per-dimension max, in place."""
    if other.milli_cpu > target.milli_cpu:
        target.milli_cpu = other.milli_cpu
    if other.memory > target.memory:
        target.memory = other.memory
    for name, value in other.scalars.items():
        if value > target.scalars.get(name, 0.0):
            target.scalars[name] = value


def intern_map(cache: dict[Any, Any], value: Any) -> Any:
    """Share equal flat ``str -> str`` dicts (labels, annotations) between objects.

    Pods of one ReplicaSet carry identical labels and annotations; sharing them cuts the
    projection's memory. Shared dicts are read-only by contract (see ``projections.model``).
    Values that are not flat (or not hashable) are returned as they are.
    """
    if not value:
        return {}
    try:
        key = tuple(value.items())
        shared = cache.get(key)
    except (TypeError, AttributeError):
        return value
    if shared is None:
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        cache[key] = shared = value
    return shared
