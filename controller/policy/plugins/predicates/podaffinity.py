"""Required inter-pod affinity and anti-affinity over topology domains wider than a node.

The ``predicates`` plugin (:mod:`controller.policy.plugins.predicates`) checks required terms with
topology key ``kubernetes.io/hostname`` against the pods of the candidate node itself. A term
with any other key (``topology.kubernetes.io/zone``, a custom node label) names a *domain*:
every session node carrying the same value of that label. A node without the label is in no
domain: an affinity term of that key fails there, an anti-affinity term of that key cannot
conflict there. This module answers for those terms, as Kubernetes' InterPodAffinity filter
does (volcano-sh/volcano ``pkg/scheduler/plugins/predicates`` calls it):

* every affinity term of the incoming pod must match a live pod in the candidate node's
  domain, unless no live pod on any node carrying the key matches the term and the pod
  matches its own term (the first pod of a group) — else UnschedulableAndUnresolvable;
* no anti-affinity term of the incoming pod may match a live pod in the domain, and no
  anti-affinity term of a live pod in the domain may match the incoming pod — else
  Unschedulable, which a preemption may resolve.

One departure, shared with the hostname check: the first-pod rule is applied term by term,
where Kubernetes asks that no pod match any of the pod's terms and the pod match all of them.

"Live" leaves out pods Releasing in the session. The pods of a domain are read from the
session's view at the time of the question (allocate's statements and preempt's evictions
change it), the candidate node itself from the object asked about (a preempt dry run's
scratch copy), and every other node from the scratch's copy when the scratch holds one.

Because a node's answer depends on other nodes, the plugin drops its memo key for a session in
which any pod carries such a term (:func:`wide_terms_in`): the search then asks every node
afresh, and clusters without such terms keep the memo and the search's fast lane.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from controller.policy.framework.points import FitError, FitStatus
from projections.model import NodeInfo, TaskInfo, TaskStatus

HOSTNAME = "kubernetes.io/hostname"
AFFINITY = "podAffinity"
ANTI_AFFINITY = "podAntiAffinity"


def required_terms(task: TaskInfo, kind: str) -> list[Mapping[str, Any]]:
    """Every required ``kind`` (podAffinity / podAntiAffinity) term of the task."""
    section = (task.affinity or {}).get(kind) or {}
    if not isinstance(section, Mapping):
        return []
    terms = section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    return [t for t in terms if isinstance(t, Mapping)]


def wide_terms(task: TaskInfo, kind: str) -> list[Mapping[str, Any]]:
    """The task's required ``kind`` terms whose topology key is a label other than hostname."""
    if not task.affinity:
        return []
    return [
        t
        for t in required_terms(task, kind)
        if isinstance(t.get("topologyKey"), str) and t["topologyKey"] not in ("", HOSTNAME)
    ]


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A Kubernetes label selector (``matchLabels`` + ``matchExpressions``); a missing
    selector matches nothing, an empty one everything."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key"), expr.get("operator")
        values = expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def term_matches(term: Mapping[str, Any], owner: TaskInfo, other: TaskInfo) -> bool:
    """Whether ``owner``'s affinity ``term`` selects the pod ``other``."""
    namespaces = term.get("namespaces") or []
    if namespaces:
        if other.namespace not in namespaces:
            return False
    elif term.get("namespaceSelector") != {} and other.namespace != owner.namespace:
        return False
    return selector_matches(term.get("labelSelector"), other.labels)


def wide_terms_in(tasks: Iterable[TaskInfo]) -> tuple[bool, frozenset[str]]:
    """Whether any of ``tasks`` has a wide required term, and the topology keys of their
    wide anti-affinity terms (the keys under which an existing pod may refuse another)."""
    found = False
    anti: set[str] = set()
    # the pods of a workload share one affinity object, and the answer reads only it:
    # each object is read once (held here, so that its id stays its own)
    seen: dict[int, Any] = {}
    for task in tasks:
        affinity = task.affinity
        if not affinity or (AFFINITY not in affinity and ANTI_AFFINITY not in affinity):
            continue
        if id(affinity) in seen:
            continue
        seen[id(affinity)] = affinity
        if wide_terms(task, AFFINITY):
            found = True
        for term in wide_terms(task, ANTI_AFFINITY):
            found = True
            anti.add(term["topologyKey"])
    return found, frozenset(anti)


