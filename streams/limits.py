"""The bounds every record is held to before it reaches a log, so that whatever is
stored can always be exported, folded and simulated.

* **Line size**: a recording line longer than :data:`MAX_LINE_BYTES` is set aside
  unread (a Kubernetes object is at most ~1.5 MiB in etcd).
* **Nesting**: a payload nested deeper than :data:`MAX_DEPTH` is set aside. The canonical
  encoder (orjson) refuses anything deeper than 254 levels, and an exported record wraps
  its payload in one more; the margin also covers checkpoints that embed objects.
  :func:`bounded_payload` checks the depth while serialising the payload (which the log
  needs anyway), by wrapping it in ``254 - MAX_DEPTH`` arrays first.
* **Time**: an ``at`` (or a trigger's ``scheduled``) outside :data:`EARLIEST` ..
  :data:`LATEST` is set aside: a year-1 or year-9999 time is a broken clock, and would
  drive a simulation's virtual clock across centuries.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from streams.events import format_time

MAX_LINE_BYTES = 8 * 2**20
MAX_DEPTH = 200
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)

_ENCODER_DEPTH = 254  # orjson.dumps raises past this many nested containers
_WRAP = _ENCODER_DEPTH - MAX_DEPTH
_SORTED = orjson.OPT_SORT_KEYS


class LimitError(ValueError):
    """A value outside one of this module's bounds; ``reason`` says which and why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def bounded_payload(data: Any) -> bytes:
    """``orjson.dumps(data, OPT_SORT_KEYS)``, or a :class:`LimitError` when ``data`` is
    nested deeper than :data:`MAX_DEPTH` levels."""
    return _bounded(data, _SORTED)[_WRAP:-_WRAP]


def check_nesting(data: Any, text: bytes | None = None) -> None:
    """:func:`bounded_payload`'s checks alone, for a payload whose stored bytes will be
    those of a trimmed copy (``tide log import`` strips watch objects): serialising
    without sorting keys is ~half the cost.

    ``text``: the JSON text ``data`` was decoded from by ``orjson.loads`` (or a text
    holding it). Such data always encodes (orjson decodes only what it can encode) unless
    it nests too deep, and it nests no deeper than the brackets its text opens: a text
    opening at most :data:`MAX_DEPTH` needs no serialising (a 1,000-node recording's
    lines open at most 157; the check was ~2 % of simulating one)."""
    if text is not None and text.count(b"{") + text.count(b"[") <= MAX_DEPTH:
        return
    _bounded(data, 0)


def _bounded(data: Any, option: int) -> bytes:
    wrapped: Any = data
    for _ in range(_WRAP):
        wrapped = [wrapped]
    try:
        return orjson.dumps(wrapped, option=option)
    except orjson.JSONEncodeError as exc:
        if "ecursion" in str(exc):
            raise LimitError(f"nested deeper than {MAX_DEPTH} levels") from None
        raise LimitError(f"cannot be encoded: {exc}") from None


def check_time(at: datetime, what: str = "'at'") -> None:
    """A :class:`LimitError` unless ``EARLIEST <= at < LATEST``."""
    if not EARLIEST <= at < LATEST:
        raise LimitError(
            f"{what} {format_time(at)} is outside {EARLIEST.year}-01-01 .. {LATEST.year}-01-01"
        )
