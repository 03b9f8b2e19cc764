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

Module layout: :mod:`.args` (the switches and their validation), :mod:`.filters` (the
predicate: the checks above on one pod and one node, the hostname inter-pod terms
included), :mod:`.podaffinity` (terms over wider topology domains), :mod:`.keys` (what
the session may memoise the answers by), :mod:`.plugin` (the session callbacks). This
package exposes the plugin-module contract of ``controller.policy.framework.plugin``:
``NAME``, ``parse_args(raw) -> PredicatesArgs`` and ``build(args, ctx) ->
PredicatesPlugin``.
"""

from __future__ import annotations

from controller.policy.plugins.predicates.args import NAME, PredicatesArgs, parse_args
from controller.policy.plugins.predicates.filters import (
    UNSCHEDULABLE_TAINT,
    Anywhere,
    check_pod_affinity,
    make_predicate,
    matches_node_affinity,
    untolerated_taint,
)
from controller.policy.plugins.predicates.keys import (
    MAX_SELECTING_TERMS,
    scheduling_key,
    session_key,
)
from controller.policy.plugins.predicates.plugin import PredicatesPlugin, build

__all__ = [
    "MAX_SELECTING_TERMS",
    "NAME",
    "UNSCHEDULABLE_TAINT",
    "Anywhere",
    "PredicatesArgs",
    "PredicatesPlugin",
    "build",
    "check_pod_affinity",
    "make_predicate",
    "matches_node_affinity",
    "parse_args",
    "scheduling_key",
    "session_key",
    "untolerated_taint",
]
