"""Gang counting helpers (spec §1.4) and Volcano's ``NeedContinueAllocating``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.policy.framework import jobs as j
from projections.model import JobInfo, TaskStatus
from tests.controller.policy.framework.scenario import job, task

S = TaskStatus


def make(
    min_available: int, tasks: list[tuple[str, TaskStatus]], task_min: dict[str, int] | None = None
) -> JobInfo:
    out = job("ns/g", min_available=min_available, task_min=task_min)
    for i, (role, status) in enumerate(tasks):
        t = task(
            f"g-{i}", job="ns/g", role=role, status=status, node="" if status == S.PENDING else "n1"
        )
        out.tasks[t.key] = t
    return out


def test_counts() -> None:
    g = make(
        3,
        [
            ("", S.RUNNING),
            ("", S.ALLOCATED),
            ("", S.PIPELINED),
            ("", S.PENDING),
            ("", S.SUCCEEDED),
            ("", S.FAILED),
        ],
    )
    assert j.ready_task_num(g) == 3 and j.waiting_task_num(g) == 1
    assert j.valid_task_num(g) == 5
    assert j.is_ready(g) and j.is_pipelined(g) and not j.is_starving(g)


@pytest.mark.parametrize(
    ("g", "failed", "expected"),
    [
        (make(2, [("", S.PENDING), ("", S.PENDING)]), {""}, False),  # all must run
        (make(1, [("", S.PENDING), ("", S.PENDING)]), {""}, True),
        # min below the roles' sum: ready + pending of roles that did not fail
        (
            make(
                2,
                [("ps", S.RUNNING), ("worker", S.PENDING), ("worker", S.PENDING)],
                {"ps": 1, "worker": 2},
            ),
            {"worker"},
            False,
        ),
        (
            make(
                2,
                [("ps", S.PENDING), ("worker", S.RUNNING), ("worker", S.PENDING)],
                {"ps": 1, "worker": 2},
            ),
            {"worker"},
            True,
        ),
        # per-role minimums: a failed role below its minimum stops allocation
        (
            make(
                3,
                [
                    ("ps", S.RUNNING),
                    ("worker", S.PENDING),
                    ("worker", S.PENDING),
                    ("worker", S.PENDING),
                ],
                {"ps": 1, "worker": 2},
            ),
            {"worker"},
            False,
        ),
        (
            make(
                3,
                [
                    ("ps", S.PENDING),
                    ("worker", S.RUNNING),
                    ("worker", S.RUNNING),
                    ("worker", S.PENDING),
                ],
                {"ps": 1, "worker": 2},
            ),
            {"worker"},
            True,
        ),
    ],
)
def test_need_continue_allocating(g: JobInfo, failed: set[str], expected: bool) -> None:
    assert j.need_continue_allocating(g, failed) is expected


@given(
    st.integers(min_value=-1, max_value=8),
    st.lists(st.tuples(st.sampled_from(list(TaskStatus)), st.booleans()), max_size=12),
)
def test_is_ready_stops_early_but_counts_as_the_sums(
    min_available: int, tasks: list[tuple[TaskStatus, bool]]
) -> None:
    g = make(min_available, [("", status) for status, _ in tasks])
    for t, (_, best_effort) in zip(g.tasks.values(), tasks, strict=True):
        t.best_effort = best_effort
    sums = j.ready_task_num(g) + j.pending_best_effort_num(g) >= g.min_available
    assert j.is_ready(g) == sums


@given(
    st.integers(min_value=-1, max_value=8),
    st.lists(st.sampled_from(list(TaskStatus)), max_size=12),
)
def test_valid_at_least_stops_early_but_counts_as_valid_task_num(
    need: int, statuses: list[TaskStatus]
) -> None:
    g = make(0, [("", status) for status in statuses])
    assert j.valid_at_least(g, need) == (j.valid_task_num(g) >= need)
