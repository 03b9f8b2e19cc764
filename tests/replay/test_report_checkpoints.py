"""`tide report --from/--to` folds from the nearest checkpoint before the range (issue 26):
its page is byte for byte the page of a fold from offset 0 (a ``.jsonl`` recording of the
same records, read whole) — over range positions (before the log, at record times spread
over it, at each bind's time, past its end, with and without ``--to``) and checkpoint
intervals (none, every 1, 9 and 40 records, every other one corrupt), on golden logs and
built ones (binds, preemptions, revocable zones' windows, over-committed nodes)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from controller.cli import app, report_read
from controller.cli.reading import reader
from controller.simulate.runner import save_log
from projections.checkpoints import CheckpointPolicy, keep_checkpoints
from replay.bindview import BindFold
from streams.backends import open_log
from streams.backends.checkpoints import open_log_store
from streams.codec import encode
from streams.events import DECISION_TYPES, EFFECT_TYPES, Event, format_time, make_event
from streams.recording import read_recording
from tests.projections.test_overcommit import over_log
from tests.replay.test_why_checkpoints import _preempted

GOLDEN = Path(__file__).parent / "golden"
#: checkpoint intervals in records; 0: none; -9: every 9, every other one corrupt
VARIANTS = (0, 1, 9, 40, -9)
#: the demo's 4,614 records: a checkpoint every record would take a minute to write
DEMO = (0, 97, 1000, -97)


def _variants(name: str) -> tuple[int, ...]:
    return DEMO if name == "demo" else VARIANTS


def _golden(name: str) -> Callable[[], list[Event]]:
    return lambda: [e for e in read_recording(GOLDEN / f"{name}.jsonl") if isinstance(e, Event)]


def _late() -> list[Event]:
    """allocate-gang with every decision (and outcome) 90 s after its cause: a range from a
    decision's time then has its cause before it (tide's own sessions decide at their
    trigger's time; a log written otherwise is still read right)."""
    ids: dict[str, str] = {}
    out = []
    for event in _golden("allocate-gang")():
        if event.type in DECISION_TYPES or event.type in EFFECT_TYPES:
            cause = ids.get(event.cause or "", event.cause)
            moved = make_event(
                event.type, event.at + timedelta(seconds=90), event.data, cause=cause
            )
            ids[event.id] = moved.id
            event = moved
        out.append(event)
    return out


SOURCES: dict[str, Callable[[], list[Event]]] = {
    "allocate-gang": _golden("allocate-gang"),
    "late": _late,
    "tdm-budgets": _golden("tdm-budgets"),
    "pressure-graceful": _golden("pressure-graceful"),
    "preempted": _preempted,
    "overcommit": over_log,
    "demo": _golden("demo"),
}