def _refuse(reason: str, status: FitStatus) -> FitError:
    return FitError(status, reason, plugin="predicates")


class Domains:
    """The session's topology domains and the live pods in them, read when asked.

    Args:
        nodes: The session's nodes now (``ClusterView.nodes``: a statement may replace a
            node object, so it is looked up on every question).
        anti_keys: Topology keys of the wide anti-affinity terms of the session's pods.
    """

    def __init__(self, nodes: Mapping[str, NodeInfo], anti_keys: frozenset[str]) -> None:
        self._nodes = nodes
        self.anti_keys = sorted(anti_keys)
        # key -> label value -> node names (labels do not change within a session)
        self._members: dict[str, dict[str, list[str]]] = {}
        #: scratch copies that stand in for session nodes during a dry run
        self.overlay: Mapping[str, NodeInfo] = {}

    def _domain(self, key: str) -> dict[str, list[str]]:
        members = self._members.get(key)
        if members is None:
            members = {}
            for name in sorted(self._nodes):
                value = self._nodes[name].labels.get(key)
                if value is not None:
                    members.setdefault(value, []).append(name)
            self._members[key] = members
        return members

    def pods(self, key: str, node: NodeInfo) -> Iterator[TaskInfo]:
        """Live pods in ``node``'s domain of ``key`` (none when the node lacks the label),
        node by node in name order."""
        value = node.labels.get(key)
        if value is None:
            return
        for name in self._domain(key).get(value, [node.name]):
            here = node if name == node.name else self.overlay.get(name) or self._nodes[name]
            for pod in here.tasks.values():
                if pod.status != TaskStatus.RELEASING:
                    yield pod

    def labelled_match(self, key: str, term: Mapping[str, Any], task: TaskInfo) -> bool:
        """Whether a live pod other than ``task``, on a node carrying ``key``, matches
        ``task``'s ``term`` (the first-pod-of-a-group rule)."""
        for names in self._domain(key).values():
            for name in names:
                here = self.overlay.get(name) or self._nodes[name]
                for pod in here.tasks.values():
                    if (
                        pod.status != TaskStatus.RELEASING
                        and pod.key != task.key
                        and term_matches(term, task, pod)
                    ):
                        return True
        return False

    def check(self, task: TaskInfo, node: NodeInfo) -> None:
        """Raise the refusal of ``node`` for ``task`` by wide required terms, if any."""
        labels = node.labels
        for term in wide_terms(task, AFFINITY):
            key = term["topologyKey"]
            if key in labels:
                pods = self.pods(key, node)
                if any(p.key != task.key and term_matches(term, task, p) for p in pods):
                    continue
                if term_matches(term, task, task) and not self.labelled_match(key, term, task):
                    continue
            raise _refuse(
                "node(s) didn't match pod affinity rules",
                FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE,
            )
        for term in wide_terms(task, ANTI_AFFINITY):
            key = term["topologyKey"]
            pods = self.pods(key, node)
            if any(p.key != task.key and term_matches(term, task, p) for p in pods):
                raise _refuse(
                    "node(s) didn't match pod anti-affinity rules", FitStatus.UNSCHEDULABLE
                )
        for key in self.anti_keys:
            for pod in self.pods(key, node):
                if pod.key == task.key or not pod.affinity:
                    continue
                if any(
                    t["topologyKey"] == key and term_matches(t, pod, task)
                    for t in wide_terms(pod, ANTI_AFFINITY)
                ):
                    raise _refuse(
                        "node(s) didn't satisfy existing pods anti-affinity rules",
                        FitStatus.UNSCHEDULABLE,
                    )
