"""The predicates plugin's required inter-pod (anti-)affinity with topology keys other than the
hostname (controller/policy/plugins/predicates/podaffinity.py): a zone or custom-label domain spans
nodes, the
answer follows the session's view (statements, evictions), and the memo key is dropped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.policy.framework import points as p
from controller.policy.framework.points import FitError, FitStatus
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import predicates
from projections.model import TaskInfo, TaskStatus
from tests.controller.policy.framework.scenario import cluster, ctx, node, session, task, tiers

ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"
HOST = "kubernetes.io/hostname"
UNRESOLVABLE = FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE
UNSCHEDULABLE = FitStatus.UNSCHEDULABLE
PENDING = TaskStatus.PENDING
RELEASING = TaskStatus.RELEASING


def term(app: str, key: str = ZONE) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return required("podAffinity", *terms)


def anti(*terms: dict[str, Any]) -> dict[str, Any]:
    return required("podAntiAffinity", *terms)


def pod(
    name: str,
    *,
    app: str = "",
    on: str = "",
    status: TaskStatus = TaskStatus.RUNNING,
    terms: dict[str, Any] | None = None,
) -> TaskInfo:
    t = task(name, status=status if on else PENDING, node=on, affinity=terms)
    t.labels = {"app": app} if app else {}
    return t


def nodes() -> list[Any]:
    """a1, a2 in zone a (rack r1 / r2), b1 in zone b (rack r1), u1 with no zone or rack."""
    return [
        node("a1", labels={ZONE: "a", RACK: "r1"}),
        node("a2", labels={ZONE: "a", RACK: "r2"}),
        node("b1", labels={ZONE: "b", RACK: "r1"}),
        node("u1"),
    ]


def open_(tasks: list[TaskInfo]) -> tuple[Session, predicates.PredicatesPlugin]:
    plugin = predicates.build(predicates.parse_args({}), ctx())
    ssn = session(
        cluster(nodes=nodes(), tasks=tasks),
        tiers([PluginConf.of("predicates", p.PREDICATE)]),
        [plugin],
    )
    return ssn, plugin


def status_of(plugin: predicates.PredicatesPlugin, t: TaskInfo, n: Any) -> FitStatus | None:
    try:
        plugin.predicate(t, n)
    except FitError as exc:
        return exc.status
    return None


@dataclass
class Case:
    name: str
    incoming: TaskInfo
    running: list[TaskInfo] = field(default_factory=list)
    at: str = "a1"
    status: FitStatus | None = None


CASES = [
    Case(
        "affinity-satisfied-by-a-pod-on-another-node-of-the-zone",
        pod("p", terms=affinity(term("db"))),
        [pod("db", app="db", on="a2")],
    ),
    Case(
        "affinity-unsatisfied-when-the-match-is-in-another-zone",
        pod("p", terms=affinity(term("db"))),
        [pod("db", app="db", on="b1")],
        status=UNRESOLVABLE,
    ),
    Case(
        "affinity-first-pod-of-its-group-matches-itself",
        pod("p", app="db", terms=affinity(term("db"))),
        [pod("web", app="web", on="a2")],
    ),
    Case(
        "affinity-self-match-does-not-apply-when-a-pod-matches-elsewhere",
        pod("p", app="db", terms=affinity(term("db"))),
        [pod("db", app="db", on="b1")],
        status=UNRESOLVABLE,
    ),
    Case(
        "affinity-fails-on-a-node-without-the-label-even-for-the-first-pod",
        pod("p", app="db", terms=affinity(term("db"))),
        at="u1",
        status=UNRESOLVABLE,
    ),
    Case(
        "affinity-ignores-a-releasing-match",
        pod("p", terms=affinity(term("db"))),
        [pod("db", app="db", on="a2", status=RELEASING), pod("db2", app="db", on="b1")],
        status=UNRESOLVABLE,
    ),
    Case(
        "custom-label-affinity-spans-zones",
        pod("p", terms=affinity(term("db", RACK))),
        [pod("db", app="db", on="b1")],
    ),
    Case(
        "incoming-anti-affinity-conflicts-with-a-pod-on-another-node-of-the-zone",
        pod("p", terms=anti(term("db"))),
        [pod("db", app="db", on="a2")],
        status=UNSCHEDULABLE,
    ),
    Case(
        "incoming-anti-affinity-other-zone-is-fine",
        pod("p", terms=anti(term("db"))),
        [pod("db", app="db", on="b1")],
    ),
    Case(
        "incoming-anti-affinity-ignores-a-releasing-pod",
        pod("p", terms=anti(term("db"))),
        [pod("db", app="db", on="a2", status=RELEASING)],
    ),
    Case(
        "incoming-anti-affinity-cannot-conflict-on-a-node-without-the-label",
        pod("p", terms=anti(term("db"))),
        [pod("db", app="db", on="u1")],
        at="u1",
    ),
    Case(
        "existing-pod-anti-affinity-refuses-across-the-zone",
        pod("p", app="web"),
        [pod("db", app="db", on="a2", terms=anti(term("web")))],
        status=UNSCHEDULABLE,
    ),
    Case(
        "existing-pod-anti-affinity-other-zone-is-fine",
        pod("p", app="web"),
        [pod("db", app="db", on="b1", terms=anti(term("web")))],
    ),
    Case(
        "existing-pod-anti-affinity-releasing-is-ignored",
        pod("p", app="web"),
        [pod("db", app="db", on="a2", status=RELEASING, terms=anti(term("web")))],
    ),
    Case(
        "existing-pod-anti-affinity-on-a-node-without-the-label-cannot-conflict",
        pod("p", app="web"),
        [pod("db", app="db", on="u1", terms=anti(term("web")))],
        at="u1",
    ),
    Case(
        "existing-pod-anti-affinity-reads-its-own-key-only",
        pod("p", app="web"),
        [pod("db", app="db", on="b1", terms=anti(term("web", RACK)))],
        status=UNSCHEDULABLE,
    ),
    Case(
        "hostname-terms-still-read-the-node-only",
        pod("p", terms=anti(term("db", HOST))),
        [pod("db", app="db", on="a2")],
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_wide_topology_terms(case: Case) -> None:
    ssn, plugin = open_([case.incoming, *case.running])
    assert status_of(plugin, ssn.tasks[case.incoming.key], ssn.nodes[case.at]) == case.status


@pytest.mark.parametrize(
    ("terms", "second_on", "status"),
    [
        (anti(term("web")), "a2", UNSCHEDULABLE),
        (anti(term("web")), "b1", None),
        (affinity(term("web")), "a2", None),
        (affinity(term("web")), "b1", UNRESOLVABLE),
    ],
    ids=["anti-same-zone", "anti-other-zone", "affinity-same-zone", "affinity-other-zone"],
)
def test_a_statement_s_placement_is_seen_by_the_next_pod(
    terms: dict[str, Any], second_on: str, status: FitStatus | None
) -> None:
    first, second = pod("p1", app="web", terms=terms), pod("p2", app="web", terms=terms)
    ssn, plugin = open_([first, second])
    stmt = ssn.statement()
    stmt.allocate(ssn.tasks[first.key], "a1", source="test")
    assert status_of(plugin, ssn.tasks[second.key], ssn.nodes[second_on]) == status


def test_an_eviction_on_another_node_of_the_zone_clears_the_conflict() -> None:
    incoming = pod("p", terms=anti(term("db")))
    ssn, plugin = open_([incoming, pod("db", app="db", on="a2")])
    assert status_of(plugin, ssn.tasks[incoming.key], ssn.nodes["a1"]) == UNSCHEDULABLE
    stmt = ssn.statement()
    stmt.evict(ssn.tasks["ns/db"], "test", source="test")
    assert status_of(plugin, ssn.tasks[incoming.key], ssn.nodes["a1"]) is None
    stmt.discard()
    assert status_of(plugin, ssn.tasks[incoming.key], ssn.nodes["a1"]) == UNSCHEDULABLE


@pytest.mark.parametrize(
    ("terms", "keyed"),
    [(None, True), (anti(term("db", HOST)), True), (anti(term("db")), False)],
    ids=["no-terms", "hostname-terms", "zone-terms"],
)
def test_the_memo_key_is_dropped_only_for_wide_terms(
    terms: dict[str, Any] | None, keyed: bool
) -> None:
    incoming = pod("p")
    ssn, _ = open_([incoming, pod("db", app="db", on="a2", terms=terms)])
    [(_, memo)] = ssn.plan("predicate", ssn.tasks[incoming.key])
    assert (memo is not None) is keyed
