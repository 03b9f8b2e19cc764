"""Structured logging for ``tide run``: plain lines for a terminal, JSON lines for a cluster.

Why: in a pod, the logs go to a collector that indexes fields, so every line is one JSON
object (``at``, ``level``, ``logger``, ``message`` and whatever the call passed as
``extra``). A line about an effect carries the decision's id —
``log.info("evicted", extra=decision_fields(decision_id))`` — so one query finds every line
of one decision, from the session that took it to its outcome.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import TextIO

import orjson

from streams.events import JSON

__all__ = ["JsonFormatter", "configure_logging", "decision_fields"]

#: the attributes every ``LogRecord`` has; anything else on a record came from ``extra``
_STANDARD = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__.keys() | {"message", "asctime"}
)
PLAIN = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def decision_fields(decision: str, **more: object) -> dict[str, object]:
    """The ``extra`` of a line about decision ``decision`` (its id) and its effect."""
    return {"decision": decision, **more}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: the record's time, level, logger, message and extras."""

    def format(self, record: logging.LogRecord) -> str:
        line: JSON = {
            "at": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in sorted(record.__dict__.keys() - _STANDARD):
            if not key.startswith("_"):
                line[key] = record.__dict__[key]
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


class _PlainFormatter(logging.Formatter):
    """``PLAIN``, with ``key=value`` of the extras appended."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        extras = sorted(record.__dict__.keys() - _STANDARD)
        fields = " ".join(f"{k}={record.__dict__[k]}" for k in extras if not k.startswith("_"))
        return f"{text} {fields}" if fields else text


def configure_logging(
    *, json: bool = False, level: int | str = logging.INFO, stream: TextIO | None = None
) -> logging.Handler:
    """Send tide's logs (the root logger) to ``stream`` (stderr), as JSON lines or plain.

    Replaces the handlers a previous call installed, so calling it twice is harmless.

    Returns:
        The installed handler.
    """
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if json else _PlainFormatter(PLAIN))
    handler.set_name("tide")
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "tide"]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
