"""The URL factory: scheme → backend, plain paths, and a clear error for the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from streams import backends
from streams.backends import OPENERS, normalise_url, open_log
from streams.backends.memory import MemoryLog
from streams.backends.sqlite import SQLiteLog


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("memory://", "memory://"),
        ("sqlite:///a.db", "sqlite:///a.db"),
        ("kafka://broker:9092/topic", "kafka://broker:9092/topic"),
        ("a.db", "sqlite:///a.db"),
        ("/abs/a.db", "sqlite:////abs/a.db"),
    ],
)
def test_normalise_url(url: str, normal: str) -> None:
    assert normalise_url(url) == normal


def test_a_recording_is_not_a_log() -> None:
    with pytest.raises(ValueError, match="is a recording, not a log"):
        normalise_url("rec.jsonl")


@pytest.mark.parametrize(
    ("url", "kind"), [("memory://", MemoryLog), ("sqlite://", SQLiteLog), ("x.db", SQLiteLog)]
)
async def test_each_scheme_opens_its_backend(
    url: str, kind: type, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with await open_log(url) as log:
        assert isinstance(log, kind)


@pytest.mark.parametrize("url", ["nope://x", "ftp://host/log"])
async def test_an_unknown_scheme_names_the_url_and_the_supported_ones(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        await open_log(url)
    message = str(caught.value)
    assert "\n" not in message
    assert repr(url) in message
    for scheme in OPENERS:
        assert f"{scheme}://" in message


async def test_adding_a_backend_is_one_table_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    # any module with an ``open_url`` coroutine will do: the memory backend under a new name
    monkeypatch.setitem(backends.OPENERS, "other", "streams.backends.memory")
    async with await open_log("other://anything") as log:
        assert isinstance(log, MemoryLog)
