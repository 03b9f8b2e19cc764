"""`tide replay --verify --jobs N --executor dask://HOST:PORT`: the same segments on a Dask
cluster (a ``distributed.LocalCluster`` on loopback here) give the serial check's output."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.replay.test_jobs import log_with_checkpoints, replay_cli

distributed: Any = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        protocol="tcp",
        host="127.0.0.1",
        dashboard_address=None,
    )
    try:
        yield str(cluster.scheduler_address).removeprefix("tcp://")
    finally:
        cluster.close()


@pytest.mark.parametrize(
    ("name", "every", "jobs"), [("stale-metrics.jsonl", 50, 3), ("pressure-graceful.jsonl", 30, 2)]
)
def test_dask_gives_the_serial_output(scheduler: str, name: str, every: int, jobs: int) -> None:
    path = log_with_checkpoints(name, every)
    serial = replay_cli(path)
    code, out, err = replay_cli(path, "--jobs", str(jobs), "--executor", f"dask://{scheduler}")
    assert (code, out) == serial[:2]
    assert "checking the log in one process" not in err


def test_an_unreachable_scheduler_fails_in_one_line() -> None:
    path = log_with_checkpoints("stale-metrics.jsonl", 50)
    code, _, err = replay_cli(path, "--jobs", "2", "--executor", "dask://127.0.0.1:1")
    assert code == 2
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith("error: --executor dask://127.0.0.1:1: cannot reach the scheduler")
    )
