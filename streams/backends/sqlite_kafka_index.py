"""The Kafka log's local subject index, kept in the SQLite file of its checkpoints.

A Kafka topic has no index of its own: without one, ``tide audit timeline`` and ``tide
audit decisions --node/--namespace`` read the whole topic to find the records about one
pod, node or namespace. The file the ``checkpoints=`` option of a ``kafka://`` URL names
(:attr:`streams.urls.LogURL.checkpoints`) is a local SQLite file beside the folding
process already, so the index lives there, in two tables beside the checkpoints':

* ``kafka_subjects (subject, "offset")``, ``WITHOUT ROWID``: the offsets of the records
  filed under each key of :func:`streams.subjects.subjects_of` (first occurrences of an
  id only: the records a reader hands out);
* ``kafka_subjects_mark (topic, version, upto)``, one row: the topic indexed, the version
  of :func:`~streams.subjects.subjects_of` it was indexed with, and the offset it is
  complete up to (every record below ``upto`` is indexed).

:class:`IndexFile` is the writer's side (``streams.backends.kafka_index`` extends it as
the log appends: rows and the new ``upto`` in one transaction, ``upto`` never lowered, so
two writers sharing a file only ever widen what is covered). :func:`find` is the reader's:
opened read-only (nothing written, not a byte beside the file), it answers the offsets
under some keys below ``upto``, read in one snapshot. A file without the tables gives
None silently (no writer indexed it yet); a corrupt file, another topic's index or
another version's gives None with one warning line: the reader then scans, with the
same answer.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path

import orjson

from streams.backends.sqlite_files import read_only_uri
from streams.subjects import VERSION

TABLE = "kafka_subjects"
MARK = "kafka_subjects_mark"
_CREATE = (
    f'CREATE TABLE IF NOT EXISTS {TABLE} (subject TEXT NOT NULL, "offset" INTEGER NOT NULL, '
    'PRIMARY KEY (subject, "offset")) WITHOUT ROWID',
    f"CREATE TABLE IF NOT EXISTS {MARK} (one INTEGER PRIMARY KEY CHECK (one = 0), "
    "topic TEXT NOT NULL, version INTEGER NOT NULL, upto INTEGER NOT NULL)",
)
_MARK = f"SELECT topic, version, upto FROM {MARK} WHERE one = 0"
_RESET = f"INSERT OR REPLACE INTO {MARK} (one, topic, version, upto) VALUES (0, ?, ?, 0)"
_INSERT = f'INSERT OR IGNORE INTO {TABLE} (subject, "offset") VALUES (?, ?)'
_FIND = (
    f'SELECT DISTINCT "offset" FROM {TABLE} WHERE subject IN (SELECT value FROM json_each(?)) '
    'AND "offset" < ? ORDER BY "offset"'
)

Warn = Callable[[str], None]


class IndexWriteError(Exception):
    """The index file could not be read or written (the message says why)."""


class IndexFile:
    """A writer's handle on the index in the SQLite file at ``path`` for ``topic``."""

    def __init__(self, con: sqlite3.Connection, path: str, topic: str, upto: int) -> None:
        self._con = con
        self.path = path
        self.topic = topic
        #: every record below this offset is indexed (as far as this handle knows)
        self.upto = upto

    @classmethod
    def open(cls, path: str, topic: str, *, warn: Warn) -> IndexFile | None:
        """Open (creating the tables if needed) the index of ``topic`` in ``path``; an
        index of another topic or version there is dropped (one warning line) and built
        anew from offset 0. None, with one warning line, when the file cannot be used."""
        try:
            con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            warn(f"warning: {path}: no subject index for {topic} ({exc})")
            return None
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA busy_timeout=5000")
            con.execute("BEGIN IMMEDIATE")
            for statement in _CREATE:
                con.execute(statement)
            row = con.execute(_MARK).fetchone()
            if row is not None and (row[0], row[1]) != (topic, VERSION):
                warn(
                    f"warning: {path}: its subject index is of topic {row[0]!r} "
                    f"(version {row[1]}), not {topic!r} (version {VERSION}); indexing anew"
                )
                con.execute(f"DELETE FROM {TABLE}")
                row = None
            if row is None:
                con.execute(_RESET, (topic, VERSION))
            con.execute("COMMIT")
        except sqlite3.Error as exc:
            con.close()
            warn(f"warning: {path}: no subject index for {topic} ({exc})")
            return None
        return cls(con, path, topic, 0 if row is None else int(row[2]))

    def extend(self, rows: Sequence[tuple[str, int]], *, start: int, end: int) -> None:
        """Add ``rows`` (``(subject, offset)``: every first record of ``[start, end)``) and
        mark the index complete up to ``end``, in one transaction. ``start`` must not be
        past what the file covers (``upto`` is never lowered); the rows are added anyway
        when it is, and the mark left where it was.

        Raises:
            IndexWriteError: the file could not be written.
        """
        con = self._con
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                row = con.execute(_MARK).fetchone()
                if row is None or (row[0], row[1]) != (self.topic, VERSION):
                    raise IndexWriteError(f"{self.path}: the subject index was replaced")
                upto = int(row[2])
                con.executemany(_INSERT, rows)
                if start <= upto < end:
                    upto = end
                    con.execute(f"UPDATE {MARK} SET upto = ? WHERE one = 0", (upto,))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise IndexWriteError(f"{self.path}: cannot extend the subject index ({exc})") from exc
        self.upto = upto

    def close(self) -> None:
        """Close the file."""
        self._con.close()


def find(
    path: str, topic: str, subjects: Sequence[str], *, warn: Warn
) -> tuple[list[int], int] | None:
    """The offsets filed under any of ``subjects`` in the index of ``topic`` at ``path``,
    lowest first, and the offset the index is complete up to (every offset returned is
    below it); read-only. None when there is no usable index: silently for a missing file
    or one without the tables, with one warning line for a corrupt file or an index of
    another topic or version."""
    file = Path(path)
    if not file.is_file() or file.stat().st_size == 0:
        return None
    try:
        with closing(sqlite3.connect(read_only_uri(file), uri=True)) as con:
            con.execute("BEGIN")  # one snapshot: the mark and the rows below it
            has = {
                str(r[0])
                for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if TABLE not in has or MARK not in has:
                return None
            row = con.execute(_MARK).fetchone()
            if row is None:
                return None
            if (row[0], row[1]) != (topic, VERSION):
                warn(
                    f"warning: {path}: its subject index is of topic {row[0]!r} "
                    f"(version {row[1]}), not {topic!r} (version {VERSION}); "
                    "ignored, scanning the topic"
                )
                return None
            upto = int(row[2])
            keys = orjson.dumps(list(subjects)).decode()
            offsets = [int(r[0]) for r in con.execute(_FIND, (keys, upto))]
            return offsets, upto
    except sqlite3.Error as exc:
        warn(f"warning: {path}: its subject index cannot be read ({exc}); scanning the topic")
        return None
