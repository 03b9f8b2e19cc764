"""The Kafka log's local subject index answers what a scan of the topic answers.

Golden logs are appended onto tansu topics by writers that keep the index in their
``checkpoints=`` file (``streams.backends.kafka_index``); the records about several pods,
nodes, zones and namespaces read through the index (``controller.cli.reading.about``)
must be those a full scan filtered by :func:`streams.subjects.subjects_of` gives, with
the index absent, behind the head (another writer without the file, a stale copy) and
current, with another writer and a duplicate that slipped in between the indexed
appends. A foreign or corrupt index is ignored with one warning line, and a reader never
writes the file.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.cli.common import read_log_events
from controller.cli.reading import about, records
from streams.backends import open_log
from streams.backends.kafka_url import parse_kafka_url
from streams.backends.sqlite_kafka_index import IndexFile, find
from streams.events import Event
from streams.subjects import namespace_key, node_key, pod_keys, subjects_of, zone_key
from tests.replay.test_golden import GOLDEN
from tests.streams.tansu import Broker
from tests.streams.test_kafka_backend import produce_raw

#: golden logs with pods on several nodes and namespaces (and zones, for tdm)
NAMES = ("demo", "tdm-budgets")


def _events(name: str) -> list[Event]:
    return read_log_events(str(GOLDEN / f"{name}.jsonl"))


def _key_sets(events: list[Event]) -> list[list[str]]:
    """Several pods (by key and by bare name), nodes, zones and namespaces of ``events``,
    alone and together, and a key no record is under."""
    seen: dict[str, list[str]] = {}
    for event in events:
        for key in subjects_of(event):
            kind = key.split(":", 1)[0]
            if key not in seen.setdefault(kind, []):
                seen[kind].append(key)
    picked = {kind: keys[:: max(1, len(keys) // 2)][:2] for kind, keys in seen.items()}
    sets = [[key] for keys in picked.values() for key in keys]
    pods = [k.removeprefix("pod:") for k in picked.get("pod", [])]
    sets += [pod_keys(pod) for pod in pods]
    if picked.get("node") and picked.get("zone"):
        sets.append([picked["node"][0], picked["zone"][0]])
    sets.append([node_key("no-such-node"), namespace_key("no-such-ns"), zone_key("none")])
    return sets


def _scanned(scan: list[Event], keys: list[str]) -> list[tuple[int, str]]:
    """The records of a full scan under any of ``keys``."""
    wanted = set(keys)
    return [(e.offset, e.id) for e in scan if wanted & set(subjects_of(e))]


def _indexed(url: str, keys: list[str], *, used: bool, scan: list[Event]) -> list[tuple[int, str]]:
    """What ``about`` gives, filtered as its callers filter it; ``used``: the index gave
    only the records under ``keys`` (not every record of ``scan``, the fallback)."""
    wanted = set(keys)
    found = list(about(url, keys))
    taken = [(e.offset, e.id) for e in found if wanted & set(subjects_of(e))]
    assert (len(taken) == len(found)) if used else (len(found) == len(scan))
    return taken


async def _append(url: str, chunks: list[list[Event]]) -> None:
    async with await open_log(url) as log:
        for chunk in chunks:
            await log.append(chunk)


def _chunks(events: list[Event], size: int) -> list[list[Event]]:
    return [events[k : k + size] for k in range(0, len(events), size)]


def _upto(path: Path, url: str) -> int | None:
    found = find(str(path), parse_kafka_url(url).topic, [], warn=pytest.fail)
    return None if found is None else found[1]


async def _head(url: str) -> int:
    async with await open_log(url) as log:
        return await log.head()


def _absent(broker: Broker, tmp: Path, events: list[Event]) -> tuple[str, Path]:
    """Written by a writer without a checkpoints file; read with one that does not exist."""
    url = broker.url()
    asyncio.run(_append(url, _chunks(events, 500)))
    return f"{url}?checkpoints={tmp / 'none.db'}", tmp / "none.db"


def _current(broker: Broker, tmp: Path, events: list[Event]) -> tuple[str, Path]:
    """One writer keeping the index, in batches of several sizes."""
    url = broker.url(checkpoints=str(tmp / "index.db"))
    asyncio.run(_append(url, _chunks(events[:100], 7) + _chunks(events[100:], 400)))
    assert _upto(tmp / "index.db", url) == asyncio.run(_head(url))
    return url, tmp / "index.db"


def _behind(broker: Broker, tmp: Path, events: list[Event]) -> tuple[str, Path]:
    """Half written by the indexing writer, the rest by a writer without the file."""
    url = broker.url(checkpoints=str(tmp / "index.db"))
    half = len(events) // 2
    asyncio.run(_append(url, _chunks(events[:half], 300)))
    asyncio.run(_append(url.split("?", 1)[0], _chunks(events[half:], 300)))
    upto = _upto(tmp / "index.db", url)
    assert upto is not None and 0 < upto < asyncio.run(_head(url))
    return url, tmp / "index.db"


def _stale_copy(broker: Broker, tmp: Path, events: list[Event]) -> tuple[str, Path]:
    """A copy of the index taken halfway, read while the writer's own file went on."""
    url = broker.url(checkpoints=str(tmp / "index.db"))
    half = len(events) // 3
    asyncio.run(_append(url, _chunks(events[:half], 250)))
    shutil.copy(tmp / "index.db", tmp / "copy.db")
    asyncio.run(_append(url, _chunks(events[half:], 250)))
    return url.replace("index.db", "copy.db"), tmp / "copy.db"


