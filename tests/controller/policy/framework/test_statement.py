"""Statements stage on a copy-on-write view; commit emits decisions; discard undoes (spec §3)."""

from __future__ import annotations

from typing import cast

import pytest

from controller.policy.framework.errors import StatementError
from controller.policy.framework.session import Session
from controller.policy.framework.view import DEFAULT_QUEUE
from projections.model import NodeInfo, QueueInfo, Resource, TaskInfo, TaskStatus
from tests.builders import T0
from tests.controller.policy.framework.scenario import (
    GI,
    FakeCluster,
    cluster,
    job,
    node,
    session,
    task,
)

RUNNING, PENDING = TaskStatus.RUNNING, TaskStatus.PENDING


class Recorder:
    """A plugin recording its allocate / deallocate events."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, TaskStatus]] = []

    def on_session_open(self, ssn: Session) -> None:
        ssn.add_event_handler(
            self.name,
            allocate=lambda t: self.seen.append(("allocate", t.name, t.status)),
            deallocate=lambda t: self.seen.append(("deallocate", t.name, t.status)),
        )

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def snapshot(n: NodeInfo) -> tuple[Resource, Resource, Resource, Resource, list[str]]:
    return (
        n.idle.clone(),
        n.used.clone(),
        n.releasing.clone(),
        n.pipelined.clone(),
        sorted(n.tasks),
    )


Fixture = tuple[Session, Recorder, FakeCluster]


@pytest.fixture
def fixture() -> Fixture:
    c = cluster(
        nodes=[node("n1", cpu=4000), node("n2", cpu=4000)],
        tasks=[task("run", status=RUNNING, node="n1", cpu=2000), task("pend", cpu=1000)],
    )
    rec = Recorder()
    return session(c, (), [rec]), rec, c


def test_allocate_stages_on_clones_and_commit_emits_a_bind(fixture: Fixture) -> None:
    ssn, rec, c = fixture
    before = snapshot(c.nodes["n2"])
    stmt = ssn.statement()
    stmt.allocate(ssn.tasks["ns/pend"], "n2", source="allocate", evidence={"score": 1.0})
    n2 = ssn.nodes["n2"]
    assert n2.idle.milli_cpu == 3000 and "ns/pend" in n2.tasks
    assert ssn.tasks["ns/pend"].status == TaskStatus.ALLOCATED
    assert ssn.jobs["ns/pend"].tasks["ns/pend"].node_name == "n2"
    assert rec.seen == [("allocate", "pend", TaskStatus.ALLOCATED)]
    # the projection is untouched
    assert snapshot(c.nodes["n2"]) == before
    assert c.tasks["ns/pend"].status == PENDING
    assert c.jobs["ns/pend"].tasks["ns/pend"].status == PENDING
    (event,) = stmt.commit()
    assert event.type == "decision.bind"
    assert event.at == T0 and event.cause == ssn.trigger.id
    assert event.data == {
        "kind": "bind",
        "namespace": "ns",
        "pod": "pend",
        "uid": "ns-pend",
        "node": "n2",
        "reason": "allocate",
        "source": "allocate",
        "evidence": {"score": 1.0},
    }
    assert ssn.decisions == [event]
    assert len(stmt) == 0


def test_evict_marks_releasing_and_grows_future_idle(fixture: Fixture) -> None:
    ssn, rec, c = fixture
    stmt = ssn.statement()
    stmt.evict(ssn.tasks["ns/run"], "tdm-window-closed", source="tdm", evidence={"zone": "z"})
    n1 = ssn.nodes["n1"]
    assert n1.releasing.milli_cpu == 2000 and n1.idle.milli_cpu == 2000
    assert n1.future_idle().milli_cpu == 4000
    assert ssn.tasks["ns/run"].status == TaskStatus.RELEASING
    assert rec.seen == [("deallocate", "run", TaskStatus.RELEASING)]
    assert c.nodes["n1"].releasing.milli_cpu == 0
    with pytest.raises(StatementError):
        stmt.evict(ssn.tasks["ns/run"], "again", source="x")
    (event,) = stmt.commit()
    assert event.type == "decision.evict"
    assert (event.data["pod"], event.data["node"], event.data["reason"], event.data["source"]) == (
        "run",
        "n1",
        "tdm-window-closed",
        "tdm",
    )


def test_pipeline_reserves_and_commits_nothing(fixture: Fixture) -> None:
    ssn, _, _ = fixture
    stmt = ssn.statement()
    stmt.pipeline(ssn.tasks["ns/pend"], "n1")
    assert ssn.nodes["n1"].pipelined.milli_cpu == 1000
    assert ssn.tasks["ns/pend"].status == TaskStatus.PIPELINED
    assert stmt.commit() == []
    assert ssn.tasks["ns/pend"].status == TaskStatus.PIPELINED  # stays staged


def test_discard_undoes_in_reverse_order(fixture: Fixture) -> None:
    ssn, rec, _ = fixture
    n1_before, n2_before = snapshot(ssn.nodes["n1"]), snapshot(ssn.nodes["n2"])
    stmt = ssn.statement()
    stmt.evict(ssn.tasks["ns/run"], "r", source="s")
    stmt.pipeline(ssn.tasks["ns/pend"], "n1")
    stmt.discard()
    assert snapshot(ssn.nodes["n1"]) == n1_before and snapshot(ssn.nodes["n2"]) == n2_before
    assert ssn.tasks["ns/run"].status == RUNNING and ssn.tasks["ns/pend"].status == PENDING
    assert ssn.tasks["ns/pend"].node_name == ""
    assert [kind for kind, *_ in rec.seen] == ["deallocate", "allocate", "deallocate", "allocate"]
    assert rec.seen[2] == ("deallocate", "pend", TaskStatus.PIPELINED)
    assert stmt.commit() == []


def test_a_discarded_bound_victim_keeps_its_status() -> None:
    c = cluster(nodes=[node("n1")], tasks=[task("b", status=TaskStatus.BOUND, node="n1")])
    ssn = session(c)
    stmt = ssn.statement()
    stmt.evict(ssn.tasks["ns/b"], "r", source="s")
    stmt.discard()
    assert ssn.tasks["ns/b"].status == TaskStatus.BOUND  # Volcano would say Running


def test_failed_operations_change_nothing(fixture: Fixture) -> None:
    ssn, rec, _ = fixture
    stmt = ssn.statement()
    with pytest.raises(StatementError):
        stmt.allocate(ssn.tasks["ns/pend"], "nowhere", source="allocate")
    orphan = task("orphan", job="ns/missing")
    with pytest.raises(StatementError):
        stmt.allocate(orphan, "n1", source="allocate")
    assert len(stmt) == 0 and rec.seen == []
    assert ssn.tasks["ns/pend"].status == PENDING


def test_merge_moves_operations() -> None:
    c = cluster(nodes=[node("n1")], tasks=[task("a"), task("b")])
    ssn = session(c)
    one, two = ssn.statement(), ssn.statement()
    one.allocate(ssn.tasks["ns/a"], "n1", source="x")
    two.allocate(ssn.tasks["ns/b"], "n1", source="x")
    one.merge(two)
    assert len(one) == 2 and len(two) == 0
    assert [e.data["pod"] for e in one.commit()] == ["a", "b"]


# -- the view ------------------------------------------------------------------------


def test_view_holds_ready_nodes_sorted_and_revocable_subset() -> None:
    c = cluster(nodes=[node("z"), node("a", zone="rz1"), node("m", ready=False), node("b")])
    ssn = session(c)
    assert list(ssn.nodes) == ["a", "b", "z"]
    assert list(ssn.revocable_nodes) == ["a"]
    assert "m" not in ssn.nodes and ssn.nodes.get("m") is None
    assert ssn.revocable_nodes["a"] is ssn.nodes["a"] is c.nodes["a"]  # no copy until written


def test_view_jobs_need_a_podgroup_and_an_existing_queue() -> None:
    placeholder = job("ns/ph")
    placeholder.placeholder = True
    c = cluster(
        jobs=[
            job("ns/b"),
            job("ns/a"),
            job("ns/lost", queue="gone"),
            placeholder,
            job("ns/q", queue="q1"),
        ],
        queues=[QueueInfo("q1")],
    )
    ssn = session(c)
    assert list(ssn.jobs) == ["ns/a", "ns/b", "ns/q"]
    assert "ns/lost" not in ssn.jobs and "ns/ph" not in ssn.jobs
    assert list(ssn.queues) == [DEFAULT_QUEUE, "q1"]  # default synthesised when absent


def test_a_clone_is_made_once_and_looked_up_through_the_view() -> None:
    c = cluster(nodes=[node("n1", cpu=4000)], tasks=[task("a"), task("b")])
    ssn = session(c)
    stmt = ssn.statement()
    stmt.allocate(ssn.tasks["ns/a"], "n1", source="x")
    first = ssn.nodes["n1"]
    stmt.allocate(ssn.tasks["ns/b"], "n1", source="x")
    assert ssn.nodes["n1"] is first and first is not c.nodes["n1"]
    assert first.idle.milli_cpu == 2000 and c.nodes["n1"].idle.milli_cpu == 4000
    assert first.idle.memory == 30 * GI


def test_total_resource_sums_ready_nodes() -> None:
    c = cluster(nodes=[node("a", cpu=1000), node("b", cpu=2000), node("c", ready=False)])
    assert session(c).total_resource().milli_cpu == 3000


def test_tasks_keep_their_identity_until_changed() -> None:
    t: TaskInfo = task("a")
    c = cluster(nodes=[node("n1")], tasks=[t])
    ssn = session(c)
    assert ssn.tasks["ns/a"] is t
    assert ssn.view.pending_tasks() == [t]


# -- DecisionEncoder: the same events as make_event, ids byte for byte ---------------------


def test_decision_encoder_builds_the_events_make_event_builds() -> None:
    from datetime import UTC, timedelta, timezone

    from controller.policy.framework.statement import DecisionEncoder
    from streams.events import JSON, make_event
    from streams.payloads import PodDecisionPayload

    # any JSON object: the bind below has no reason or source, which make_event accepts too
    payloads: list[JSON] = [
        {
            "kind": "evict",
            "namespace": "ns",
            "pod": "p-1",
            "uid": "u-1",
            "node": "n1",
            "reason": "tdm-window-closed",
            "source": "tdm",
            "evidence": {
                "zone": "rz1",
                "budget": {"max_evict": 1, "form": "none", "limit": None},
                "order": {"position": 1, "by": 'priority asc, ünïcode "quoted" \\ </>'},
                "scores": [1.5, 0.0, -2, 1e300],
                "nested": {"b": {"z": 1, "a": 2}, "a": []},
            },
        },
        {"kind": "bind", "namespace": "x", "pod": "y", "uid": "", "node": "n", "evidence": {}},
    ]
    whens = [T0, T0 + timedelta(microseconds=7), T0.astimezone(timezone(timedelta(hours=8)))]
    for when in whens:
        for cause in ("trigger-id", None):
            encode = DecisionEncoder(when, cause)
            for data in payloads:
                for type_ in ("decision.evict", "decision.bind"):
                    got = encode(type_, cast(PodDecisionPayload, data))
                    want = make_event(type_, when, data, cause=cause)
                    assert got == want
                    assert got.id == want.id
                    assert got.at.tzinfo is UTC
    with pytest.raises(ValueError, match="unknown event type"):
        DecisionEncoder(T0, None)("decision.nope", cast(PodDecisionPayload, {}))


def test_commit_ids_equal_make_event_ids(fixture: Fixture) -> None:
    from streams.events import make_event

    ssn, _, _ = fixture
    stmt = ssn.statement()
    stmt.evict(ssn.tasks["ns/run"], "why", source="test", evidence={"k": [1, "v"]})
    stmt.allocate(ssn.tasks["ns/pend"], "n2", source="allocate", evidence={"node": "n2"})
    for event in stmt.commit():
        assert event == make_event(event.type, ssn.now, event.data, cause=ssn.trigger.id)
