"""What the session may memoise the predicate's answers by, and the pods it derives that from.

The session reuses a predicate answer for another pod with an equal key on an unchanged
node (``Session.add_predicate_fn(key=...)``). :func:`scheduling_key` names everything
the predicate reads of a pod; :func:`session_key` is finer-grained for one session: it
names which of the session's required anti-affinity terms select the pod instead of its
labels, terms collected from the session's pods with an affinity (:func:`_owners`, which
the plugin also reads its wider-domain terms from).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from controller.policy.framework.session import Session
from controller.policy.plugins.predicates.filters import _required
from controller.policy.plugins.predicates.podaffinity import term_matches
from projections.model import TaskInfo


def scheduling_key(task: TaskInfo) -> bytes:
    """What the predicate reads of a task: its selector, node affinity and tolerations.

    Tasks with equal keys get equal answers on an unchanged node, so the session may
    reuse them (``Session.add_predicate_fn(key=...)``). A pod on the node with a
    required anti-affinity term may reject the task by its labels and namespace, so
    those are part of the key too; replicas of one workload still share one key.
    """
    affinity = task.affinity or {}
    return orjson.dumps(
        [
            task.node_selector,
            affinity.get("nodeAffinity"),
            _required(task, "podAffinity"),
            _required(task, "podAntiAffinity"),
            task.tolerations,
            task.namespace,
            task.labels,
            # a pod-affinity answer may also depend on other nodes (the first pod of a
            # group): never share it between tasks
            task.key if _required(task, "podAffinity") else "",
        ],
        option=orjson.OPT_SORT_KEYS,
    )


#: Above this many distinct (namespace, term) pairs of required anti-affinity among the
#: session's pods, :func:`session_key` keys by the pod's labels instead (as cheap as it gets).
MAX_SELECTING_TERMS = 64


def session_key(
    ssn: Session, owners: Callable[[], list[TaskInfo]] | None = None
) -> Callable[[TaskInfo], bytes]:
    """A memo key finer-grained than :func:`scheduling_key`, for one session.

    A pod with no required hostname pod (anti-)affinity term of its own is refused by
    the inter-pod check only through an anti-affinity term of a pod on the node, and
    then only by whether that term selects it (its labels and namespace). The key
    therefore names which of the session's required anti-affinity terms select the pod
    instead of its labels, so replicas that differ in a per-pod label share answers.
    The terms are collected on first use from the pods on the session nodes and the
    Pending pods: every pod a session can put on a node is one of them (``owners``, when
    given, lists those with an affinity). A pod with terms of its own keeps
    :func:`scheduling_key`.
    """
    found: list[list[tuple[Mapping[str, Any], TaskInfo]]] = []

    def terms() -> list[tuple[Mapping[str, Any], TaskInfo]] | None:
        if not found:
            found.append(_anti_terms(owners() if owners is not None else _owners(ssn)))
        return found[0] if len(found[0]) <= MAX_SELECTING_TERMS else None

    def key(task: TaskInfo) -> bytes:
        affinity = task.affinity or {}
        if affinity and (_required(task, "podAffinity") or _required(task, "podAntiAffinity")):
            return scheduling_key(task)
        selecting = terms()
        if selecting is None:
            return scheduling_key(task)
        hits = [i for i, (term, owner) in enumerate(selecting) if term_matches(term, owner, task)]
        return orjson.dumps(
            [task.node_selector, affinity.get("nodeAffinity"), task.tolerations, hits],
            option=orjson.OPT_SORT_KEYS,
        )

    return key


def _owners(ssn: Session) -> list[TaskInfo]:
    """The session's pods with an affinity, on its nodes now, then Pending: the first pod
    of each (affinity object, namespace), in that order.

    The pods of a workload share one affinity object, and what the session derives from
    the owners (:func:`_anti_terms`,
    :func:`~controller.policy.plugins.predicates.podaffinity.wide_terms_in`)
    reads each (object, namespace) from its first pod only, so the others are dropped
    while the session's pods are walked (at 5,000 nodes: 150,000 pods, 25,000 with an
    affinity, 1,600 distinct). When the cluster keeps the fold's index of pods with a pod
    (anti-)affinity section
    (:meth:`~controller.policy.framework.view.ClusterView.pod_affinity_tasks`)
    the owners are one session pod of each (object, namespace) among those, in the index's
    order: that leaves out only pods whose affinity has neither section, and every use of
    the owners is order-free and reads only those sections.
    """
    indexed = ssn.view.pod_affinity_tasks()
    if indexed is not None:
        # one session pod of each (object, namespace) among the pods with a pod
        # (anti-)affinity section, from the fold's index: the others add nothing to what
        # the owners are read for (their terms and wide terms)
        return indexed
    out: list[TaskInfo] = []
    # id(affinity) -> the namespace of its first pod (the tasks hold the objects, so an id
    # stays its own); an object met again in another namespace (rare) goes by its pair
    first: dict[int, str] = {}
    others: set[tuple[int, str]] = set()

    def walk(tasks: Iterable[TaskInfo]) -> None:
        for task in tasks:
            affinity = task.affinity
            if not affinity:
                continue
            namespace = first.get(id(affinity))
            if namespace is None:
                first[id(affinity)] = task.namespace
                out.append(task)
            elif namespace != task.namespace:
                pair = (id(affinity), task.namespace)
                if pair not in others:
                    others.add(pair)
                    out.append(task)

    for node in ssn.view.node_list:
        walk(node.tasks.values())
    walk(ssn.view.pending_tasks())
    return out


def _anti_terms(owners: list[TaskInfo]) -> list[tuple[Mapping[str, Any], TaskInfo]]:
    """Distinct required hostname anti-affinity terms of ``owners``, with a pod that owns
    each (a term's match reads only its owner's namespace), in a sorted order."""
    seen: dict[bytes, tuple[Mapping[str, Any], TaskInfo]] = {}
    # the pods of a workload share one affinity object: its terms, in a namespace, are
    # read once (the first owner of each is kept anyway)
    read: set[tuple[int, str]] = set()
    for owner in owners:
        shared = (id(owner.affinity), owner.namespace)
        if shared in read:
            continue
        read.add(shared)
        for term in _required(owner, "podAntiAffinity"):
            name = orjson.dumps([owner.namespace, term], option=orjson.OPT_SORT_KEYS)
            seen.setdefault(name, (term, owner))
    return [seen[name] for name in sorted(seen)]
