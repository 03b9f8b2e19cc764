"""Where `tide replay --verify --jobs N` cuts the log (``replay.segments.plan_cuts``): at
the checkpoints nearest where segments of equal cost end (the first, from offset 0, longer
by what starting from a checkpoint costs), checking only the ones it chooses."""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
import threading
from pathlib import Path

import pytest

from controller.cli.reading import _start_method
from replay.segments import Cut, choose, end_cost, plan_cuts, start_cost, targets
from streams.backends.checkpoints import open_log_store
from streams.backends.sqlite import SQLiteLog
from tests.replay.test_jobs import log_with_checkpoints


@pytest.mark.parametrize(
    ("head", "jobs", "start", "end", "want"),
    [
        (1000, 2, 0, 0, [500]),
        (1000, 4, 0, 0, [250, 500, 750]),
        # the first segment is longer by the start cost: 550 = 450 + 100
        (1000, 2, 100, 0, [550]),
        (1000, 3, 60, 0, [373.33, 686.67]),
        # ... and the last by the end cost: 530 + 40 = 470 + 100
        (1000, 2, 100, 40, [530]),
        (1000, 3, 60, 30, [363.33, 666.67]),
        # the two never count for more than half a segment's share (head / 2 jobs)
        (1000, 2, 10_000, 0, [625]),
        (1000, 2, 1_000, 1_000, [500]),
        (175, 3, 500, 0, [77.78, 126.39]),
    ],
)
def test_targets_give_segments_of_equal_cost(
    head: int, jobs: int, start: float, end: float, want: list[float]
) -> None:
    got = targets(head, jobs, start, end)
    assert [round(t, 2) for t in got] == want
    bounds = [0.0, *got, float(head)]
    scale = min(1.0, head / (2 * jobs) / (start + end)) if start + end else 1.0
    costs = [
        b - a + start * scale * (i > 0) + end * scale * (i < jobs - 1)
        for i, (a, b) in enumerate(itertools.pairwise(bounds))
    ]
    assert max(costs) - min(costs) < 1e-6


def _cuts(*positions: int, size: int = 0) -> list[Cut]:
    return [Cut(p, f"t{p}", size) for p in positions]


@pytest.mark.parametrize(
    ("positions", "size", "head", "jobs", "want"),
    [
        ((), 0, 100, 2, []),
        ((50,), 0, 100, 1, []),
        ((10, 50, 90), 0, 100, 2, [50]),
        ((10_000, 50_000, 90_000), 0, 100_000, 4, [10_000, 50_000, 90_000]),
        # fewer cuts than jobs - 1: every one, in order
        ((40, 80), 0, 100, 6, [40, 80]),
        # cuts at the head or past it are not inside the log
        ((100, 120), 0, 100, 2, []),
        # the start and end costs move the cut later: by (1,000,000 / 560 + 200 -
        # 1,000,000 / 950) / 2, ~466 records, to 60,466
        ((59_000, 61_500), 1_000_000, 120_000, 2, [61_500]),
        # with nothing to decode, by the hand-over alone (200 / 2)
        ((59_000, 61_500), 0, 120_000, 2, [59_000]),
        # a tie goes to the earlier cut (the target: 50,100)
        ((49_900, 50_300), 0, 100_000, 2, [49_900]),
    ],
)
def test_choose_the_nearest_cuts_in_order(
    positions: tuple[int, ...], size: int, head: int, jobs: int, want: list[int]
) -> None:
    chosen = choose(_cuts(*positions, size=size), head=head, jobs=jobs)
    assert [c.position for c in chosen] == want


def test_start_and_end_costs_grow_with_the_checkpoint() -> None:
    assert 0 < start_cost(0) < start_cost(500_000) < start_cost(1_000_000)
    assert end_cost(0) == 0 < end_cost(500_000) < end_cost(1_000_000)


def _plan(path: Path, jobs: int) -> tuple[list[int], list[str]]:
    warned: list[str] = []

    async def run() -> list[Cut]:
        async with await SQLiteLog.open(path) as log:
            store = await open_log_store(f"sqlite:///{path}", create=False)
            assert store is not None
            async with store:
                return await plan_cuts(log, store, jobs=jobs, warn=warned.append)

    return [c.position for c in asyncio.run(run())], warned


def _copy(tmp: Path) -> Path:
    source = log_with_checkpoints("stale-metrics.jsonl", 25)  # 25, 50, ... 175 (the head)
    copy = tmp / "copy.db"
    with sqlite3.connect(source) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    return copy


def _corrupt(path: Path, position: int) -> None:
    with sqlite3.connect(path) as db:
        (data,) = db.execute(
            "SELECT state FROM checkpoints_at WHERE position=?", (position,)
        ).fetchone()
        bad = bytes(data[:-10]) + bytes(10)
        db.execute("UPDATE checkpoints_at SET state=? WHERE position=?", (bad, position))


def test_a_bad_chosen_checkpoint_is_replaced_by_the_next_nearest(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    (first,), warned = _plan(path, 2)
    assert warned == []
    _corrupt(path, first)
    (again,), warned = _plan(path, 2)
    assert again != first and abs(again - first) == 25
    assert warned == [
        f"warning: not cutting at checkpoint {first}: its digest does not match "
        "(corrupt or truncated)"
    ]


def test_a_bad_checkpoint_not_chosen_is_not_read(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    cuts, _ = _plan(path, 2)
    _corrupt(path, 25)
    assert 25 not in cuts
    assert _plan(path, 2) == (cuts, [])


def test_every_bad_checkpoint_met_is_one_line(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    for position in range(25, 175, 25):
        _corrupt(path, position)
    assert _plan(path, 3) == (
        [],
        [
            "warning: not cutting at checkpoint 75: its digest does not match (corrupt or "
            "truncated) (and 5 more)"
        ],
    )


def test_the_local_pool_forks_only_a_process_of_one_thread() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert _start_method() == "spawn"
    finally:
        stop.set()
        other.join()
