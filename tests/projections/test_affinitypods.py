"""The fold's index of pods with a pod (anti-)affinity section equals a fresh walk of the
cluster's tasks after every record, in the same order; the session's share of it equals a
walk of the session's nodes and Pending pods; and the predicates plugin's owners read
from it give the same terms and wide keys as the walk of every session pod."""

from __future__ import annotations

import random
from typing import Any

import pytest

from controller.policy.framework.session import Session
from controller.policy.plugins.predicates.keys import _anti_terms, _owners
from controller.policy.plugins.predicates.podaffinity import wide_terms_in
from projections.affinitypods import group_of, has_pod_affinity
from projections.cluster import ClusterState
from projections.model import TaskInfo, TaskStatus
from streams.events import Event, make_event
from tests.builders import at, build_node, build_pod, watch
from tests.controller.policy.framework.scenario import session

HOST = "kubernetes.io/hostname"


def _affinity(rng: random.Random) -> dict[str, Any] | None:
    """No affinity, a node affinity only, or hostname / zone pod (anti-)affinity."""
    roll = rng.random()
    if roll < 0.35:
        return None
    if roll < 0.5:
        zone = {"matchExpressions": [{"key": "z", "operator": "In", "values": ["x"]}]}
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": zone}}
    kind = rng.choice(["podAntiAffinity", "podAntiAffinity", "podAffinity"])
    term: dict[str, Any] = {
        "labelSelector": {"matchLabels": {"app": rng.choice("ab")}},
        "topologyKey": rng.choice([HOST, HOST, "zone"]),
    }
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def _pod(rng: random.Random, step: int) -> dict[str, Any]:
    phase = rng.choice(["Pending", "Running", "Running", "Succeeded"])
    node = "" if phase == "Pending" else f"n{rng.randrange(4)}"
    pod = build_pod(
        rng.choice(["ns", "other"]),
        f"p{rng.randrange(16)}",
        node=node,
        phase=phase,
        labels={"app": rng.choice("ab")},
        created=at(step),
        scheduler=rng.choice(["volcano", "volcano", "other"]),
    )
    affinity = _affinity(rng)
    if affinity is not None:
        pod["spec"]["affinity"] = affinity
    return pod


def _events(seed: int, count: int) -> list[Event]:
    rng = random.Random(seed)
    events: list[Event] = [
        make_event("config.applied", at(0), {"config": {"schedulerName": "volcano"}, "source": "t"})
    ]
    for step in range(1, count):
        roll = rng.random()
        if roll < 0.1:
            node = build_node(f"n{rng.randrange(4)}", ready=rng.random() < 0.8)
            events.append(watch("nodes", node, at(step), rng.choice(["ADDED", "MODIFIED"])))
        elif roll < 0.13:
            config = {"schedulerName": rng.choice(["volcano", "other"])}
            events.append(make_event("config.applied", at(step), {"config": config, "source": "t"}))
        else:
            kind = rng.choice(["ADDED", "MODIFIED", "MODIFIED", "DELETED"])
            events.append(watch("pods", _pod(rng, step), at(step), kind))
    return events


def walked(state: ClusterState) -> list[list[str]]:
    """The reference: every task of the cluster with such a section, by (affinity object,
    namespace), groups and members in key order."""
    groups: dict[tuple[int, str], list[str]] = {}
    for key, task in state.tasks.items():
        if has_pod_affinity(task):
            groups.setdefault((id(task.affinity), task.namespace), []).append(key)
    return sorted(sorted(keys) for keys in groups.values())


def maintained(state: ClusterState) -> list[list[str]]:
    found = state.affinity_pods.groups(state.tasks)
    for members in found:  # the cluster's own tasks, one object and namespace a group
        assert all(members[key] is state.tasks[key] for key in members)
        assert len({group_of(task) for task in members.values()}) == 1
    return sorted(sorted(members) for members in found)


def session_walked(ssn: Session) -> list[TaskInfo]:
    """The session's pods as the plugin walked them before the index: every pod of every
    session node, then the Pending ones."""
    view = ssn.view
    return [t for n in view.node_list for t in n.tasks.values()] + view.pending_tasks()


def state_of(ssn: Session) -> ClusterState:
    cluster = ssn.view._cluster
    assert isinstance(cluster, ClusterState)
    return cluster


def check_session(ssn: Session) -> int:
    """The session's indexed pods are one of each group of the walk's pods with such a
    section, and the owners
    give the same terms, wide keys and refusal flag; returns the count of terms found."""
    every = session_walked(ssn)
    indexed = ssn.view.pod_affinity_tasks()
    assert indexed is not None
    # one pod of each (object, namespace) of the session pods with such a section
    base = state_of(ssn).tasks
    groups = {group_of(base[t.key]) for t in every if has_pod_affinity(t)}
    assert sorted(group_of(base[t.key]) for t in indexed) == sorted(groups)
    keys = {t.key for t in every}
    assert all(t.key in keys and t is ssn.view.tasks[t.key] for t in indexed)
    owners = _owners(ssn)
    # a term's match reads its owner's namespace only (term_matches): the pod kept for a
    # (namespace, term) may differ, its namespace may not
    terms = [(term, owner.namespace) for term, owner in _anti_terms(owners)]
    assert terms == [(term, o.namespace) for term, o in _anti_terms(every)]
    assert wide_terms_in(owners) == wide_terms_in(every)
    return len(terms)


@pytest.mark.parametrize("seed", [1, 2, 3, 4], ids=["seed1", "seed2", "seed3", "seed4"])
def test_index_matches_a_walk_after_every_record(seed: int) -> None:
    state = ClusterState()
    maintained(state)  # built before the first record: later ones are maintained
    reached = terms = 0
    for position, event in enumerate(_events(seed, 300)):
        state.apply(event.with_offset(state.position))
        expected = walked(state)
        assert maintained(state) == expected
        reached = max(reached, len(expected))
        if position % 10 == 0:
            terms = max(terms, check_session(session(state)))
    assert reached > 3 and terms > 1  # the churn does reach several indexed pods and terms
    loaded = ClusterState()
    loaded.load(state.dump())
    assert maintained(loaded) == walked(loaded)
    # a load shares equal affinity objects (groups may merge), the pods are the same
    pods = [[key for keys in walked(s) for key in keys] for s in (loaded, state)]
    assert sorted(pods[0]) == sorted(pods[1])


def test_session_placements_keep_the_session_pods() -> None:
    """Pods a session puts on nodes stay session pods (Pending before, on a node after),
    with the index read after the placements."""
    state = ClusterState()
    for event in _events(7, 200):
        state.apply(event.with_offset(state.position))
    ssn = session(state)
    pending = [t for t in ssn.view.pending_tasks() if has_pod_affinity(t)]
    assert pending
    names = list(ssn.view.nodes)
    stmt = ssn.statement()
    for i, t in enumerate(pending):
        stmt.allocate(t, names[i % len(names)], source="t")
    placed = [ssn.view.tasks[t.key] for t in pending]
    assert all(t.status != TaskStatus.PENDING and t.node_name for t in placed)
    check_session(ssn)
