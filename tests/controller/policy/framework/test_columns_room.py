"""``FreeColumns.room`` answers the search's usual question with one comparison: a
request whose largest part (in ``ROOM_UNITS``) is below a node's room fits the node's
idle and future idle, CPU, memory and the scalar alike; and the room follows the node
when a statement changes it."""

from __future__ import annotations

import random

import pytest

from controller.policy.framework.columns import ROOM_UNITS, FreeColumns
from controller.policy.framework.session import Session
from projections.model import TaskInfo, TaskStatus
from tests.controller.policy.framework.scenario import GI, cluster, node, session, task


def random_session(seed: int) -> tuple[Session, list[TaskInfo]]:
    rng = random.Random(seed)
    nodes = [
        node(
            f"n{i:02d}",
            cpu=rng.choice([500, 1000, 1500.05, 4000]),
            memory=rng.choice([0.5, 1, 2]) * GI,
            pods=rng.choice([0, 1, 2, 3]),
        )
        for i in range(40)
    ]
    running = [
        task(
            f"r{i}",
            status=rng.choice([TaskStatus.RUNNING, TaskStatus.RELEASING]),
            node=rng.choice(nodes).name,
            cpu=rng.choice([100, 500, 999.95]),
            memory=rng.choice([0.25, 0.5]) * GI,
        )
        for i in range(60)
    ]
    pending = [
        task(f"p{i}", cpu=rng.choice([0, 100, 500, 1000]), memory=rng.choice([0.1, 0.5, 1]) * GI)
        for i in range(30)
    ]
    return session(cluster(nodes=nodes, tasks=running + pending)), pending


@pytest.mark.parametrize("seed", range(6))
def test_a_request_below_the_room_fits_idle_and_future(seed: int) -> None:
    ssn, pending = random_session(seed)
    view = ssn.view
    stmt = ssn.statement()
    rng = random.Random(seed)
    below = 0
    for t in pending:
        cols = view.columns()
        room = cols.room("pods")
        idle_pods, future_pods = cols.scalar("pods")
        req = t.init_resreq
        need = max(req.milli_cpu / ROOM_UNITS[0], req.memory / ROOM_UNITS[1], 1 / ROOM_UNITS[2])
        for i in range(len(view.node_list)):
            if need < room[i]:
                below += 1
                assert req.milli_cpu < cols.idle_cpu[i] and req.milli_cpu < cols.future_cpu[i]
                assert req.memory < cols.idle_mem[i] and req.memory < cols.future_mem[i]
                assert idle_pods[i] > 1 and future_pods[i] > 1
        assert room == FreeColumns(view.node_list).room("pods")  # follows the changes
        stmt.pipeline(ssn.tasks[t.key], rng.choice(view.node_list).name)
    assert below > 20


@pytest.mark.parametrize("seed", range(4))
def test_columns_built_at_once_equal_the_per_node_refresh(seed: int) -> None:
    # FreeColumns builds each column in one pass; refresh recomputes a node's entries
    ssn, pending = random_session(seed)
    view, stmt, rng = ssn.view, ssn.statement(), random.Random(seed)
    for t in pending[:20]:  # pipelined resources on some nodes
        stmt.pipeline(ssn.tasks[t.key], rng.choice(view.node_list).name)
    built, refreshed = FreeColumns(view.node_list), FreeColumns(view.node_list)
    for cols in (built, refreshed):  # the lazy columns too
        cols.room("pods")
        cols.room(None)
        cols.scalar("gpu")
    for i in range(len(view.node_list)):
        refreshed.refresh(i)
    assert vars(built) == vars(refreshed)
    assert any(r != b for r, b in zip(built.future_cpu, built.idle_cpu, strict=True))