async def _checkpoint(url: str, every: int) -> None:
    policy = CheckpointPolicy(every_records=abs(every), every_minutes=0, keep=10_000, thinned=0)
    async with await open_log(url) as log:
        store = await open_log_store(url, create=True)
        assert store is not None
        async with store:
            await keep_checkpoints(log, store, policy=policy)
            if every < 0:  # every other one truncated: its digest no longer matches
                for info in (await store.stored())[1::2]:
                    data = await store.load_at(info.position)
                    assert data is not None
                    await store.save_at(info.position, info.at, data[: len(data) // 2])


@cache
def _logs(name: str, root: Path) -> dict[int | str, str]:
    """The log of ``name`` in each variant, and ("ref") a ``.jsonl`` of its stored records."""
    events = SOURCES[name]()
    urls: dict[int | str, str] = {}
    for every in _variants(name):
        url = f"sqlite:///{root / f'{name}-{every}.db'}"
        save_log(url, events)
        if every:
            asyncio.run(_checkpoint(url, every))
        urls[every] = url
    with reader(urls[0]) as log:
        lines = b"".join(encode(e) + b"\n" for e in log.records())
    (root / f"{name}.jsonl").write_bytes(lines)
    urls["ref"] = str(root / f"{name}.jsonl")
    return urls


def _cuts(name: str) -> list[tuple[datetime, datetime | None]]:
    """(--from, --to): before the log, record times spread over it, each bind's time (its
    cause may lie before the range), past the end; one with --to."""
    events = SOURCES[name]()
    times = sorted({e.at for e in events})
    spread = 3 if name == "demo" else 6
    cuts: list[tuple[datetime, datetime | None]] = [(times[0] - timedelta(seconds=1), None)]
    cuts += [(times[len(times) * i // spread], None) for i in range(1, spread)]
    binds = sorted({e.at for e in events if e.type == "decision.bind"})
    cuts += [(at, None) for at in binds[:: max(1, len(binds) // 4)][:4]]
    cuts += [(times[len(times) // 3], times[2 * len(times) // 3])]
    cuts += [(times[-1] + timedelta(seconds=1), None)]
    return sorted(set(cuts), key=lambda c: (c[0], c[1] or c[0]))


TABLE = [(name, cut) for name in SOURCES for cut in _cuts(name)]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("report-ckpt")


def _page(log: str, out: Path, cut: tuple[datetime, datetime | None]) -> tuple[str, str]:
    args = ["report", log, "--out", str(out), "--from", format_time(cut[0])]
    args += ["--to", format_time(cut[1])] if cut[1] else []
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out.read_text(encoding="utf-8").replace(log, "LOG"), result.stderr


@pytest.mark.parametrize(("name", "cut"), TABLE, ids=[f"{n}-{c[0]:%H%M%S}" for n, c in TABLE])
def test_a_range_from_a_checkpoint_is_the_page_of_a_fold_from_offset_0(
    name: str, cut: tuple[datetime, datetime | None], root: Path
) -> None:
    urls = _logs(name, root)
    want, _ = _page(urls["ref"], root / "ref.html", cut)
    for every in _variants(name):
        got, err = _page(urls[every], root / f"{every}.html", cut)
        assert got == want, f"{name} --from {format_time(cut[0])}, checkpoints every {every}"
        if every >= 0:
            assert "warning" not in err


def test_the_pass_starts_at_a_checkpoint_and_finds_what_lies_before_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not vacuous: the passes above start past offset 0, read causes back from their
    checkpoint and derive bind views from an earlier one; a corrupt one says so."""
    begins: list[int] = []
    backs: list[int] = []
    resumed: list[int] = []
    paged, back, again = report_read._paged, report_read._back, BindFold.resumed

    def spy_paged(opened: Any, begin: int) -> Any:
        begins.append(begin)
        return paged(opened, begin)

    def spy_back(opened: Any, begin: int, ids: set[str]) -> dict[str, Event]:
        found = back(opened, begin, ids)
        backs.append(len(found))
        return found

    def spy_again(self: BindFold, world: Any, decided: Any) -> BindFold:
        resumed.append(len(self.pending()))
        return again(self, world, decided)

    monkeypatch.setattr(report_read, "_paged", spy_paged)
    monkeypatch.setattr(report_read, "_back", spy_back)
    monkeypatch.setattr(BindFold, "resumed", spy_again)
    stderr = ""
    for name in ("late", "preempted"):
        urls = _logs(name, root)
        for cut in _cuts(name):
            want, _ = _page(urls["ref"], root / "ref.html", cut)
            for every in (1, -9):
                path = Path(urls[every].removeprefix("sqlite:///"))
                held = path.read_bytes()
                got, err = _page(urls[every], root / "got.html", cut)
                assert got == want
                assert path.read_bytes() == held  # a reader: nothing written, not even a table
                stderr += err
    assert any(begins) and any(backs) and any(resumed)
    assert "warning: skipped checkpoint at position" in stderr


def test_a_range_lists_its_own_over_commit_episodes() -> None:
    """The over-commit section of a range: the nodes already over at its first record
    (g1, over since offset 5) and those that went over in it (c1 at offset 8); a report of
    the whole log lists both from their starts."""
    from replay.report import collect
    from tests.builders import at

    whole = collect(over_log()).overcommit
    assert "g1: from 2026-11-21T20:03:00Z (offset 5)" in whole[1]
    head, g1, c1 = collect(over_log(), since=at(6)).overcommit
    assert head.startswith("over-committed: 2 time(s)")
    assert head.endswith("; 1 already over when the range began")
    assert g1.startswith(
        "  g1: from before the range (over at its first record, 2026-11-21T20:06:00Z"
        " (offset 7)) to 2026-11-21T20:09:00Z (offset 10)"
    )
    assert c1.startswith("  c1: from 2026-11-21T20:07:00Z (offset 8)")
    # c1 is still over when its last record (at minute 10) comes: it mends it
    assert (
        collect(over_log(), since=at(10))
        .overcommit[1]
        .startswith(
            "  c1: from before the range (over at its first record, 2026-11-21T20:10:00Z"
            " (offset 11)) to 2026-11-21T20:10:00Z (offset 11)"
        )
    )
    assert collect(over_log(), since=at(11)).overcommit == []  # none over at the end
