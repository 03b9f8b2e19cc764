"""The session's disruption budgets: allowances counted against the evictions the session
staged, the victims plugins took and a dry run's trial, each pod once."""

from __future__ import annotations

from typing import Any

import pytest

from controller.policy.framework.session import Session
from projections.model import TaskStatus
from projections.pdb import PDBState
from tests.builders import watch
from tests.controller.policy.framework.scenario import FakeWorld, cluster, node, session, task

WEB = {"matchLabels": {"app": "web"}}


def budgets(*specs: dict[str, Any]) -> PDBState:
    state = PDBState()
    for i, spec in enumerate(specs):
        obj = {"metadata": {"namespace": "ns", "name": f"b{i}"}, "spec": spec}
        state.apply(watch("poddisruptionbudgets", obj).with_offset(i))
    return state


def open_with(*specs: dict[str, Any], pending: int = 0) -> Session:
    tasks = []
    for i in range(4):
        t = task(f"w-{i}", status=TaskStatus.RUNNING, node="n1")
        t.labels = {"app": "web"}
        tasks.append(t)
    for i in range(pending):
        t = task(f"new-{i}")
        t.labels = {"app": "web"}
        tasks.append(t)
    return session(FakeWorld(cluster([node("n1")], tasks), pdbs=budgets(*specs)))


@pytest.mark.parametrize(
    ("spec", "pending", "allowed"),
    [
        pytest.param({"selector": WEB, "minAvailable": 3}, 0, 1, id="min-int"),
        pytest.param({"selector": WEB, "minAvailable": "50%"}, 0, 2, id="min-percent"),
        pytest.param({"selector": WEB, "maxUnavailable": 1}, 0, 1, id="max-int"),
        pytest.param({"selector": WEB, "maxUnavailable": "25%"}, 0, 1, id="max-percent"),
        # a Pending pod counts as expected but not healthy
        pytest.param({"selector": WEB, "maxUnavailable": 1}, 1, 0, id="pending-is-unavailable"),
        pytest.param({"selector": {"matchLabels": {"app": "db"}}}, 0, None, id="not-selected"),
    ],
)
def test_allowance_at_session_start(
    spec: dict[str, Any], pending: int, allowed: int | None
) -> None:
    ssn = open_with(spec, pending=pending)
    disruptions = ssn.disruptions
    w0 = ssn.tasks["ns/w-0"]
    if allowed is None:
        assert disruptions.covering(w0) == ()
        assert disruptions.blocking(w0) is None
        return
    assert disruptions.allowance("ns/b0") == allowed
    assert (disruptions.blocking(w0) is None) == (allowed > 0)


def test_staged_evictions_taken_victims_and_trials_count_once() -> None:
    ssn = open_with({"selector": WEB, "maxUnavailable": 2})
    disruptions = ssn.disruptions
    w = [ssn.tasks[f"ns/w-{i}"] for i in range(4)]
    stmt = ssn.statement()
    stmt.evict(w[0], "preempt", source="test")
    assert disruptions.allowance("ns/b0") == 1
    assert disruptions.blocking(ssn.tasks["ns/w-0"]) is None  # already chosen: not twice
    trial = disruptions.trial()
    assert trial.take(w[1]) is None
    assert trial.take(w[2]) == "ns/b0"
    assert disruptions.allowance("ns/b0") == 1  # a trial is never kept
    disruptions.take(w[1])
    disruptions.take(w[1])
    assert disruptions.allowance("ns/b0") == 0
    assert disruptions.blocking(w[2]) == "ns/b0"
    stmt.discard()
    assert disruptions.allowance("ns/b0") == 1


def test_pick_passes_over_held_pods_and_names_them() -> None:
    ssn = open_with(
        {"selector": WEB, "maxUnavailable": 3},
        {
            "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
            "minAvailable": 3,
        },
    )
    w = [ssn.tasks[f"ns/w-{i}"] for i in range(4)]
    chosen, held = ssn.disruptions.pick(w, 3)
    assert [t.name for t, _ in chosen] == ["w-0"]
    assert chosen[0][1] == [{"budget": "ns/b0", "allowed": 3}, {"budget": "ns/b1", "allowed": 1}]
    assert held == [{"pod": f"ns/w-{i}", "budget": "ns/b1"} for i in (1, 2, 3)]
