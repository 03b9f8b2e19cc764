"""Every deliberate departure of the preempt and backfill actions from upstream Volcano.

Rows ``(topic, Volcano, tide, why)``; ``scripts/readme_tables.py`` renders them into the
docs/differences.md (a test keeps the two equal). Each row is also said in the docstring of the code
that implements it (:mod:`controller.policy.actions.preempt`, :mod:`~.topology`, :mod:`~.victims`,
:mod:`projections.nominations`, :mod:`controller.policy.actions.backfill`).
"""

from __future__ import annotations

DIFFERENCES: tuple[tuple[str, str, str, str], ...] = (
    (
        "Candidate offset",
        "the topology-aware candidate search starts at a random node",
        "it starts at `blake2b(preemptor uid, trigger id) mod n` in the node search's order",
        "a decision must be a pure function of the log; the hash still spreads preemptors",
    ),
    (
        "Candidate set",
        "racing workers stop once `numCandidates` are found, so which nodes are candidates "
        "depends on scheduling",
        "the first `numCandidates` found in visiting order; dry runs go in batches of "
        "`topologyAwarePreemptWorkerNum` and an overshooting batch is cut back, so 1 and 16 "
        "workers give the same answer",
        "parallel work must give the serial answer",
    ),
    (
        "No fit after every victim",
        "a node where the preemptor still does not fit after removing every candidate victim "
        "(e.g. the queue's capability) becomes a candidate and its victims are evicted",
        "such a node is not a candidate; nothing is evicted there",
        "the seed: a candidate is a node where the preemptor fits once its victims are gone "
        "(normal preemption already rolls back in that case)",
    ),
    (
        "First scoring level",
        "the priority of the first victim in reprieve order, which is not always the highest",
        "the highest `spec.priority` among the node's victims",
        "the seed: minimise the highest victim priority",
    ),
    (
        "Last tie",
        "after the four levels, the first node of a Go map (random)",
        "the lowest node name",
        "determinism",
    ),
    (
        "Nomination",
        "`status.nominatedNodeName` on the pod; a pipelined preemptor is forgotten at the "
        "session's end, so the next session may give its room away",
        "the nomination is in the victims' `decision.evict` evidence and folded by "
        "`projections.nominations`; allocate holds the room for the preemptor until it binds, "
        "is deleted, or its node leaves (then it may preempt again)",
        "the room freed by a preemption must go to its preemptor",
    ),
    (
        "Vanished nominated node",
        "a task nominated to a node that left the cluster may not preempt",
        "the nomination is released and the task may preempt again",
        "a node that is gone can never take the preemptor",
    ),
    (
        "Pending PodGroups",
        "jobs whose PodGroup is Pending (not enqueued) are skipped by preempt and backfill",
        "they take part, as in allocate",
        "tide has no `enqueue` action and writes no PodGroup status",
    ),
    (
        "Not modelled",
        "pre-predicates, shards, network topologies (hyper-nodes), scheduling gates, nodes "
        "allocate marked unresolvable",
        "none of these; the predicate error cache of the run plays the last part",
        "no plugin here registers them",
    ),
    (
        "Arguments",
        "an integer argument given as a float or string is ignored with a warning",
        "it stops startup with `preempt.<key>: <value>: must be an integer`",
        "invalid configuration stops startup with a message naming key and value",
    ),
)
