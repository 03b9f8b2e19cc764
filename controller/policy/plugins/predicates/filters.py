"""The predicate itself: Kubernetes' filters, in order, on one pod and one node.

:func:`make_predicate` builds the closure the session calls for every node of every
pending pod: the pod-count limit, ``spec.unschedulable``, ``nodeSelector`` and required
node affinity, NoSchedule / NoExecute taints, then the required inter-pod terms with
topology key ``kubernetes.io/hostname`` (:func:`check_pod_affinity`, the node's own pods)
and, when the session has any, the terms over wider domains
(:mod:`controller.policy.plugins.predicates.podaffinity`). A refusal is a
:class:`~controller.policy.framework.points.FitError` naming the plugin; the package
docstring (:mod:`controller.policy.plugins.predicates`) says what each check reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controller.policy.framework.matching import match_term, tolerates
from controller.policy.framework.points import FitError, FitStatus
from controller.policy.plugins.predicates.args import NAME, PredicatesArgs
from controller.policy.plugins.predicates.podaffinity import HOSTNAME, Domains, term_matches
from projections.model import JSON, NodeInfo, TaskInfo, TaskStatus

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_BLOCKING = frozenset({"NoSchedule", "NoExecute"})
_UNSCHEDULABLE_TAINT = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}


def untolerated_taint(tolerations: list[JSON], taints: list[JSON]) -> JSON | None:
    """The first NoSchedule/NoExecute taint none of ``tolerations`` tolerates."""
    for taint in taints:
        if taint.get("effect") not in _BLOCKING:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def matches_node_affinity(task: TaskInfo, node: NodeInfo) -> bool:
    """``nodeSelector`` and required node affinity both hold."""
    labels = node.labels
    for key, value in task.node_selector.items():
        if labels.get(key) != value:
            return False
    affinity = task.affinity
    if not affinity:
        return True
    required = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(match_term(term, node) for term in terms)


def _unschedulable(reason: str, status: FitStatus = FitStatus.UNSCHEDULABLE) -> FitError:
    return FitError(status, reason, plugin=NAME)


#: whether any pod of the cluster matches a pod-affinity term of a task
Anywhere = Callable[[Mapping[str, Any], TaskInfo], bool]


def _required(task: TaskInfo, kind: str) -> list[Mapping[str, Any]]:
    """The task's required ``kind`` (podAffinity / podAntiAffinity) hostname terms."""
    section = (task.affinity or {}).get(kind) or {}
    terms = section.get("requiredDuringSchedulingIgnoredDuringExecution") or []
    return [t for t in terms if isinstance(t, Mapping) and t.get("topologyKey") == HOSTNAME]


def _live(node: NodeInfo) -> list[TaskInfo]:
    return [t for t in node.tasks.values() if t.status != TaskStatus.RELEASING]


def check_pod_affinity(task: TaskInfo, node: NodeInfo, anywhere: Anywhere) -> None:
    """Raise the inter-pod affinity / anti-affinity refusal of ``node`` for ``task``.

    ``anywhere(term)`` tells whether any pod of the cluster matches an affinity term (for
    the first pod of a group).
    """
    affinity = _required(task, "podAffinity")
    anti = _required(task, "podAntiAffinity")
    live: list[TaskInfo] | None = None
    if affinity:
        live = _live(node)
        for term in affinity:
            if any(term_matches(term, task, other) for other in live if other.key != task.key):
                continue
            if term_matches(term, task, task) and not anywhere(term, task):
                continue
            raise _unschedulable(
                "node(s) didn't match pod affinity rules",
                FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE,
            )
    if live is None:
        live = _live(node)
    for other in live:
        if other.key == task.key:
            continue
        if any(term_matches(term, task, other) for term in anti):
            raise _unschedulable("node(s) didn't match pod anti-affinity rules")
        if other.affinity and any(
            term_matches(term, other, task) for term in _required(other, "podAntiAffinity")
        ):
            raise _unschedulable("node(s) didn't satisfy existing pods anti-affinity rules")


def _nowhere(term: Mapping[str, Any], task: TaskInfo) -> bool:
    del term, task
    return False


def make_predicate(
    args: PredicatesArgs,
    anywhere: Anywhere = _nowhere,
    domains: Callable[[], Domains | None] | None = None,
    pods_refuse: Callable[[], bool] | None = None,
) -> Callable[[TaskInfo, NodeInfo], None]:
    """The predicate for ``args`` (a closure: it runs for every node of every pending pod).

    ``anywhere`` answers whether any pod of the cluster matches a pod-affinity term;
    ``domains()``, when given, is the check of the required terms whose topology key is not
    the hostname (None: the session has none). ``pods_refuse()``, when given, tells whether
    any pod the session can put on a node has a required hostname anti-affinity term:
    when none has, no node's pods are walked for one.
    """
    affinity_on = args.node_affinity
    taints_on = args.taint_toleration
    # id(affinity) -> (the affinity, whether it has required hostname pod (anti-)affinity
    # terms); affinity objects are shared between the pods of a workload
    required: dict[int, tuple[Any, bool, bool]] = {}

    def terms_of(affinity: Any, task: TaskInfo) -> tuple[bool, bool]:
        hit = required.get(id(affinity))
        if hit is None or hit[0] is not affinity:
            hit = (
                affinity,
                bool(_required(task, "podAffinity") or _required(task, "podAntiAffinity")),
                bool(_required(task, "podAntiAffinity")),
            )
            required[id(affinity)] = hit
        return hit[1], hit[2]

    def may_conflict(task: TaskInfo, node: NodeInfo) -> bool:
        # check_pod_affinity can refuse only through a required hostname term of the task
        # or of a pod on the node (preferred terms never refuse)
        if task.affinity and terms_of(task.affinity, task)[0]:
            return True
        if pods_refuse is not None and not pods_refuse():
            return False
        return any(t.affinity and terms_of(t.affinity, t)[1] for t in node.tasks.values())

    def predicate(task: TaskInfo, node: NodeInfo) -> None:
        max_pods = node.allocatable.scalars.get("pods")
        if max_pods is not None and max_pods <= len(node.tasks):
            raise _unschedulable("node(s) pod number exceeded")
        if node.unschedulable and not any(
            tolerates(t, _UNSCHEDULABLE_TAINT) for t in task.tolerations
        ):
            raise _unschedulable(
                "node(s) were unschedulable", FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE
            )
        if (
            affinity_on
            and (task.node_selector or task.affinity)
            and not matches_node_affinity(task, node)
        ):
            raise _unschedulable(
                "node(s) didn't match Pod's node affinity/selector",
                FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE,
            )
        if taints_on and node.taints:
            taint = untolerated_taint(task.tolerations, node.taints)
            if taint is not None:
                raise _unschedulable(
                    f"node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value')}}}",
                    FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE,
                )
        if may_conflict(task, node):
            check_pod_affinity(task, node, anywhere)
        if domains is not None:
            wide = domains()
            if wide is not None:
                wide.check(task, node)

    return predicate
