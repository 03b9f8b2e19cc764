"""The TDM eviction budget (spec §6.4, seed 000 §7.2) and the victim order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controller.policy.plugins.tdm.budget import (
    FORM_MAX_UNAVAILABLE,
    FORM_MIN_AVAILABLE,
    FORM_NONE,
    BudgetValueError,
    job_budget,
    order_victims,
    parse_int_or_percent,
)
from projections.model import JobInfo, Resource, TaskInfo, TaskStatus

R, P, S, F = TaskStatus.RUNNING, TaskStatus.PENDING, TaskStatus.SUCCEEDED, TaskStatus.FAILED
T0 = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)


def task(
    name: str,
    status: TaskStatus = R,
    *,
    priority: int = 1,
    started: datetime | None = T0,
    namespace: str = "ns",
) -> TaskInfo:
    return TaskInfo(
        uid=f"{namespace}-{name}",
        namespace=namespace,
        name=name,
        job="ns/j",
        status=status,
        resreq=Resource(),
        init_resreq=Resource(),
        priority=priority,
        start_time=started,
    )


def job(
    statuses: list[TaskStatus], *, min_available: str = "", max_unavailable: str = ""
) -> JobInfo:
    tasks = {f"ns/t{i}": task(f"t{i}", s) for i, s in enumerate(statuses)}
    return JobInfo(
        uid="j",
        namespace="ns",
        name="j",
        budget_min_available=min_available,
        budget_max_unavailable=max_unavailable,
        tasks=tasks,
    )


@pytest.mark.parametrize(
    ("value", "total", "expected"),
    [
        ("3", 10, 3),
        ("0", 10, 0),
        ("30%", 10, 3),
        ("25%", 10, 3),  # 2.5 rounds up
        ("1%", 10, 1),  # 0.1 rounds up
        ("60%", 10, 6),
        ("100%", 7, 7),
        ("0%", 7, 0),
        ("50%", 0, 0),
        ("2147483647", 1, 2147483647),
    ],
)
def test_parse_int_or_percent(value: str, total: int, expected: int) -> None:
    assert parse_int_or_percent(value, total) == expected


@pytest.mark.parametrize(
    "value",
    [
        "abc",
        "30.5%",
        " 30%",
        "30% ",
        "150%",
        "101%",
        "-1",
        "-10%",
        "+3",
        "",
        "%",
        "2147483648",
        "3.0",
        "0x10",
    ],
)
def test_parse_int_or_percent_rejects(value: str) -> None:
    with pytest.raises(BudgetValueError):
        parse_int_or_percent(value, 10)


TEN = [R] * 10


@pytest.mark.parametrize(
    ("statuses", "min_available", "max_unavailable", "form", "expected"),
    [
        # none: the default of one per job per round
        pytest.param(TEN, "", "", FORM_NONE, 1, id="none"),
        pytest.param([P, P], "", "", FORM_NONE, 1, id="none even without running"),
        # max-unavailable: max - (total - final - running)
        pytest.param(TEN, "", "3", FORM_MAX_UNAVAILABLE, 3, id="max int, all running"),
        pytest.param(
            [R] * 9 + [P],
            "",
            "30%",
            FORM_MAX_UNAVAILABLE,
            2,
            id="seed: 10 tasks, 30%, one unavailable -> 2",
        ),
        pytest.param([R] * 7 + [P] * 3, "", "3", FORM_MAX_UNAVAILABLE, 0, id="max reached"),
        pytest.param([R] * 6 + [P] * 4, "", "3", FORM_MAX_UNAVAILABLE, 0, id="max exceeded"),
        pytest.param(
            [R] * 8 + [S, F],
            "",
            "2",
            FORM_MAX_UNAVAILABLE,
            2,
            id="finished tasks do not count as unavailable",
        ),
        pytest.param(
            [R] * 8 + [S, P],
            "",
            "2",
            FORM_MAX_UNAVAILABLE,
            1,
            id="finished excluded, pending counted",
        ),
        pytest.param([R] * 3, "", "25%", FORM_MAX_UNAVAILABLE, 1, id="max percent rounds up"),
        pytest.param([R] * 3, "", "10", FORM_MAX_UNAVAILABLE, 10, id="max above total"),
        pytest.param([R] * 3, "", "0", FORM_MAX_UNAVAILABLE, 0, id="max zero"),
        # min-available: running - min, 0 below the minimum
        pytest.param([R] * 5, "3", "", FORM_MIN_AVAILABLE, 2, id="seed: 5 running, min 3 -> 2"),
        pytest.param(TEN, "60%", "", FORM_MIN_AVAILABLE, 4, id="min 60% of 10"),
        pytest.param(
            [R] * 3 + [P] * 2, "50%", "", FORM_MIN_AVAILABLE, 0, id="min percent rounds up (3 of 5)"
        ),
        pytest.param([R] * 3, "3", "", FORM_MIN_AVAILABLE, 0, id="running == min"),
        pytest.param(
            [R] * 2 + [P], "3", "", FORM_MIN_AVAILABLE, 0, id="running < min -> 0 (upstream: 1)"
        ),
        pytest.param([R] * 4, "0", "", FORM_MIN_AVAILABLE, 4, id="min zero"),
        # min-available wins when both are set (Volcano's JobInfo keeps only min)
        pytest.param(TEN, "8", "5", FORM_MIN_AVAILABLE, 2, id="min wins over max"),
    ],
)
def test_budget_forms(
    statuses: list[TaskStatus], min_available: str, max_unavailable: str, form: str, expected: int
) -> None:
    budget = job_budget(job(statuses, min_available=min_available, max_unavailable=max_unavailable))
    assert budget.form == form
    assert budget.max_evict == expected
    assert budget.error is None
    assert budget.total == len(statuses)
    assert budget.running == statuses.count(R)


@pytest.mark.parametrize("value", ["150%", "abc", "30.5%", " 30%", "-1"])
@pytest.mark.parametrize("key", ["min", "max"])
def test_invalid_budget_evicts_nothing_and_says_why(value: str, key: str) -> None:
    kwargs = {"min_available": value} if key == "min" else {"max_unavailable": value}
    budget = job_budget(job(TEN, **kwargs))
    assert budget.max_evict == 0
    assert budget.error is not None and repr(value) in budget.error
    evidence = budget.evidence()
    assert evidence["value"] == value and evidence["error"] == budget.error
    assert "limit" not in evidence


def test_budget_evidence() -> None:
    budget = job_budget(job([R] * 9 + [S], max_unavailable="30%"))
    assert budget.evidence() == {
        "form": "max-unavailable",
        "value": "30%",
        "limit": 3,
        "total": 10,
        "running": 9,
        "final": 1,
        "max_evict": 3,
    }


def test_victim_order() -> None:
    later = T0 + timedelta(minutes=5)
    tasks = [
        task("old-low", priority=1, started=T0),
        task("new-low", priority=1, started=later),
        task("high", priority=10, started=later),
        task("unknown-start", priority=1, started=None),
        task("b-same", priority=1, started=T0),
        task("a-same", priority=1, started=T0, namespace="ns"),
        task("neg", priority=-5, started=T0),
    ]
    assert [t.name for t in order_victims(tasks)] == [
        "neg",  # lowest priority first
        "unknown-start",  # no start time counts as the newest
        "new-low",  # most recently started
        "a-same",  # then by name
        "b-same",
        "old-low",
        "high",
    ]
    assert [t.name for t in order_victims(reversed(tasks))] == [
        t.name for t in order_victims(tasks)
    ]


def test_first_victim_is_the_head_of_order_victims() -> None:
    """``first_victim`` narrows key by key and ``order_victims`` sorts attribute by
    attribute; both must agree with the sort by ``victim_order_key`` everywhere."""
    import random
    from dataclasses import replace
    from datetime import UTC, datetime, timedelta

    from controller.policy.plugins.tdm.budget import first_victim, order_victims, victim_order_key
    from projections.model import Resource, TaskInfo, TaskStatus

    rng = random.Random(3)
    base = datetime(2026, 11, 21, tzinfo=UTC)
    for _ in range(500):
        tasks = []
        for i in range(rng.randint(1, 8)):
            started = rng.choice([None, base, base + timedelta(seconds=rng.randint(0, 3))])
            tasks.append(
                TaskInfo(
                    uid=rng.choice(["u1", "u2", "u3"]) + str(i),
                    namespace=rng.choice(["a", "b"]),
                    name=f"t{rng.randint(0, 3)}-{i}",
                    job="a/j",
                    status=TaskStatus.RUNNING,
                    resreq=Resource(),
                    init_resreq=Resource(),
                    priority=rng.choice([1, 1, 2]),
                    start_time=started,
                )
            )
        rng.shuffle(tasks)
        assert first_victim(tasks) is order_victims(tasks)[0]
        # and order_victims, stable sorts attribute by attribute, is the sort by the key
        # (ties in every field too: the input order)
        expected = sorted(tasks, key=victim_order_key)
        assert [id(t) for t in order_victims(tasks)] == [id(t) for t in expected]
        twins = tasks + [replace(t) for t in tasks]
        expected = sorted(twins, key=victim_order_key)
        assert [id(t) for t in order_victims(twins)] == [id(t) for t in expected]
