"""The fold of the golden logs, pinned: every checkpoint of the World on the way.

The fold is optimised in place (issue 15: faster ``task_from_pod``, a node heartbeat
that rebuilds nothing, rows decoded straight into events); none of that may change what
it folds. For each golden log this pins a digest of ``World.dump()`` after every
:data:`EVERY` records and at the end. The values were computed by tide at commit 9e58ba5
(main, before those optimisations) and are never recomputed by the code under test: a
deliberate change of what the fold keeps updates them and says why here.

The same values are required of the fold from SQLite (the log imported, then read a page
at a time by :class:`streams.paging.LogReader`, as ``tide replay`` and ``tide state`` read
it), so the decode of stored rows is held to the decode of lines.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable
from pathlib import Path

import pytest

from projections.world import World
from streams.backends.sqlite import SQLiteLog
from streams.codec import decode
from streams.events import Event
from streams.paging import LogReader
from streams.recording import import_recording

GOLDEN = Path(__file__).parents[1] / "replay" / "golden"
EVERY = 50

#: golden log -> (digest of the final dump, digest of the dumps every EVERY records)
PINNED = {
    "allocate-gang.jsonl": (
        "6ec331a6932e1023cbc986bf0da6fab954bb3c9fc62588cb37c2d0e1c6f94532",
        "b85defdbb5152e61e93e2cfc22a13b3dd598716ae613136887e735e077a05985",
    ),
    "demo-level2.jsonl": (
        "aa814f2c0fbb7c4ecbc84ef1f9e799d20608453044db6a3035cb7a3f4ff80fa0",
        "e68fbbcc1baba8a39e8898d96dc7536e0d524a03708f01433ca6636b5912ffc0",
    ),
    "demo-v2.jsonl": (
        "4fe247afd1c3f59794824d8914e3a439dbeb3ade4bb72456426d1d6a01484acc",
        "8ddc3af207a2349ed661f19c58f7e4fede0f4af84e79a4e5579663813ad6ea7c",
    ),
    "demo-v3.jsonl": (
        "20661a8e8a9b8b0f6e7b3b180c85e3c8769420ee687394b49d9439d8c81d0ab0",
        "0affebe36cd505ba9207d3ec39a4274913d922f3d550a2f763536f0d081f264c",
    ),
    "demo-v4.jsonl": (
        "aef0ee2723a2041a9a745dfc146e1b6017224549ee219ef44fc0db9b49bb43ea",
        "e82603f20ddc577d0efeff7531fced1e6eb4981d502239336c7af296238a6649",
    ),
    "demo.jsonl": (
        "03d14fae40b74cd73fb35c3b835702b104e84577a5466934d5f6f62e2e15c144",
        "aef962cc2b71dc2b81e50fecba676779e6f205cbca44da378e490bf1cf159c5a",
    ),
    "ownership.jsonl": (
        "baec297ae827b13f655bc56ad3a2da0d65fc7754629aed3859292991556ad4b1",
        "df7bf9c2e568ea177a9129f7b0fb647430989360e235732ab83df816c5b05be4",
    ),
    "pressure-graceful.jsonl": (
        "d9abc4c19625473bf991e5b1c946422f923bfa37e924b1e2ce58d584c13e66e9",
        "00a877788f382b3079f37f0b6a0b8395955bc415ed05b57a3ab8d9a763ff4a70",
    ),
    "rescheduling-hot-cold.jsonl": (
        "18082c1e0785493c7fd1d61d31380ebeaefe644023b7e7917faf33e432df700c",
        "17a9a995628b13aeef5e801bd413904e59862e07e0c807b23d39845c833ba5d7",
    ),
    "tdm-budgets-altered.jsonl": (
        "e47b739c9adc1a3d55d3a8bc3a11c54cd0e78f9fa59abc5f3c874bce58d8c39a",
        "5193f07bd4b5d34b7ce7919366d18b25172a9db730979a3efa1740b4f955be12",
    ),
    "tdm-budgets.jsonl": (
        "9390542b9e5e869f115ce22168f37a511db06331eaada178fbb201f03946e93b",
        "ce07742360a75dabfd01722edda6a677da49758336fe94c822bcbb0085a5725e",
    ),
}


def digests(events: Iterable[Event]) -> tuple[str, str]:
    """The final dump's sha256 and the sha256 of every EVERY-th dump's sha256."""
    world = World()
    chain = hashlib.sha256()
    for count, event in enumerate(events, 1):
        world.apply(event)
        if count % EVERY == 0:
            chain.update(hashlib.sha256(world.dump()).digest())
    return hashlib.sha256(world.dump()).hexdigest(), chain.hexdigest()


def logged(path: Path) -> list[Event]:
    """The log's records as a log hands them out: decoded, at offsets 0, 1, ..."""
    lines = path.read_bytes().splitlines()
    return [decode(line).with_offset(offset) for offset, line in enumerate(lines)]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_fold_of_golden_log_is_pinned(name: str) -> None:
    assert digests(logged(GOLDEN / name)) == PINNED[name]


@pytest.mark.parametrize("name", ["demo-v4.jsonl", "ownership.jsonl", "tdm-budgets.jsonl"])
def test_fold_from_sqlite_is_the_fold_of_lines(name: str, tmp_path: Path) -> None:
    db = tmp_path / "log.db"

    async def load() -> None:
        log = await SQLiteLog.open(db)
        try:
            await import_recording(GOLDEN / name, log)
        finally:
            await log.close()

    asyncio.run(load())
    with LogReader(lambda: SQLiteLog.open(db)) as reader:
        assert digests(reader.records()) == PINNED[name]
