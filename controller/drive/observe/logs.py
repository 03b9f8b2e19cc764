"""Structured logging for ``tide run``: plain lines for a terminal, JSON lines for a cluster.

Why: in a pod, the logs go to a collector that indexes fields, so every line is one JSON
object (``at``, ``level``, ``logger``, ``message`` and whatever the call passed as
``extra``). A line about an effect carries the decision's id —
``log.info("evicted", extra=decision_fields(decision_id))`` — so one query finds every line
of one decision, from the session that took it to its outcome.

Under JSON, *every* line of stderr is one JSON object, not only the log records: what is
written to ``sys.stderr`` directly (the command line's status lines, a warning) is logged
line by line as a record of the ``tide`` logger (``warning: ``/``error: `` prefixes set the
level), so a collector never meets a line it cannot parse. Third-party loggers
(:data:`QUIET`) speak from WARNING up only: APScheduler alone logged two INFO lines per
session tick (some 170,000 a day per replica).
"""

from __future__ import annotations

import io
import logging
import sys
from datetime import UTC, datetime
from typing import TextIO

import orjson

from streams.events import JSON

__all__ = ["QUIET", "JsonFormatter", "configure_logging", "decision_fields"]

#: third-party loggers held at WARNING: APScheduler's per-job lines, aiohttp's access log,
#: the Kubernetes client's
QUIET = ("apscheduler", "aiohttp.access", "kubernetes_asyncio")

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


class _StderrLines(io.TextIOBase):
    """``sys.stderr`` under JSON: each line written to it is logged as one record."""

    def __init__(self, original: TextIO) -> None:
        super().__init__()
        self.original = original
        self._partial = ""
        self._logging = False

    @property  # io.TextIOBase's is read-only at runtime; typeshed declares an attribute
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.original, "encoding", None) or "utf-8")

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.original.fileno()

    def write(self, text: str) -> int:
        if self._logging:  # logging's own complaint about a record: straight out
            return self.original.write(text)
        self._partial += text
        *lines, self._partial = self._partial.split("\n")
        for line in lines:
            self._log(line)
        return len(text)

    def flush(self) -> None:
        self.original.flush()

    def _log(self, line: str) -> None:
        if not line.strip():
            return
        level, message = logging.INFO, line
        for prefix, marked in (("warning: ", logging.WARNING), ("error: ", logging.ERROR)):
            if line.startswith(prefix):
                level, message = marked, line.removeprefix(prefix)
        self._logging = True
        try:
            logging.getLogger("tide").log(level, message)
        finally:
            self._logging = False


def configure_logging(
    *, json: bool = False, level: int | str = logging.INFO, stream: TextIO | None = None
) -> logging.Handler:
    """Send tide's logs (the root logger) to ``stream`` (stderr), as JSON lines or plain.

    The :data:`QUIET` loggers log from WARNING up (or from ``level``, when higher). With
    ``json`` and no ``stream``, whatever else is written to ``sys.stderr`` becomes one
    JSON record per line too (see the module docstring). Replaces the handlers (and the
    stderr) a previous call installed, so calling it twice is harmless.

    Returns:
        The installed handler.
    """
    if isinstance(sys.stderr, _StderrLines):
        sys.stderr = sys.stderr.original
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if json else _PlainFormatter(PLAIN))
    handler.set_name("tide")
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "tide"]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    floor = max(logging.WARNING, root.getEffectiveLevel())
    for name in QUIET:
        logging.getLogger(name).setLevel(floor)
    if json and stream is None:
        sys.stderr = _StderrLines(sys.stderr)
    return handler
