"""Checkpoint storage: opaque bytes kept at a position under a name, beside the log backends.

A checkpoint is one row written in one statement, so whoever reads it back never gets a
state from one point and a position from another. What the bytes mean (a projection's
dump, a log's checkpoint) is ``projections``' business, not this module's: the port here
only keeps them. Two kinds of rows:

* by name, ``(name, position, state)``: one per name, replaced by each save (a projection's
  own checkpoint, and the single World checkpoint tide kept before checkpoints by
  position, still read);
* by position, ``(position, at, state)``: a log's checkpoints (``projections.checkpoints``),
  many per store, one per position, with the log time ``at`` they reach; :meth:`stored`
  lists them without their bytes.

* :class:`CheckpointStore` is the port, :class:`MemoryCheckpointStore` its in-process
  adapter; the SQLite adapter (aiosqlite, table ``checkpoints(name PRIMARY KEY, position,
  state BLOB)`` in the log's own ``.db`` file or a separate one) is
  ``streams.backends.sqlite_checkpoints``, imported by name only when a store is opened, so
  the folds that use the port never import a storage driver.
* :func:`open_store` opens a store by its own URL; :func:`open_log_store` the store kept
  with a log (where :attr:`streams.urls.LogURL.checkpoints` says: the SQLite log's file, a
  ``kafka://`` log's ``checkpoints=`` file, none for logs that vanish with the process).
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, cast

from streams.urls import parse_log_url

#: the module of the SQLite adapter (it defines ``open_file`` and ``open_existing``)
SQLITE_ADAPTER = "streams.backends.sqlite_checkpoints"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A stored state: ``state`` was taken with ``position`` records folded."""

    name: str
    position: int
    state: bytes


@dataclass(frozen=True, slots=True)
class Stored:
    """A checkpoint kept at a position, without its bytes: ``size`` is their length and
    ``at`` the log time it reaches (RFC 3339, "" when it says none)."""

    position: int
    at: str
    size: int


class CheckpointStore(abc.ABC):
    """Where checkpoints are kept: one ``(position, state)`` per name, and a log's
    checkpoints by position."""

    #: the errors a read of this store's storage may raise when the storage is unreadable
    #: (a corrupt file, say): a reader that can do without a checkpoint treats them as none
    unreadable: ClassVar[tuple[type[Exception], ...]] = ()

    @abc.abstractmethod
    async def save(self, name: str, position: int, state: bytes) -> None:
        """Replace the checkpoint of ``name`` (state and position in one write)."""

    @abc.abstractmethod
    async def load(self, name: str) -> Checkpoint | None:
        """The checkpoint of ``name``, or None."""

    @abc.abstractmethod
    async def delete(self, name: str) -> None:
        """Forget the checkpoint of ``name``."""

    @abc.abstractmethod
    async def save_at(self, position: int, at: str, state: bytes) -> None:
        """Keep ``state`` as the checkpoint at ``position`` (replacing one there)."""

    @abc.abstractmethod
    async def stored(self) -> list[Stored]:
        """The checkpoints kept by position, lowest position first."""

    @abc.abstractmethod
    async def load_at(self, position: int) -> bytes | None:
        """The bytes of the checkpoint at ``position``, or None."""

    @abc.abstractmethod
    async def drop_at(self, positions: Iterable[int]) -> None:
        """Forget the checkpoints at ``positions`` (those not kept are ignored)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""

    async def __aenter__(self) -> CheckpointStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class MemoryCheckpointStore(CheckpointStore):
    """Checkpoints in a dict (tests, simulations)."""

    def __init__(self) -> None:
        self._rows: dict[str, Checkpoint] = {}
        self._at: dict[int, tuple[str, bytes]] = {}

    async def save(self, name: str, position: int, state: bytes) -> None:
        self._rows[name] = Checkpoint(name, position, bytes(state))

    async def load(self, name: str) -> Checkpoint | None:
        return self._rows.get(name)

    async def delete(self, name: str) -> None:
        self._rows.pop(name, None)

    async def save_at(self, position: int, at: str, state: bytes) -> None:
        self._at[position] = (at, bytes(state))

    async def stored(self) -> list[Stored]:
        return [Stored(p, self._at[p][0], len(self._at[p][1])) for p in sorted(self._at)]

    async def load_at(self, position: int) -> bytes | None:
        found = self._at.get(position)
        return None if found is None else found[1]

    async def drop_at(self, positions: Iterable[int]) -> None:
        for position in positions:
            self._at.pop(position, None)


def _sqlite(function: str) -> Callable[[str | Path], Awaitable[CheckpointStore | None]]:
    """A function of the SQLite adapter, imported now (the driver only when it is used)."""
    module = importlib.import_module(SQLITE_ADAPTER)
    return cast(
        Callable[[str | Path], Awaitable[CheckpointStore | None]], getattr(module, function)
    )


async def open_sqlite_store(path: str | Path) -> CheckpointStore:
    """Open (creating if needed) the checkpoint table in the SQLite file at ``path``."""
    store = await _sqlite("open_file")(path)
    assert store is not None
    return store


async def open_store(url: str) -> CheckpointStore:
    """``memory://`` or ``sqlite:///path.db`` (a plain path means SQLite).

    Raises:
        ValueError: any other scheme (``unsupported checkpoint store URL ...``).
    """
    if url.startswith("memory://"):
        return MemoryCheckpointStore()
    path = url.split("://", 1)[1].removeprefix("/") if "://" in url else url
    if "://" in url and not url.startswith("sqlite://"):
        raise ValueError(f"unsupported checkpoint store URL {url!r}")
    return await open_sqlite_store(path or ":memory:")


def store_path(log_url: str) -> str | None:
    """The SQLite file that keeps the checkpoints of the log at ``log_url``, or None
    (:attr:`streams.urls.LogURL.checkpoints`)."""
    return parse_log_url(log_url).checkpoints


async def open_log_store(log_url: str, *, create: bool) -> CheckpointStore | None:
    """The checkpoint store kept with the log at ``log_url``, or None if it has none.

    With ``create=False`` (the reading commands) nothing is written: a missing file or a
    file without a checkpoint table gives None, and the table is never created.
    """
    path = store_path(log_url)
    if path is None:
        return None
    if create:
        return await open_sqlite_store(path)
    if not Path(path).exists():
        return None
    return await _sqlite("open_existing")(path)
