"""The conformance plugin (spec §5.3): never evict kube-system or critical pods."""

from __future__ import annotations

from controller.policy.framework import points as p
from controller.policy.framework.points import Vote
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import conformance
from projections.model import TaskStatus
from tests.controller.policy.framework.scenario import cluster, ctx, node, session, task, tiers

RUNNING = TaskStatus.RUNNING


def test_critical_pods_are_dropped() -> None:
    plain = task("web", status=RUNNING)
    system = task("dns", ns="kube-system", status=RUNNING)
    cluster_critical = task("a", status=RUNNING, priority_class="system-cluster-critical")
    node_critical = task("b", status=RUNNING, priority_class="system-node-critical")
    other_class = task("c", status=RUNNING, priority_class="high")
    victims, vote = conformance.evictable(
        task("p"), [plain, system, cluster_critical, node_critical, other_class]
    )
    assert [v.name for v in victims] == ["web", "c"] and vote == Vote.PERMIT


def test_registered_for_preemptable_and_reclaimable() -> None:
    c = cluster(
        nodes=[node("n1")],
        tasks=[
            task("web", status=RUNNING, node="n1"),
            task("dns", ns="kube-system", status=RUNNING, node="n1"),
        ],
    )
    ssn = session(
        c,
        tiers([PluginConf.of("conformance", p.PREEMPTABLE, p.RECLAIMABLE)]),
        [conformance.build(None, ctx())],
    )
    preemptees = [ssn.tasks["ns/web"], ssn.tasks["kube-system/dns"]]
    assert [t.name for t in ssn.preemptable(task("p"), preemptees)] == ["web"]
    assert [t.name for t in ssn.reclaimable(task("p"), preemptees)] == ["web"]
