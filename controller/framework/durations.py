"""Go duration strings (``time.ParseDuration``), as Volcano and Koordinator write them.

``"1m30s"``, ``"100ms"``, ``"1.5h"``, ``"-2s"``, ``"0"``. Units: ``ns``, ``us``/``µs``/``μs``,
``ms``, ``s``, ``m``, ``h`` (no days, as in Go). A negative result is returned as such:
whether it is acceptable is the caller's decision (and its error message's).
"""

from __future__ import annotations

import re
from datetime import timedelta

_UNITS_US = {
    "ns": 0.001,
    "us": 1.0,
    "µs": 1.0,
    "μs": 1.0,
    "ms": 1_000.0,
    "s": 1_000_000.0,
    "m": 60_000_000.0,
    "h": 3_600_000_000.0,
}
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration; raise ``ValueError`` naming the text when it is not one."""
    if not isinstance(text, str):
        raise ValueError(f"duration {text!r} is not a string")
    body = text
    sign = 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return timedelta(0)
    if not body:
        raise ValueError(f"invalid duration {text!r}")
    total_us = 0.0
    pos = 0
    while pos < len(body):
        match = _PART.match(body, pos)
        if match is None:
            raise ValueError(f"invalid duration {text!r}")
        total_us += float(match.group(1)) * _UNITS_US[match.group(2)]
        pos = match.end()
    return timedelta(microseconds=sign * total_us)
