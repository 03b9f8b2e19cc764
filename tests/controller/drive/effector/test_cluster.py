"""The simulated cluster: each decision kind, its watch events, effects and failures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.drive.effector import (
    BASE_NAME_ANNOTATION,
    INCARNATION_ANNOTATION,
    NOTICE_ANNOTATION,
    SimulatedCluster,
)
from streams.events import Event, format_time, make_event
from streams.validation import validate
from tests.builders import build_node, build_pod

AT = datetime(2026, 11, 21, 21, 0, 1, tzinfo=UTC)
JSON = dict[str, Any]


def evict(pod: str = "web-0", *, uid: str | None = None, **extra: Any) -> Event:
    data = {
        "kind": "evict",
        "namespace": "default",
        "pod": pod,
        "uid": uid if uid is not None else f"default-{pod}",
        "node": "n1",
        "reason": "tdm-window-closed",
        "source": "tdm",
        "evidence": {"zone": "rz1"},
        **extra,
    }
    return make_event("decision.evict", AT, data, cause="trigger-1")


def bind(pod: str = "web-0", node: str = "n2") -> Event:
    data = {
        "kind": "bind",
        "namespace": "default",
        "pod": pod,
        "uid": f"default-{pod}",
        "node": node,
        "reason": "allocate",
        "source": "allocate",
        "evidence": {},
    }
    return make_event("decision.bind", AT, data, cause="trigger-1")


def taint(kind: str = "taint", node: str = "n1", value: str = "true") -> Event:
    data = {
        "kind": kind,
        "node": node,
        "taint": {"key": "tide.io/pressure", "value": value, "effect": "NoSchedule"},
        "reason": "eviction-taint",
        "source": "pressure",
        "evidence": {},
    }
    return make_event(f"decision.{kind}", AT, data, cause="metrics-1")


def pods(*raw: JSON) -> dict[str, JSON]:
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in raw}


NODES = {"n1": build_node("n1"), "n2": build_node("n2")}


def watches(events: list[Event]) -> list[tuple[datetime, str, str, str]]:
    out = []
    for e in events:
        if e.type == "k8s.watch":
            obj = e.data["object"]
            out.append((e.at, e.data["resource"], e.data["event"], obj["metadata"]["name"]))
    return out


def assert_valid(events: list[Event]) -> None:
    for e in events:
        validate(e.type, e.data)


# -- evict -----------------------------------------------------------------------------------


def test_evict_bare_pod_terminates_after_default_grace() -> None:
    pod = build_pod("default", "web-0", node="n1")
    decision = evict()
    now, later = SimulatedCluster().answer(decision, pods(pod), NODES)
    assert [e.type for e in now] == ["effect.applied", "k8s.watch"]
    effect = now[0]
    assert effect.cause == decision.id
    assert effect.data == {"decision": decision.id, "kind": "evict", "target": "default/web-0"}
    assert now[1].data["event"] == "MODIFIED"
    meta = now[1].data["object"]["metadata"]
    assert meta["deletionTimestamp"] == format_time(AT + timedelta(seconds=30))
    assert meta["deletionGracePeriodSeconds"] == 30
    assert watches(later) == [(AT + timedelta(seconds=30), "pods", "DELETED", "web-0")]
    assert all(e.cause == decision.id for e in now + later)
    assert "deletionTimestamp" not in pod["metadata"]  # the input is not modified
    assert_valid(now + later)


@pytest.mark.parametrize(("grace", "delay"), [(5, 5), (120, 120)])
def test_evict_uses_the_pods_grace_period(grace: int, delay: int) -> None:
    pod = build_pod("default", "web-0", node="n1", grace=grace)
    _, later = SimulatedCluster().answer(evict(), pods(pod), NODES)
    assert [e.at for e in later] == [AT + timedelta(seconds=delay)]


def test_evict_with_zero_grace_is_all_immediate() -> None:
    pod = build_pod("default", "web-0", node="n1", grace=0, owner_kind="ReplicaSet")
    now, later = SimulatedCluster().answer(evict(), pods(pod), NODES)
    assert later == []
    assert [w[2] for w in watches(now)] == ["MODIFIED", "DELETED", "ADDED"]


def test_grace_default_is_configurable() -> None:
    pod = build_pod("default", "web-0", node="n1")
    _, later = SimulatedCluster(grace_default=timedelta(seconds=3)).answer(evict(), pods(pod))
    assert [e.at for e in later] == [AT + timedelta(seconds=3)]


@pytest.mark.parametrize("kind", ["ReplicaSet", "Job"])
def test_controller_owned_pod_is_recreated_under_a_new_name(kind: str) -> None:
    pod = build_pod("default", "web-0", node="n1", owner_kind=kind, labels={"app": "web"})
    _, later = SimulatedCluster().answer(evict(), pods(pod), NODES)
    gone = AT + timedelta(seconds=30)
    (deleted, added) = later
    assert (deleted.data["event"], added.data["event"]) == ("DELETED", "ADDED")
    assert deleted.at == added.at == gone
    new = added.data["object"]
    meta = new["metadata"]
    assert meta["name"].startswith("web-0-") and len(meta["name"]) == len("web-0-") + 5
    assert meta["uid"] != pod["metadata"]["uid"]
    assert meta["creationTimestamp"] == format_time(gone)
    assert meta["ownerReferences"] == pod["metadata"]["ownerReferences"]
    assert meta["labels"] == {"app": "web"}
    assert meta["annotations"][INCARNATION_ANNOTATION] == "1"
    assert meta["annotations"][BASE_NAME_ANNOTATION] == "web-0"
    assert "deletionTimestamp" not in meta
    assert "nodeName" not in new["spec"]
    assert new["spec"]["containers"] == pod["spec"]["containers"]
    assert new["status"] == {"phase": "Pending"}
    validate(added.type, added.data)


def test_volcano_job_pod_is_recreated() -> None:
    pod = build_pod("default", "train-worker-0", node="n1")
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "name": "train",
            "uid": "vj",
            "controller": True,
        }
    ]
    _, later = SimulatedCluster().answer(evict("train-worker-0"), pods(pod), NODES)
    assert [w[2] for w in watches(later)] == ["DELETED", "ADDED"]


def test_statefulset_pod_keeps_its_name() -> None:
    pod = build_pod("default", "db-0", node="n1", owner_kind="StatefulSet")
    _, later = SimulatedCluster().answer(evict("db-0"), pods(pod), NODES)
    added = later[-1].data["object"]["metadata"]
    assert added["name"] == "db-0"
    assert added["uid"] != "default-db-0"
    assert BASE_NAME_ANNOTATION not in added["annotations"]


def test_uncontrolled_owner_and_daemon_kinds_are_not_recreated() -> None:
    pod = build_pod("default", "x", node="n1")
    pod["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": "u"}]
    _, later = SimulatedCluster().answer(evict("x"), pods(pod), NODES)
    assert [w[2] for w in watches(later)] == ["DELETED"]


def test_recreation_is_deterministic_and_generations_differ() -> None:
    pod = build_pod("default", "web-abcde", node="n1", owner_kind="ReplicaSet")
    pod["metadata"]["generateName"] = "web-"
    cluster = SimulatedCluster()
    _, first = cluster.answer(evict("web-abcde"), pods(pod), NODES)
    _, again = cluster.answer(evict("web-abcde"), pods(pod), NODES)
    assert first == again
    gen1 = first[-1].data["object"]
    assert gen1["metadata"]["name"].startswith("web-")
    assert len(gen1["metadata"]["name"]) == len("web-") + 5
    # the replacement, once running and evicted, gets a third distinct name
    name1 = gen1["metadata"]["name"]
    gen1["spec"]["nodeName"] = "n1"
    gen1["status"] = {"phase": "Running"}
    decision = evict(name1, uid=gen1["metadata"]["uid"])
    _, second = cluster.answer(decision, pods(gen1), NODES)
    gen2 = second[-1].data["object"]["metadata"]
    assert gen2["annotations"][INCARNATION_ANNOTATION] == "2"
    assert gen2["name"].startswith("web-") and gen2["name"] not in (name1, "web-abcde")
    assert len({name1, gen2["name"], "web-abcde"}) == 3
    assert gen2["uid"] != gen1["metadata"]["uid"]


def test_graceful_eviction_notice_then_eviction_at_evict_at() -> None:
    pod = build_pod("default", "web-0", node="n1", owner_kind="ReplicaSet")
    evict_at = AT + timedelta(minutes=2)
    decision = evict(notice_at=format_time(AT), evict_at=format_time(evict_at))
    now, later = SimulatedCluster().answer(decision, pods(pod), NODES)
    assert [e.type for e in now] == ["k8s.watch"]
    notice = now[0].data["object"]["metadata"]
    assert notice["annotations"][NOTICE_ANNOTATION] == format_time(evict_at)
    assert "deletionTimestamp" not in notice
    assert [e.type for e in later] == ["effect.applied", "k8s.watch", "k8s.watch", "k8s.watch"]
    assert later[0].at == evict_at
    gone = evict_at + timedelta(seconds=30)
    assert watches(later) == [
        (evict_at, "pods", "MODIFIED", "web-0"),
        (gone, "pods", "DELETED", "web-0"),
        (gone, "pods", "ADDED", later[-1].data["object"]["metadata"]["name"]),
    ]
    dying = later[1].data["object"]["metadata"]
    assert dying["deletionTimestamp"] == format_time(gone)
    assert dying["annotations"][NOTICE_ANNOTATION] == format_time(evict_at)
    assert NOTICE_ANNOTATION not in later[-1].data["object"]["metadata"]["annotations"]
    assert_valid(now + later)


@pytest.mark.parametrize("evict_at", [AT, AT - timedelta(seconds=1), None, "garbage"])
def test_evict_at_not_later_than_the_decision_evicts_now(evict_at: object) -> None:
    pod = build_pod("default", "web-0", node="n1")
    value = format_time(evict_at) if isinstance(evict_at, datetime) else evict_at
    now, _ = SimulatedCluster().answer(evict(evict_at=value), pods(pod), NODES)
    assert [e.type for e in now] == ["effect.applied", "k8s.watch"]
    assert "deletionTimestamp" in now[1].data["object"]["metadata"]


@pytest.mark.parametrize(
    ("pod_map", "decision", "error"),
    [
        pytest.param({}, evict(), "pod default/web-0 not found", id="not found"),
        pytest.param(
            pods(build_pod("default", "web-0", node="n1")),
            evict(uid="other"),
            "uid other is gone",
            id="another incarnation",
        ),
        pytest.param(
            pods(build_pod("default", "web-0", node="n1", deleting=AT)),
            evict(),
            "already terminating",
            id="already terminating",
        ),
    ],
)
def test_evict_failures(pod_map: dict[str, JSON], decision: Event, error: str) -> None:
    now, later = SimulatedCluster().answer(decision, pod_map, NODES)
    assert later == []
    (failed,) = now
    assert failed.type == "effect.failed"
    assert failed.cause == decision.id and failed.at == decision.at
    assert failed.data["decision"] == decision.id
    assert failed.data["target"] == "default/web-0"
    assert error in failed.data["error"]
    assert_valid(now)


# -- bind ------------------------------------------------------------------------------------


def test_bind_sets_node_then_runs_after_the_startup_delay() -> None:
    pod = build_pod("default", "web-0", phase="Pending")
    decision = bind()
    now, later = SimulatedCluster().answer(decision, pods(pod), NODES)
    assert [e.type for e in now] == ["effect.applied", "k8s.watch"]
    placed = now[1].data["object"]
    assert placed["spec"]["nodeName"] == "n2"
    assert placed["status"]["phase"] == "Pending"
    (running,) = later
    assert running.at == AT + timedelta(seconds=5)
    obj = running.data["object"]
    assert (obj["spec"]["nodeName"], obj["status"]["phase"]) == ("n2", "Running")
    assert obj["status"]["startTime"] == format_time(AT + timedelta(seconds=5))
    assert "nodeName" not in pod["spec"]
    assert_valid(now + later)


def test_startup_delay_is_configurable() -> None:
    pod = build_pod("default", "web-0", phase="Pending")
    sim = SimulatedCluster(startup_delay=timedelta(seconds=12))
    _, later = sim.answer(bind(), pods(pod), NODES)
    assert later[0].at == AT + timedelta(seconds=12)


@pytest.mark.parametrize(
    ("pod", "node", "error"),
    [
        pytest.param(None, "n2", "not found", id="pod not found"),
        pytest.param(
            build_pod("default", "web-0", phase="Pending"),
            "n9",
            "node 'n9' not found",
            id="node not found",
        ),
        pytest.param(
            build_pod("default", "web-0", node="n1"),
            "n2",
            "already bound to n1",
            id="already bound",
        ),
        pytest.param(
            build_pod("default", "web-0", phase="Pending", deleting=AT),
            "n2",
            "terminating",
            id="terminating",
        ),
    ],
)
def test_bind_failures(pod: JSON | None, node: str, error: str) -> None:
    pod_map = pods(pod) if pod is not None else {}
    now, later = SimulatedCluster().answer(bind(node=node), pod_map, NODES)
    assert later == []
    assert [e.type for e in now] == ["effect.failed"]
    assert error in now[0].data["error"]


# -- taint / untaint -------------------------------------------------------------------------


def test_taint_then_untaint() -> None:
    node = build_node("n1", taints=[{"key": "other", "effect": "NoExecute"}])
    decision = taint()
    now, later = SimulatedCluster().answer(decision, {}, {"n1": node})
    assert later == []
    assert [e.type for e in now] == ["effect.applied", "k8s.watch"]
    assert now[0].data == {"decision": decision.id, "kind": "taint", "target": "n1"}
    tainted = now[1].data["object"]
    assert (now[1].data["resource"], now[1].data["event"]) == ("nodes", "MODIFIED")
    assert tainted["spec"]["taints"] == [
        {"key": "other", "effect": "NoExecute"},
        {"effect": "NoSchedule", "key": "tide.io/pressure", "value": "true"},
    ]
    # tainting again replaces (same key and effect), it does not duplicate
    now2, _ = SimulatedCluster().answer(taint(value="again"), {}, {"n1": tainted})
    assert [t.get("value") for t in now2[1].data["object"]["spec"]["taints"]] == [None, "again"]
    now3, _ = SimulatedCluster().answer(taint("untaint"), {}, {"n1": tainted})
    assert now3[1].data["object"]["spec"]["taints"] == [{"key": "other", "effect": "NoExecute"}]
    assert "taints" not in node["spec"] or len(node["spec"]["taints"]) == 1
    assert_valid(now + now2 + now3)


def test_untaint_of_the_last_taint_drops_the_field() -> None:
    node = build_node("n1", taints=[{"key": "tide.io/pressure", "effect": "NoSchedule"}])
    now, _ = SimulatedCluster().answer(taint("untaint"), {}, {"n1": node})
    assert "taints" not in now[1].data["object"]["spec"]


def test_taint_unknown_node_fails() -> None:
    now, later = SimulatedCluster().answer(taint(node="n9"), {}, NODES)
    assert later == []
    assert [e.type for e in now] == ["effect.failed"]
    assert now[0].data["target"] == "n9" and "not found" in now[0].data["error"]


def test_other_events_are_ignored() -> None:
    trigger = make_event("trigger.fired", AT, {"trigger": "t", "kind": "tick", "scheduled": "x"})
    assert SimulatedCluster().answer(trigger, {}, {}) == ([], [])
