"""The ``predicates`` plugin: may this pod go on this node at all (resources aside)?

Upstream: volcano-sh/volcano pkg/scheduler/plugins/predicates/predicates.go,
``PredicatesPlugin.OnSessionOpen``, which runs Kubernetes' filter plugins. Resource fit is the
allocate action's business (it checks ``init_resreq ≤ future_idle`` itself); this plugin checks, in
Kubernetes' filter order:

* the pod-count limit (``allocatable.pods`` ≤ tasks on the node → Unschedulable);
* ``spec.unschedulable`` (unless the pod tolerates ``node.kubernetes.io/unschedulable``);
* ``nodeSelector`` and required node affinity (``nodeSelectorTerms``: terms are OR'ed,
  expressions AND'ed; ``In``/``NotIn``/``Exists``/``DoesNotExist``/``Gt``/``Lt`` and the
  ``metadata.name`` field);
* taints with effect ``NoSchedule``/``NoExecute`` against the tolerations (``Exists``
  and ``Equal``; an empty toleration key with ``Exists`` tolerates every taint).

* required inter-pod affinity and anti-affinity (``requiredDuringScheduling...``) with
  topology key ``kubernetes.io/hostname`` (the node is the domain): every affinity term
  of the pod must match a pod on the node (unless no pod anywhere matches and the pod
  matches its own term, Kubernetes' rule for the first pod of a group) — else
  UnschedulableAndUnresolvable; no anti-affinity term of the pod may match a pod on the
  node, and no anti-affinity term of a pod on the node may match the pod (symmetry) —
  else Unschedulable, which a preemption may resolve. Pods Releasing in the session are
  ignored, as Volcano's predicates plugin does, so evicting a conflicting pod clears the
  way. Label selectors: ``matchLabels`` and ``matchExpressions`` (``In``, ``NotIn``,
  ``Exists``, ``DoesNotExist``); namespaces: the term's ``namespaces``, else the pod's
  own (a ``namespaceSelector`` of ``{}`` means every namespace, any other is not
  modelled and reads as the pod's own). Terms with any other topology key (a zone, a
  custom node label) are checked over the node's whole domain by
  :mod:`controller.policy.plugins.predicates.podaffinity`.

Node ports, volumes, topology spread and DRA are not modelled. A node without an
``allocatable.pods`` value has no pod-count limit here (Volcano would read 0).

The plugin also answers what-if questions on scratch node copies
(:mod:`controller.policy.framework.simulate`): its simulate predicate is the same check run on
the copy, so a pod-count limit or an anti-affinity conflict sees the victims a dry run
took off. It registers no simulate add / remove hooks: the checks read the copy's tasks
directly.

Arguments (Volcano's keys, booleans, default true): ``predicate.NodeAffinityEnable``,
``predicate.TaintTolerationEnable``. Other ``predicate.*`` keys are accepted and ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from controller.policy.framework.errors import ConfigError
from controller.policy.framework.matching import match_term, tolerates
from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.points import FitError, FitStatus
from controller.policy.framework.session import Session
from controller.policy.framework.simulate import Scratch
from controller.policy.plugins.predicates.podaffinity import (
    HOSTNAME,
    Domains,
    term_matches,
    wide_terms_in,
)
from projections.model import JSON, NodeInfo, TaskInfo, TaskStatus

NAME = "predicates"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_BLOCKING = frozenset({"NoSchedule", "NoExecute"})
_UNSCHEDULABLE_TAINT = {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}


@dataclass(frozen=True)
class PredicatesArgs:
    node_affinity: bool = True
    taint_toleration: bool = True


def parse_args(raw: Mapping[str, Any]) -> PredicatesArgs:
    """Read the boolean switches; a non-boolean value is an error naming the key."""
    values = {}
    for key, attr in (
        ("predicate.NodeAffinityEnable", "node_affinity"),
        ("predicate.TaintTolerationEnable", "taint_toleration"),
    ):
        if key in raw:
            value = raw[key]
            if not isinstance(value, bool):
                raise ConfigError(f"{NAME}.{key}", value, "must be true or false")
            values[attr] = value
    return PredicatesArgs(**values)


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


def _no_domains() -> Domains | None:
    return None


class PredicatesPlugin:
    name = NAME

    def __init__(self, args: PredicatesArgs) -> None:
        self.args = args
        self.predicate = make_predicate(args)
        self.domains: Callable[[], Domains | None] = _no_domains

    def simulate_predicate(self, scratch: Scratch, task: TaskInfo, node: NodeInfo) -> None:
        """The predicate on a scratch node copy (``node`` is the copy).

        Mirrors the ``AddSimulatePredicateFn`` registration of volcano-sh/volcano
        ``pkg/scheduler/plugins/predicates/predicates.go`` (which re-runs the node-state
        filters on the simulated node); here every check is re-run, the pod count being
        the one that depends on the tasks the scratch moved.
        """
        domains = self.domains()
        if domains is None:
            self.predicate(task, node)
            return
        # the other nodes of a domain are read from the scratch's copies where it has them
        domains.overlay = {name: sim.node for name, sim in scratch.nodes.items()}
        try:
            self.predicate(task, node)
        finally:
            domains.overlay = {}

    def on_session_open(self, ssn: Session) -> None:
        def anywhere(term: Mapping[str, Any], task: TaskInfo) -> bool:
            # only asked for a pod with an affinity term that no pod on its node matches
            return any(
                term_matches(term, task, other)
                for node in ssn.view.node_list
                for other in node.tasks.values()
                if other.status != TaskStatus.RELEASING and other.key != task.key
            )

        # found on first use, so a session that searches no node pays nothing
        owners: list[list[TaskInfo]] = []
        wide: list[Domains | None] = []

        def owners_of() -> list[TaskInfo]:
            if not owners:
                owners.append(_owners(ssn))
            return owners[0]

        def domains() -> Domains | None:
            if not wide:
                found, anti_keys = wide_terms_in(owners_of())
                wide.append(Domains(ssn.view.nodes, anti_keys) if found else None)
            return wide[0]

        refusing: list[bool] = []

        def pods_refuse() -> bool:
            # every pod a session can put on a node is on a session node or Pending: an
            # owner (and the owners keep every affinity object)
            if not refusing:
                refusing.append(any(_required(t, "podAntiAffinity") for t in owners_of()))
            return refusing[0]

        base = session_key(ssn, owners_of)

        def key(task: TaskInfo) -> bytes | None:
            # a wide term makes a node's answer depend on other nodes: no memo, no fast lane
            return None if domains() is not None else base(task)

        self.domains = domains
        self.predicate = make_predicate(self.args, anywhere, domains, pods_refuse)
        ssn.add_predicate_fn(NAME, self.predicate, key=key)
        ssn.add_simulate_predicate_fn(NAME, self.simulate_predicate)

    def on_session_close(self, ssn: Session) -> None:
        del ssn
        self.domains = _no_domains


def build(args: PredicatesArgs, ctx: PluginContext) -> PredicatesPlugin:
    del ctx
    return PredicatesPlugin(args)
