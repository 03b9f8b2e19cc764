"""Go duration strings (``time.ParseDuration``), as Volcano and Koordinator write them.

``"1m30s"``, ``"100ms"``, ``"1.5h"``, ``"-2s"``, ``"0"``. Units: ``ns``, ``us``/``µs``/``μs``,
``ms``, ``s``, ``m``, ``h`` (no days, as in Go). A negative result is returned as such:
whether it is acceptable is the caller's decision (and its error message's). As in Go, a
duration beyond about 292 years (2^63 - 1 nanoseconds) is an error, and so is text longer
than :data:`MAX_TEXT` characters.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

_UNITS_NS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_TERM = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")


MAX_NS = 2**63 - 1
MAX_TEXT = 100


class DurationError(ValueError):
    """Text that Go's ``time.ParseDuration`` would reject."""


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration exactly (decimal arithmetic, truncated to microseconds).

    Raises ``DurationError`` (a ``ValueError``) naming the text when it is not one.
    """
    if not isinstance(text, str):
        raise DurationError(f"duration {text!r} is not a string")
    if len(text) > MAX_TEXT or (not text.isascii() and "µ" not in text and "μ" not in text):
        raise DurationError(f"invalid duration {text[:MAX_TEXT]!r}")
    body = text
    sign = 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return timedelta(0)
    if not body:
        raise DurationError(f"invalid duration {text!r}")
    total = Decimal(0)
    pos = 0
    while pos < len(body):
        match = _TERM.match(body, pos)
        if match is None or match.group(1) in ("", "."):
            raise DurationError(f"invalid duration {text!r}")
        total += Decimal(match.group(1)) * _UNITS_NS[match.group(2)]
        if total > MAX_NS:
            raise DurationError(f"duration {text!r} is out of range (over ~292 years)")
        pos = match.end()
    micros = timedelta(microseconds=int(total) // 1000)  # truncated toward zero
    return micros if sign > 0 else -micros
