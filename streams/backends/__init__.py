"""Log backends: the only modules that touch storage drivers, and the URL factory.

:func:`open_log` picks a backend by the URL's scheme from :data:`OPENERS`, a table of
``scheme → module``. Each backend module defines ``async def open_url(url) -> EventLog``
and is imported only when its scheme is used, so a driver that is not installed (aiokafka,
say) costs nothing to a process that never opens that kind of log, and the port
(``streams.log``) never imports a backend. Adding a backend is one line in the table.
An address is read by the one parser, :func:`streams.urls.parse_log_url`.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

from streams.log import EventLog
from streams.urls import parse_log_url

#: scheme → the backend module that opens it (it defines ``open_url``)
OPENERS: dict[str, str] = {
    "kafka": "streams.backends.kafka",
    "memory": "streams.backends.memory",
    "sqlite": "streams.backends.sqlite",
}
#: scheme → the module that opens it for reading only, when not the writer's (the SQLite
#: reader needs neither aiosqlite nor an event loop: streams/backends/sqlite_reader.py)
READERS: dict[str, str] = {"sqlite": "streams.backends.sqlite_reader"}


def normalise_url(url: str) -> str:
    """Accept ``sqlite:///x.db``, ``memory://``, ``kafka://...`` or a plain ``.db`` path
    (:func:`streams.urls.parse_log_url`'s normal form).

    Raises:
        ValueError: the path is a ``.jsonl`` recording.
    """
    return parse_log_url(url).text


async def open_log(url: str) -> EventLog:
    """Open the log a URL names (see :data:`OPENERS`).

    Raises:
        ValueError: the scheme is not one of :data:`OPENERS` (the message names the URL
            and the supported schemes), or the URL is a recording.
    """
    address = parse_log_url(url)
    url = address.text
    module_name = OPENERS.get(address.scheme)
    if module_name is None:
        schemes = ", ".join(f"{name}://" for name in sorted(OPENERS))
        raise ValueError(f"unsupported log URL {url!r} (supported schemes: {schemes})")
    opener = cast(
        Callable[[str], Awaitable[EventLog]], importlib.import_module(module_name).open_url
    )
    return await opener(url)


async def open_reader(url: str) -> EventLog:
    """Open the log a URL names for reading only: a SQLite file is opened read-only and
    must already be a tide log (nothing is created, not a byte written beside it), a
    Kafka topic must exist (none is created); ``memory://`` as :func:`open_log` opens it.

    Raises:
        streams.log.NotALogError: the SQLite path is not a tide log (the message names it
            and why: missing, a directory, an empty file, someone else's tables), or the
            Kafka topic does not exist.
        ValueError: as :func:`open_log`.
    """
    address = parse_log_url(url)
    if address.scheme not in ("sqlite", "kafka"):
        return await open_log(url)
    backend = importlib.import_module(READERS.get(address.scheme, OPENERS[address.scheme]))
    opener = cast(Callable[..., Awaitable[EventLog]], backend.open_url)
    return await opener(address.text, read_only=True)


def not_a_sqlite_log(path: str | Path) -> str | None:
    """Why the local file ``path`` is not a tide log (a phrase to follow the path), or None
    (:func:`streams.backends.sqlite_files.not_a_log`: read without writing a byte)."""
    module = importlib.import_module("streams.backends.sqlite_files")
    return cast(Callable[[str | Path], str | None], module.not_a_log)(path)


def is_sqlite_log(path: str | Path) -> bool:
    """Whether ``path`` is a SQLite file holding a tide log (an ``events`` table), read
    without writing; commands that replace a log check this before deleting a file."""
    return not_a_sqlite_log(path) is None
