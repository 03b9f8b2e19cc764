"""The checkpoint port and its adapters: opaque bytes at a position, one write each; the
store kept with a log; and the bytes of a checkpoint written before the port moved here."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from projections.base import decode_state
from streams.backends.checkpoints import (
    Checkpoint,
    CheckpointStore,
    MemoryCheckpointStore,
    open_log_store,
    open_store,
)
from streams.backends.sqlite_checkpoints import SQLiteCheckpointStore


@pytest.mark.parametrize("url", ["memory://", "sqlite:///{tmp}/cp.db", "{tmp}/plain.db"])
async def test_open_store(url: str, tmp_path: Path) -> None:
    store: CheckpointStore = await open_store(
        url.format(tmp=tmp_path).replace("///", "////", 1)
        if url.startswith("sqlite")
        else url.format(tmp=tmp_path)
    )
    async with store:
        await store.save("x", 3, b"abc")
        await store.save("x", 4, b"def")
        assert await store.load("x") == Checkpoint("x", 4, b"def")
        await store.delete("x")
        assert await store.load("x") is None


async def test_open_store_rejects_other_schemes() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        await open_store("kafka://host/topic")


# -- the checkpoint store contract ----------------------------------------------------


class CheckpointStoreContract:
    """Every :class:`~streams.backends.checkpoints.CheckpointStore` must pass these; a backend's
    test class provides ``opener`` (the same storage on every call) and ``persistent``."""

    persistent = True

    @pytest.fixture
    def opener(self) -> Callable[[], Any]:
        raise NotImplementedError

    async def test_an_unknown_name_has_no_checkpoint(self, opener: Callable[[], Any]) -> None:
        async with await opener() as store:
            assert await store.load("nope") is None
            await store.delete("nope")  # forgetting nothing is fine
            assert await store.load("nope") is None

    async def test_save_load_overwrite_delete(self, opener: Callable[[], Any]) -> None:
        async with await opener() as store:
            await store.save("a", 3, b"three")
            await store.save("b", 9, b"\x00\xffbytes")
            assert await store.load("a") == Checkpoint("a", 3, b"three")
            await store.save("a", 5, b"five")  # position and state replaced together
            assert await store.load("a") == Checkpoint("a", 5, b"five")
            assert await store.load("b") == Checkpoint("b", 9, b"\x00\xffbytes")
            await store.delete("a")
            assert await store.load("a") is None
            assert await store.load("b") == Checkpoint("b", 9, b"\x00\xffbytes")

    async def test_a_saved_state_is_a_copy(self, opener: Callable[[], Any]) -> None:
        state = bytearray(b"abc")
        async with await opener() as store:
            await store.save("a", 1, bytes(state))
            state[0] = ord("z")
            assert (await store.load("a")).state == b"abc"

    async def test_closing_and_reopening(self, opener: Callable[[], Any]) -> None:
        store = await opener()
        await store.save("a", 7, b"seven")
        await store.close()
        if not self.persistent:
            return
        async with await opener() as again:
            assert await again.load("a") == Checkpoint("a", 7, b"seven")


class TestMemoryCheckpointStore(CheckpointStoreContract):
    persistent = False

    @pytest.fixture
    def opener(self) -> Callable[[], Any]:
        async def open_memory() -> CheckpointStore:
            return MemoryCheckpointStore()

        return open_memory


class TestSQLiteCheckpointStore(CheckpointStoreContract):
    @pytest.fixture
    def opener(self, tmp_path: Path) -> Callable[[], Any]:
        async def open_file() -> CheckpointStore:
            return await SQLiteCheckpointStore.open(tmp_path / "cp.db")

        return open_file


@pytest.mark.parametrize("url", ["memory://", "sqlite://"])
async def test_logs_without_a_file_have_no_store(url: str) -> None:
    assert await open_log_store(url, create=True) is None


async def test_a_missing_file_gets_no_store_when_reading(tmp_path: Path) -> None:
    assert await open_log_store(str(tmp_path / "none.db"), create=False) is None
    assert not (tmp_path / "none.db").exists()


# -- a checkpoint written before the port moved to streams/backends/ ----------------

#: the checkpoints table of a SQLite log holding ``scenario()`` (tests/projections/
#: test_store.py), as tide at commit 7fcd16c (``projections.store``) wrote it: dumped with
#: ``sqlite3``'s ``iterdump``, its World checkpoint at position 26
BEFORE = Path(__file__).parent / "data" / "checkpoint-7fcd16c.sql"


def _restore(path: Path) -> None:
    import sqlite3

    with sqlite3.connect(path) as db:
        db.executescript(BEFORE.read_text())
    db.close()


def _dump(path: Path) -> list[str]:
    import sqlite3

    db = sqlite3.connect(path)
    try:
        return [line for line in db.iterdump() if "checkpoints" in line]
    finally:
        db.close()


async def test_a_checkpoint_written_before_the_move_loads_after_it(tmp_path: Path) -> None:
    from projections.store import WORLD_CHECKPOINT, resume_world
    from projections.world import World
    from tests.projections.test_store import scenario

    path = tmp_path / "before.db"
    _restore(path)
    records = [event.with_offset(i) for i, event in enumerate(scenario())]
    store = await open_log_store(f"sqlite:///{path}", create=False)
    assert isinstance(store, SQLiteCheckpointStore)
    async with store:
        saved = await store.load(WORLD_CHECKPOINT)
        world = await resume_world(store, upto=None, head=len(records))
    assert saved is not None and saved.position == len(records) == 26
    # issue 25 item 8 (behaviour level 4, stale-metrics) moved the usage projection's
    # checkpoint to format 2 (each node's own sample times): a World refuses this
    # format-1 checkpoint, so the caller refolds from offset 0 (a bad checkpoint costs
    # time, never a wrong answer); every other projection in it is still the fold's
    assert world is None
    fold = World().fold(records)
    _, old_body = decode_state("world", saved.state)
    _, new_body = decode_state("world", fold.dump())
    assert sorted(old_body["members"]) == sorted(new_body["members"])
    assert {k: v for k, v in old_body["members"].items() if k != "usage"} == {
        k: v for k, v in new_body["members"].items() if k != "usage"
    }
    old_usage = decode_state("usage", base64.b64decode(old_body["members"]["usage"]))[1]
    new_usage = decode_state("usage", base64.b64decode(new_body["members"]["usage"]), fmt=2)[1]
    assert {k: v for k, v in new_usage.items() if k not in ("node_fresh", "node_stale")} == (
        old_usage
    )


async def test_the_bytes_written_are_those_written_before(tmp_path: Path) -> None:
    """The same checkpoint saved now gives the same table and the same row, byte for byte."""
    from projections.store import WORLD_CHECKPOINT

    before = tmp_path / "before.db"
    _restore(before)
    async with await SQLiteCheckpointStore.open(before) as old:
        saved = await old.load(WORLD_CHECKPOINT)
    assert saved is not None
    now = tmp_path / "now.db"
    store = await open_log_store(f"sqlite:///{now}", create=True)
    assert store is not None
    async with store:
        await store.save(WORLD_CHECKPOINT, saved.position, saved.state)
    assert _dump(now) == BEFORE.read_text().splitlines()
