"""The preemptor's nomination across ticks: on the log, folded, honoured by allocate,
released on bind / delete / node loss; end to end in the simulated cluster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.policy.engine import run_cycle
from controller.policy.loader import load_config
from controller.simulate.runner import Simulation
from controller.simulate.scenario import load_scenario
from projections.nominations import Nominations
from projections.world import World
from replay.verify import replay
from streams.events import Event, make_event
from tests.builders import at, build_node, build_pod, watch
from tests.controller.policy.framework.scenario import binds, trigger, world_of

EXAMPLES = Path(__file__).resolve().parents[5] / "examples"
CONFIG: dict[str, Any] = yaml.safe_load((EXAMPLES / "preempt-config.yaml").read_text())
TAINT = {"key": "team", "value": "infra", "effect": "NoSchedule"}


def run_example() -> Simulation:
    events, _, until = load_scenario(EXAMPLES / "preempt-full-cluster.yaml")
    sim = Simulation(load_config(CONFIG))
    sim.run(events, until=until)
    return sim


def test_full_cluster_victims_evicted_preemptor_nominated_then_bound_there() -> None:
    sim = run_example()
    evictions = [d for d in sim.result.decisions if d.type == "decision.evict"]
    assert sorted(d.data["pod"] for d in evictions) == ["batch-2", "batch-3"]
    for d in evictions:
        assert d.data["reason"] == "preempt" and d.data["source"] == "preempt"
        ev = d.data["evidence"]
        assert ev["preemptor"] == "default/urgent-0" and ev["nominated"] == "n1"
        assert ev["phase"] == "inter-job" and ev["mode"] == "normal"
        assert ev["priority"] == 1000
    nominated = [
        e
        for e in sim.log.events
        if e.type == "k8s.watch"
        and e.data["object"]["metadata"]["name"] == "urgent-0"
        and e.data["object"]["status"].get("nominatedNodeName") == "n1"
    ]
    assert nominated and nominated[0].cause in {d.id for d in evictions}
    deleted = max(
        e.at for e in sim.log.events if e.type == "k8s.watch" and e.data["event"] == "DELETED"
    )
    bound = {
        d.data["pod"]: (d.data["node"], d.at)
        for d in sim.result.decisions
        if d.type == "decision.bind"
    }
    assert bound == {"urgent-0": ("n1", deleted)}  # "late" never takes the room
    assert sim.world.nominations.nodes == {}


def test_the_preempt_log_replays_identically() -> None:
    sim = run_example()
    report = replay(sim.log.events)
    assert report.ok, [d.describe() for d in report.differences]
    assert report.decisions == len(sim.result.decisions)


def _cluster(*, nominate: bool) -> World:
    """Victims gone, the preemptor still Pending; a pod of another queue (served first)
    wants 1 of the 2 free cpus."""
    urgent = build_pod("default", "urgent", phase="Pending", cpu="2", priority=1000)
    late = build_pod(
        "default",
        "late",
        phase="Pending",
        cpu="1",
        priority=10,
        annotations={"scheduling.volcano.sh/queue-name": "other"},
    )
    events = [
        watch("queues", {"metadata": {"name": "other", "uid": "q-other"}, "spec": {"weight": 1}}),
        watch("nodes", build_node("n1", cpu="4", memory="16Gi")),
        watch("nodes", build_node("n2", cpu="4", memory="16Gi", taints=[TAINT])),
        watch("pods", build_pod("default", "b-0", node="n1", cpu="1", priority=10)),
        watch("pods", build_pod("default", "b-1", node="n1", cpu="1", priority=10)),
        watch("pods", urgent),
        watch("pods", late),
    ]
    if nominate:
        events.append(_evict("b-2", "default/urgent", "n1"))
    return world_of(events)


def _evict(pod: str, preemptor: str, node: str, uid: str = "default-urgent") -> Event:
    data = {
        "kind": "evict",
        "namespace": "default",
        "pod": pod,
        "uid": f"default-{pod}",
        "node": node,
        "reason": "preempt",
        "source": "preempt",
        "evidence": {"preemptor": preemptor, "preemptor_uid": uid, "nominated": node},
    }
    return make_event("decision.evict", at(0), data)


@pytest.mark.parametrize(
    ("nominate", "expect"),
    [(True, {"default/urgent": "n1"}), (False, {"default/late": "n1"})],
    ids=["nominated-room-is-held", "without-nomination-the-other-queue-takes-it"],
)
def test_allocate_honours_the_nomination(nominate: bool, expect: dict[str, str]) -> None:
    world = _cluster(nominate=nominate)
    assert binds(run_cycle(world, trigger(at(1)), load_config(CONFIG))) == expect


def _watch_pod(name: str, event: str, *, uid: str = "", node: str = "") -> Event:
    pod = build_pod("default", name, phase="Pending", node=node)
    if uid:
        pod["metadata"]["uid"] = uid
    return watch("pods", pod, event=event)


@pytest.mark.parametrize(
    ("then", "kept"),
    [
        (_watch_pod("urgent", "MODIFIED"), True),
        (_watch_pod("urgent", "MODIFIED", node="n1"), False),
        (_watch_pod("urgent", "DELETED"), False),
        (_watch_pod("urgent", "ADDED", uid="another"), False),
        (watch("nodes", build_node("n1"), event="DELETED"), False),
        (watch("nodes", build_node("n2"), event="DELETED"), True),
        (
            make_event(
                "decision.bind",
                at(1),
                {"kind": "bind", "namespace": "default", "pod": "urgent", "node": "n1"},
            ),
            False,
        ),
        (_evict("other", "default/urgent", "n3"), True),
    ],
    ids=[
        "pod-update",
        "pod-bound",
        "pod-deleted",
        "pod-replaced",
        "node-deleted",
        "other-node-deleted",
        "bind-decision",
        "renominated",
    ],
)
def test_nomination_release(then: Event, kept: bool) -> None:
    noms = Nominations()
    noms.apply(_evict("b-2", "default/urgent", "n1"))
    noms.apply(then)
    assert ("default/urgent" in noms.nodes) is kept


def test_nominations_dump_and_load() -> None:
    noms = Nominations()
    noms.apply(_evict("b-2", "default/urgent", "n1").with_offset(7))
    copy = Nominations()
    copy.load(noms.dump())
    assert (copy.nodes, copy.uids, copy.position) == (
        {"default/urgent": "n1"},
        {"default/urgent": "default-urgent"},
        8,
    )
