"""The predicates plugin's per-session memo key (``predicates.session_key``) changes no
answer: on randomised, seeded clusters with per-pod labels, required hostname
anti-affinity terms on running and pending pods and node selectors, allocate's node search
through the memo (``controller.policy.framework.search.find_fitting_nodes``) finds exactly the
nodes the plain definition finds (``predicate_nodes`` with ``allocate_check``, no memo),
while statements put pods, some with terms of their own, on the nodes between searches."""

from __future__ import annotations

import random
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from controller.policy.framework import nodes as nodes_api
from controller.policy.framework import points as p
from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.session import Session
from controller.policy.framework.tiers import PluginConf
from controller.policy.plugins import predicates
from controller.policy.plugins.predicates.keys import _anti_terms, _owners
from projections.model import TaskInfo, TaskStatus
from tests.controller.policy.framework.scenario import GI, cluster, node, session, task, tiers

CTX = PluginContext(ZoneInfo("UTC"), "volcano")
HOST = "kubernetes.io/hostname"
APPS = "abcd"


def anti(rng: random.Random, terms: int, tag: str = "") -> dict[str, Any]:
    """Required anti-affinity; a ``tag`` makes the term distinct (matching the same pods)."""
    chosen = [
        {
            "labelSelector": {
                "matchExpressions": [
                    {"key": "app", "operator": "In", "values": [rng.choice(APPS), tag]}
                ]
            },
            "topologyKey": HOST,
            **({"namespaces": [rng.choice(["ns", "other"])]} if rng.random() < 0.3 else {}),
        }
        for _ in range(terms)
    ]
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": chosen}}


def labelled(t: TaskInfo, rng: random.Random, i: int) -> TaskInfo:
    t.labels = {"app": rng.choice(APPS), "pod": f"x{i}"}  # a per-pod label, as replicas have
    return t


def random_session(seed: int, *, owners: int) -> tuple[Session, list[TaskInfo]]:
    """A session; ``owners`` running pods carry a required anti-affinity term each."""
    rng = random.Random(seed)
    nodes = [
        node(f"n{i:03d}", cpu=8000, pods=rng.choice([3, 6, 110]), labels={"z": rng.choice("xy")})
        for i in range(rng.randint(40, 90))
    ]
    running = [
        labelled(
            task(
                f"r{i:03d}",
                ns=rng.choice(["ns", "other"]),
                status=rng.choice([TaskStatus.RUNNING, TaskStatus.RELEASING]),
                node=rng.choice(nodes).name,
                cpu=100,
                affinity=anti(rng, 1, f"t{i}") if i < owners else None,
            ),
            rng,
            i,
        )
        for i in range(rng.randint(max(60, owners), 120))
    ]
    pending = [
        labelled(
            task(
                f"p{i:02d}",
                ns=rng.choice(["ns", "other"]),
                cpu=rng.choice([100, 500]),
                memory=0.25 * GI,
                selector={"z": "x"} if rng.random() < 0.2 else None,
                affinity=anti(rng, rng.randint(1, 2)) if rng.random() < 0.15 else None,
            ),
            rng,
            1000 + i,
        )
        for i in range(40)
    ]
    plugin = predicates.build(predicates.parse_args({}), CTX)
    ssn = session(
        cluster(nodes=nodes, tasks=running + pending),
        tiers([PluginConf.of("predicates", p.PREDICATE)]),
        [plugin],
    )
    ssn.predicate_cursor = rng.randrange(len(nodes))
    return ssn, pending


@pytest.mark.parametrize(
    "owners",
    [0, 5, predicates.MAX_SELECTING_TERMS + 30],
    ids=["no-terms", "few-terms", "too-many-terms"],
)
@pytest.mark.parametrize("seed", range(6))
def test_the_session_key_finds_the_plain_nodes(seed: int, owners: int) -> None:
    fast, pending = random_session(seed, owners=owners)
    slow, _ = random_session(seed, owners=owners)
    stmt_fast, stmt_slow = fast.statement(), slow.statement()
    placed = 0
    for t in pending:
        cursor = slow.predicate_cursor
        found = nodes_api.fitting_nodes(fast, fast.tasks[t.key])
        plain = nodes_api.predicate_nodes(slow, slow.tasks[t.key], nodes_api.allocate_check(slow))
        pool = fast.view.node_list
        assert sorted(pool[i].name for i in [*found.idle, *found.future]) == sorted(
            n.name for n in plain.feasible
        ), f"task {t.key} from cursor {cursor}"
        assert fast.predicate_cursor == slow.predicate_cursor
        if not found.idle:
            continue
        chosen = pool[min(found.idle, key=lambda i: pool[i].name)].name
        stmt_fast.allocate(fast.tasks[t.key], chosen, source="t")
        stmt_slow.allocate(slow.tasks[t.key], chosen, source="t")
        placed += 1
    assert placed > 10


def test_replicas_differing_in_a_label_share_a_key_unless_a_term_tells_them_apart() -> None:
    owner = task("o", status=TaskStatus.RUNNING, node="n1")
    owner.affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOST}
            ]
        }
    }
    a, b, c = task("a"), task("b"), task("c")
    a.labels, b.labels, c.labels = {"pod": "1"}, {"pod": "2"}, {"pod": "3", "app": "db"}
    ssn = session(cluster(nodes=[node("n1")], tasks=[owner, a, b, c]))
    key = predicates.session_key(ssn)
    assert key(a) == key(b)
    assert key(a) != key(c)
    assert predicates.scheduling_key(a) != predicates.scheduling_key(b)


def test_owners_keep_the_first_pod_of_each_affinity_object_and_namespace() -> None:
    """The session's affinity owners are reduced to the first pod of each (affinity
    object, namespace): one object shared by pods of two namespaces keeps a pod of each
    (its anti-affinity terms select in the owner's namespace), and the terms found are
    those of every pod."""
    shared = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": HOST}
            ]
        }
    }
    pods = [
        task(name, ns=ns, status=TaskStatus.RUNNING, node=on)
        for name, ns, on in (("a1", "a", "n1"), ("a2", "a", "n2"), ("b1", "b", "n2"))
    ]
    pending = task("b2", ns="b")
    for t in [*pods, pending]:
        t.affinity = shared
    other = task("c1", ns="a", status=TaskStatus.RUNNING, node="n1")
    other.affinity = dict(shared)  # equal, but another object
    ssn = session(cluster(nodes=[node("n1"), node("n2")], tasks=[*pods, pending, other]))
    owners = _owners(ssn)
    # in the fold index's order (the owners' uses are order-free)
    assert sorted(t.key for t in owners) == ["a/a1", "a/c1", "b/b1"]
    every = [t for n in ssn.view.node_list for t in n.tasks.values()] + [pending]
    assert _anti_terms(owners) == _anti_terms(every)
    assert {owner.namespace for _, owner in _anti_terms(owners)} == {"a", "b"}
