"""The simulated cluster keeps its own API-server state, folded from the watch records it
observes (moved here from the cluster projection, which keeps no raw objects)."""

from __future__ import annotations

from controller.drive.effector import SimulatedCluster
from tests.builders import build_node, build_pod, watch


def test_raw_objects_are_kept_trimmed_and_copied() -> None:
    raw = build_pod("ns", "a", node="n1")
    raw["metadata"]["managedFields"] = [{"manager": "kubelet"}]
    sim = SimulatedCluster()
    for record in (watch("nodes", build_node("n1")), watch("pods", raw)):
        sim.observe(record)
    pods, nodes = sim.state.pods, sim.state.nodes
    kept = pods["ns/a"]
    assert "managedFields" not in kept["metadata"]
    assert kept["spec"] == raw["spec"]
    kept["spec"]["nodeName"] = "changed"
    assert pods["ns/a"]["spec"]["nodeName"] == "n1"
    assert nodes["n1"]["metadata"]["name"] == "n1"
    sim.observe(watch("pods", raw, event="DELETED"))
    assert "ns/a" not in pods


def test_deleted_nodes_are_gone_and_late_deletes_of_old_pods_are_ignored() -> None:
    sim = SimulatedCluster()
    node = build_node("n1")
    sim.observe(watch("nodes", node))
    sim.observe(watch("nodes", node, event="DELETED"))
    assert "n1" not in sim.state.nodes
    old = build_pod("ns", "a")
    new = build_pod("ns", "a")
    new["metadata"]["uid"] = "another"
    sim.observe(watch("pods", new))
    sim.observe(watch("pods", old, event="DELETED"))
    assert sim.state.pods["ns/a"]["metadata"]["uid"] == "another"


def test_records_that_are_not_watch_events_or_not_objects_are_ignored() -> None:
    sim = SimulatedCluster()
    sim.observe(watch("queues", {"metadata": {"name": "q"}}))
    sim.observe(watch("pods", {"metadata": {}}))
    sim.observe(watch("pods", {"metadata": {"name": "x"}}, event="BOOKMARK"))
    assert len(sim.state.pods) == 0 and len(sim.state.nodes) == 0