def _interleaved(broker: Broker, tmp: Path, events: list[Event]) -> tuple[str, Path]:
    """The indexing writer's appends alternate with another writer's, and a duplicate of
    an indexed record slips in between (a produce retried after a lost ack)."""
    url = broker.url(checkpoints=str(tmp / "index.db"))
    plain = url.split("?", 1)[0]
    chunks = _chunks(events, 350)

    async def write() -> None:
        async with await open_log(url) as indexing, await open_log(plain) as other:
            for k, chunk in enumerate(chunks):
                last = k == len(chunks) - 1
                await (indexing if k % 2 == 0 or last else other).append(chunk)
                if k == 2:
                    await produce_raw(broker, parse_kafka_url(plain).topic, chunks[0][:20])

    asyncio.run(write())
    assert _upto(tmp / "index.db", url) == asyncio.run(_head(url))
    return url, tmp / "index.db"


WRITTEN: dict[str, Callable[[Broker, Path, list[Event]], tuple[str, Path]]] = {
    "absent": _absent,
    "current": _current,
    "behind": _behind,
    "stale copy": _stale_copy,
    "interleaved, with a duplicate": _interleaved,
}


#: each state of the index on each log (an index behind the head scans the topic's tail
#: for each key: ~20 s a log while a read waited out the broker's fetch wait at the head)
CASES = [(state, name) for state in sorted(WRITTEN) for name in NAMES]


@pytest.mark.parametrize(("state", "name"), CASES)
def test_the_index_answers_what_a_scan_answers(
    broker: Broker, tmp_path: Path, name: str, state: str, capsys: pytest.CaptureFixture[str]
) -> None:
    events = _events(name)
    url, index = WRITTEN[state](broker, tmp_path, events)
    before = index.read_bytes() if index.exists() else None
    scan = list(records(url))
    for keys in _key_sets(events):
        got = _indexed(url, keys, used=state != "absent", scan=scan)
        assert got == _scanned(scan, keys), keys
    assert (index.read_bytes() if index.exists() else None) == before  # a reader never writes
    assert capsys.readouterr().err == ""


def _corrupt(path: Path) -> None:
    path.write_bytes(b"not a SQLite file at all" * 100)


def _foreign(path: Path) -> None:
    file = IndexFile.open(str(path), "another-topic", warn=pytest.fail)
    assert file is not None
    file.extend([("node:x", 0)], start=0, end=1)
    file.close()


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:1500])


BAD: dict[str, Callable[[Path], None]] = {
    "corrupt": _corrupt,
    "foreign": _foreign,
    "truncated": _truncated,
}


@pytest.mark.parametrize("bad", sorted(BAD))
def test_a_bad_index_is_ignored_with_one_warning_line(
    broker: Broker, tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    events = _events("tdm-budgets")
    url, index = _current(broker, tmp_path, events)
    copy = tmp_path / "bad.db"
    shutil.copy(index, copy)
    if bad == "foreign":
        copy.unlink()
    BAD[bad](copy)
    before = copy.read_bytes()
    bad_url = url.replace("index.db", "bad.db")
    scan = list(records(url))
    capsys.readouterr()
    for keys in _key_sets(events)[:4]:
        assert _indexed(bad_url, keys, used=False, scan=scan) == _scanned(scan, keys), keys
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and len(set(err)) == 1, err  # one line each read
    assert err[0].startswith("warning: ") and str(copy) in err[0]
    assert copy.read_bytes() == before


def test_a_writer_rebuilds_a_foreign_index(broker: Broker, tmp_path: Path) -> None:
    events = _events("tdm-budgets")
    _foreign(tmp_path / "index.db")
    warned: list[str] = []
    url = broker.url(checkpoints=str(tmp_path / "index.db"))
    file = IndexFile.open(
        str(tmp_path / "index.db"), parse_kafka_url(url).topic, warn=warned.append
    )
    assert file is not None and file.upto == 0
    file.close()
    assert len(warned) == 1 and "another-topic" in warned[0]
    asyncio.run(_append(url, _chunks(events, 40)))
    keys = [node_key("no-such-node"), *_key_sets(events)[0]]
    scan = list(records(url))
    assert _indexed(url, keys, used=True, scan=scan) == _scanned(scan, keys)
    assert _upto(tmp_path / "index.db", url) == asyncio.run(_head(url))
