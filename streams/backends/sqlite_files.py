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

Only the standard ``sqlite3`` module is used, and a file that may be a database is only
ever opened through it: SQLite's locks are POSIX locks, held per process, and closing any
other descriptor of the file drops them all, so a plain ``open()`` of a log in a process
that has a connection to it (a writer opening it a second time) would let another process
corrupt it.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from urllib.parse import quote

#: the tables tide writes into a log's file (the log's, and the checkpoints kept with it)
TIDE_TABLES = frozenset(
    {
        "events",
        "quarantine",
        "seal",
        "checkpoints",
        "checkpoints_at",
        "subjects",
        "subjects_version",
    }
)
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


def _not_sqlite(exc: sqlite3.Error) -> bool:
    return "not a database" in str(exc)


def _hint(file: Path) -> str:
    """A hint for a file SQLite refused: read only after SQLite refused it, so never a
    file this process holds SQLite locks on (closing any descriptor of such a file would
    drop them: SQLite's POSIX locks are per process)."""
    try:
        with file.open("rb") as stream:
            first = stream.read(1)
    except OSError:
        return ""
    return " (a JSON Lines recording? name it with .jsonl)" if first in (b"{", b"[") else ""


def not_a_log(path: str | Path) -> str | None:
    """Why ``path`` is not a tide log (a phrase to follow the path), or None if it is one.

    A tide log is a SQLite file with an ``events`` table of tide's columns. The file is
    only ever opened through SQLite (see :func:`_hint`).
    """
    file = Path(path)
    if not file.exists():
        return "does not exist"
    if file.is_dir():
        return "is a directory, not a tide log"
    if file.stat().st_size == 0:
        return "is an empty file, not a tide log"
    try:
        found = tables(file)
    except sqlite3.Error as exc:
        if _not_sqlite(exc):
            return f"is not a SQLite file, so not a tide log{_hint(file)}"
        return f"is not a readable SQLite file ({exc})"
    if found.get("events", set()) >= EVENT_COLUMNS:
        return None
    held = ", ".join(sorted(found)) or "no table"
    return f"is a SQLite file without tide's tables (it holds {held}), not a tide log"


def foreign(path: str | Path) -> str | None:
    """Why a writer must not take ``path`` for its log (a phrase to follow the path), or
    None: the path is missing, an empty file, a SQLite file holding only tide's tables, or
    one that cannot be read without the recovery a writer runs (a killed writer's).

    The file is only ever opened through SQLite: this runs in processes that may already
    hold a connection to it (see :func:`_hint`).
    """
    file = Path(path)
    if not file.exists():
        return None
    if file.is_dir():
        return "is a directory"
    if file.stat().st_size == 0:
        return None
    try:
        others = sorted(set(tables(file)) - TIDE_TABLES)
    except sqlite3.Error as exc:
        if _not_sqlite(exc):
            return "is not a SQLite file, so not a tide log; name another file"
        # not readable without writing: a log whose writer was killed while setting it up
        # (or mid-write) needs the recovery only a writer runs; SQLite says if it cannot
        return None
    if others:
        return (
            f"is a SQLite file with tables tide does not write ({', '.join(others)}), "
            "not a tide log; name another file"
        )
    return None
