"""What a path holds before tide opens it as a SQLite log, and how to read one without a write.

Reading commands promise to leave every path byte-identical, and a writer must never take
a user's own SQLite file for a log. Both need to know what a path is before SQLite touches
it, and both go through this module:

* :func:`not_a_log` says why a path is not a tide log (missing, a directory, an empty file,
  not a SQLite file, a SQLite file without tide's ``events`` table — its tables named), or
  None for a log; :func:`foreign` says why a writer must refuse it (a file that is not
  SQLite, or that holds a table tide never writes). A tide log is told by its tables.
* :func:`read_only_uri` is the ``file:`` URI a reader opens: ``mode=ro`` always (no table is
  ever created, no column added), and ``immutable=1`` as well when no ``-wal`` file is
  beside the database. A WAL database opened ``mode=ro`` makes SQLite create ``-wal`` and
  ``-shm`` files that a read-only connection cannot remove when it closes, so a reader of
  a log at rest would leave two files that were not there; without a ``-wal`` file no
  connection has the log open (the last one to close removes it), so the file is read as
  the immutable snapshot it is. Beside a live log the files exist already and the
  reader shares them as any reader does.

Only the standard ``sqlite3`` module is used: these checks run before any event loop.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from urllib.parse import quote

#: the first 16 bytes of every SQLite database file
HEADER = b"SQLite format 3\x00"
#: the tables tide writes into a log's file (the log's, and the checkpoints kept with it)
TIDE_TABLES = frozenset({"events", "quarantine", "seal", "checkpoints"})
#: the columns of ``events`` a log has always had (``prev`` came with the hash chain)
EVENT_COLUMNS = frozenset({"offset", "id", "at", "type", "data"})


def read_only_uri(path: str | Path) -> str:
    """The ``file:`` URI that opens ``path`` for reading without writing a byte beside it
    (see the module docstring)."""
    resolved = Path(path).resolve()
    uri = f"file:{quote(str(resolved))}?mode=ro"
    if not Path(f"{resolved}-wal").exists():
        uri += "&immutable=1"
    return uri


def tables(path: str | Path) -> dict[str, set[str]]:
    """The tables of the SQLite file at ``path`` and their columns, read without writing.

    Raises:
        sqlite3.Error: the file cannot be read as a SQLite database.
    """
    with contextlib.closing(sqlite3.connect(read_only_uri(path), uri=True)) as db:
        names = sorted(
            row[0]
            for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if not str(row[0]).startswith("sqlite_")
        )
        return {
            name: {str(row[1]) for row in db.execute("SELECT * FROM pragma_table_info(?)", (name,))}
            for name in names
        }


def not_a_log(path: str | Path) -> str | None:
    """Why ``path`` is not a tide log (a phrase to follow the path), or None if it is one.

    A tide log is a SQLite file with an ``events`` table of tide's columns.
    """
    file = Path(path)
    if not file.exists():
        return "does not exist"
    if file.is_dir():
        return "is a directory, not a tide log"
    try:
        with file.open("rb") as stream:
            head = stream.read(len(HEADER))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not head:
        return "is an empty file, not a tide log"
    if head != HEADER:
        hint = " (a JSON Lines recording? name it with .jsonl)" if head[:1] in b"{[" else ""
        return f"is not a SQLite file, so not a tide log{hint}"
    try:
        found = tables(file)
    except sqlite3.Error as exc:
        return f"is not a readable SQLite file ({exc})"
    if found.get("events", set()) >= EVENT_COLUMNS:
        return None
    held = ", ".join(sorted(found)) or "no table"
    return f"is a SQLite file without tide's tables (it holds {held}), not a tide log"


def foreign(path: str | Path) -> str | None:
    """Why a writer must not take ``path`` for its log (a phrase to follow the path), or
    None: the path is missing, an empty file, or a SQLite file holding only tide's tables.
    """
    file = Path(path)
    if not file.exists():
        return None
    if file.is_dir():
        return "is a directory"
    try:
        with file.open("rb") as stream:
            head = stream.read(len(HEADER))
    except OSError:
        return None  # SQLite says why it cannot be opened
    if not head:
        return None
    if head != HEADER:
        return "is not a SQLite file, so not a tide log; name another file"
    try:
        others = sorted(set(tables(file)) - TIDE_TABLES)
    except sqlite3.Error as exc:
        return f"is not a readable SQLite file ({exc}); name another file"
    if others:
        return (
            f"is a SQLite file with tables tide does not write ({', '.join(others)}), "
            "not a tide log; name another file"
        )
    return None
