"""The predicates plugin's required inter-pod affinity and anti-affinity (hostname
topology): a table of pods on a node, the incoming pod, and the answer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.policy.framework import points as p
from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.points import FitError, FitStatus
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import predicates
from controller.policy.plugins.predicates import (
    PredicatesArgs,
    PredicatesPlugin,
    make_predicate,
    scheduling_key,
)
from controller.policy.plugins.predicates.podaffinity import selector_matches, term_matches
from projections.model import TaskInfo, TaskStatus
from tests.controller.policy.framework.scenario import cluster, node, session, task, tiers

HOST = "kubernetes.io/hostname"
UNRESOLVABLE = FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE
UNSCHEDULABLE = FitStatus.UNSCHEDULABLE


def term(app: str, *, key: str = HOST, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key, **extra}


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def pod(
    name: str,
    *,
    app: str = "",
    ns: str = "ns",
    affinity: dict[str, Any] | None = None,
    status: TaskStatus = TaskStatus.RUNNING,
    on: str = "n1",
) -> TaskInfo:
    t = task(name, ns=ns, status=status, node=on if status != TaskStatus.PENDING else "")
    t.labels = {"app": app} if app else {}
    t.affinity = affinity
    return t


@dataclass
class Case:
    name: str
    incoming: TaskInfo
    running: list[TaskInfo] = field(default_factory=list)
    elsewhere: list[TaskInfo] = field(default_factory=list)
    status: FitStatus | None = None


PENDING = TaskStatus.PENDING
CASES = [
    Case("no-affinity", pod("p", status=PENDING), [pod("a", app="db")]),
    Case(
        "anti-affinity-conflict-is-resolvable",
        pod("p", app="web", status=PENDING, affinity=required("podAntiAffinity", term("db"))),
        [pod("a", app="db")],
        status=UNSCHEDULABLE,
    ),
    Case(
        "anti-affinity-ignores-releasing-pods",
        pod("p", status=PENDING, affinity=required("podAntiAffinity", term("db"))),
        [pod("a", app="db", status=TaskStatus.RELEASING)],
    ),
    Case(
        "anti-affinity-other-namespace-does-not-count",
        pod("p", status=PENDING, affinity=required("podAntiAffinity", term("db"))),
        [pod("a", app="db", ns="other")],
    ),
    Case(
        "anti-affinity-listed-namespace-counts",
        pod(
            "p",
            status=PENDING,
            affinity=required("podAntiAffinity", term("db", namespaces=["other"])),
        ),
        [pod("a", app="db", ns="other")],
        status=UNSCHEDULABLE,
    ),
    Case(
        "anti-affinity-empty-namespace-selector-is-every-namespace",
        pod(
            "p",
            status=PENDING,
            affinity=required("podAntiAffinity", term("db", namespaceSelector={})),
        ),
        [pod("a", app="db", ns="other")],
        status=UNSCHEDULABLE,
    ),
    Case(
        "existing-pods-anti-affinity-is-symmetric",
        pod("p", app="web", status=PENDING),
        [pod("a", app="db", affinity=required("podAntiAffinity", term("web")))],
        status=UNSCHEDULABLE,
    ),
    Case(
        "wide-topology-keys-are-left-to-the-domain-check",
        pod(
            "p",
            status=PENDING,
            affinity=required("podAntiAffinity", term("db", key="topology.kubernetes.io/zone")),
        ),
        [pod("a", app="db")],
    ),
    Case(
        "affinity-satisfied",
        pod("p", status=PENDING, affinity=required("podAffinity", term("db"))),
        [pod("a", app="db")],
    ),
    Case(
        "affinity-unsatisfied-is-unresolvable",
        pod("p", status=PENDING, affinity=required("podAffinity", term("db"))),
        [pod("a", app="web")],
        [pod("b", app="db", on="n2")],
        status=UNRESOLVABLE,
    ),
    Case(
        "affinity-first-pod-of-its-group-may-go-anywhere",
        pod("p", app="db", status=PENDING, affinity=required("podAffinity", term("db"))),
        [pod("a", app="web")],
    ),
    Case(
        "affinity-first-pod-rule-needs-no-match-anywhere",
        pod("p", app="db", status=PENDING, affinity=required("podAffinity", term("db"))),
        [pod("a", app="web")],
        [pod("b", app="db", on="n2")],
        status=UNRESOLVABLE,
    ),
]


def _answer(case: Case) -> FitError | None:
    c = cluster(
        nodes=[node("n1"), node("n2")],
        tasks=[case.incoming, *case.running, *case.elsewhere],
    )
    plugin = PredicatesPlugin(PredicatesArgs())

    def anywhere(t: Mapping[str, Any], incoming: TaskInfo) -> bool:
        return any(
            term_matches(t, incoming, other)
            for n in c.nodes.values()
            for other in n.tasks.values()
            if other.key != incoming.key
        )

    predicate = make_predicate(plugin.args, anywhere)
    try:
        predicate(case.incoming, c.nodes["n1"])
    except FitError as exc:
        return exc
    return None


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_inter_pod_affinity(case: Case) -> None:
    err = _answer(case)
    assert (err.status if err is not None else None) == case.status


@pytest.mark.parametrize(
    ("selector", "labels", "match"),
    [
        (None, {"a": "1"}, False),
        ({}, {"a": "1"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {"a": "1"}, True),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {"a": "1"},
            False,
        ),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {}, True),
    ],
    ids=["missing", "empty", "in", "not-in", "exists", "does-not-exist"],
)
def test_label_selectors(selector: Any, labels: dict[str, str], match: bool) -> None:
    assert selector_matches(selector, labels) is match


def test_the_memo_key_separates_labels_and_pod_affinity() -> None:
    a, b = pod("a", app="x", status=PENDING), pod("b", app="x", status=PENDING)
    assert scheduling_key(a) == scheduling_key(b)
    b.labels = {"app": "y"}
    assert scheduling_key(a) != scheduling_key(b)
    c = pod("c", status=PENDING, affinity=required("podAffinity", term("db")))
    d = pod("d", status=PENDING, affinity=required("podAffinity", term("db")))
    assert scheduling_key(c) != scheduling_key(d)


def test_a_pending_pods_term_counts_once_it_is_placed() -> None:
    """The predicate skips the walk over a node's pods when no pod of the session has a
    required hostname anti-affinity term; a Pending pod's term counts (it may be placed
    during the session), and so does a term placed after the first question."""
    guard = pod("guard", status=PENDING, affinity=required("podAntiAffinity", term("db")))
    db, web = pod("db", app="db", status=PENDING), pod("web", status=PENDING)
    plugin = predicates.build(predicates.parse_args({}), PluginContext(ZoneInfo("UTC"), "volcano"))
    ssn = session(
        cluster(nodes=[node("n1")], tasks=[guard, db, web]),
        tiers([PluginConf.of("predicates", p.PREDICATE)]),
        [plugin],
    )
    ssn.predicate(ssn.tasks["ns/db"], ssn.nodes["n1"])  # nothing on n1 yet
    ssn.statement().allocate(ssn.tasks["ns/guard"], "n1", source="t")
    ssn.predicate(ssn.tasks["ns/web"], ssn.nodes["n1"])  # not selected by the term
    with pytest.raises(FitError) as refused:
        ssn.predicate(ssn.tasks["ns/db"], ssn.nodes["n1"])
    assert "existing pods anti-affinity" in refused.value.reason
