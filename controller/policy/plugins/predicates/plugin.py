"""The ``predicates`` plugin's session side: what it registers when a session opens.

The predicate (:mod:`controller.policy.plugins.predicates.filters`) with the session's
answers to "does any pod match this term", the wider-domain check and whether any pod
can refuse by anti-affinity, all found on first use; its memo key
(:mod:`controller.policy.plugins.predicates.keys`, none when a wider-domain term makes a
node's answer depend on other nodes); and the same check on scratch node copies for
what-if questions (:mod:`controller.policy.framework.simulate`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from controller.policy.framework.plugin import PluginContext
from controller.policy.framework.session import Session
from controller.policy.framework.simulate import Scratch
from controller.policy.plugins.predicates.args import NAME, PredicatesArgs
from controller.policy.plugins.predicates.filters import _required, make_predicate
from controller.policy.plugins.predicates.keys import _owners, session_key
from controller.policy.plugins.predicates.podaffinity import Domains, term_matches, wide_terms_in
from projections.model import NodeInfo, TaskInfo, TaskStatus


def _no_domains() -> Domains | None:
    return None


class PredicatesPlugin:
    """Registers the predicate, its memo key and its simulate form when a session opens."""

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
    """The plugin for validated ``args``."""
    del ctx
    return PredicatesPlugin(args)
