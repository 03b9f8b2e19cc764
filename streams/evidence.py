"""The evidence decisions carry, as types: what a reader of a decision may ask of it.

A decision's ``evidence`` stays an open mapping on the log (:data:`Evidence`: plugins and
actions explain themselves freely, and :data:`EvidenceDict` is what they build it as), but
every evidence another module *reads back* is declared here as a
:class:`~typing.TypedDict`, with the keys and types its writer in :mod:`controller.policy`
gives it. A decision's evidence, and each part of it a reader may find missing, is
``total=False``: an imported record, or one written by an older tide, may lack any key, so
readers use ``.get`` and keep their fallbacks (the parts the writers build whole, such as
:class:`VictimEvidence`, declare their keys required).

* pressure evictions (:mod:`controller.policy.pressure`): :class:`PressureEvidence` (what
  :mod:`projections.pressure` and the metrics fold read), the faulty pods'
  :class:`FaultyOomEvidence` and :class:`MemoryLeakEvidence`, and the taints'
  :class:`TaintEvidence` / :class:`UntaintEvidence`;
* TDM window evictions (:mod:`controller.policy.plugins.tdm`): :class:`TdmEvidence`, with
  the job's :class:`TdmBudgetEvidence` and the victim's :class:`TdmOrderEvidence`;
* the actions: :class:`PreemptEvidence` (``preempt`` / ``tdm-preempt``) and
  :class:`AllocateEvidence` (``allocate``, from allocate and backfill).

A reader reaches them through one accessor per evidence, in :mod:`streams.payloads` beside
the payloads they read (``tdm_evidence(payload)``, ``preempt_evidence(payload)``…: a
``cast``, the dict itself, nothing copied), or through ``evidence_of`` for the evidence as
a whole (shown, not read by key). This module imports nothing of tide's: the payloads
import it, and :mod:`streams.payloads` re-exports every name, so its importers need not
know this module.
"""

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

# no ``from __future__ import annotations``: on 3.11 it hides NotRequired from TypedDict

Evidence = Mapping[str, object]
"""A decision's evidence: open JSON; the keys others read are declared below."""

EvidenceDict = dict[str, Any]
"""A decision's evidence as its writer builds it (open JSON, filled key by key)."""


# -- pressure evictions (controller.policy.pressure) ----------------------------------------


class VictimEvidence(TypedDict):
    """A pressure victim's own numbers (``cpu_milli`` and ``memory`` are its usage)."""

    qos: str
    priority: int
    cpu_milli: float
    memory: float
    started: str | None
    oom_kills: int


class ReserveEvidence(TypedDict):
    """Room held for an LS pod's replacement until ``until`` (BE pods may not use it)."""

    cpu_milli: float
    memory: float
    until: str


class RoundEvidence(TypedDict):
    """A pressure round: its plan, this batch, and when the next batch is due (or None)."""

    id: str
    resource: str
    batch: int
    batches: NotRequired[int]
    plan: list[str]
    next_at: str | None


class CooldownEvidence(TypedDict):
    """Until when no new round of ``resource`` may start, and what verifies the round."""

    resource: str
    until: str
    seconds: float
    factor: float
    configured: float
    threshold: float
    margin: float
    capacity: float


class LimitsEvidence(TypedDict):
    """The rate limits a pressure batch was chosen under."""

    max_per_batch: int
    max_per_minute: int
    in_window: int


class PredictionEvidence(TypedDict, total=False):
    """A predictive round's forecast (the metrics fold judges it later)."""

    current: float
    baseline: float
    baseline_at: str
    trend_per_minute: float
    predicted: float
    prediction_window: float
    trend_window: float
    advance_threshold: float
    target_percent: float
    eta_seconds: float | None


class PressureEvidence(TypedDict, total=False):
    """The evidence keys of a pressure ``decision.evict`` that other modules read.

    Written by ``controller.policy.pressure``; folded by :mod:`projections.pressure` (``round``,
    ``cooldown``, ``taint_until``, ``reserve``, ``owner``) and by the metrics fold
    (``victim``, ``round``, ``resource``, ``capacity``, ``prediction``).
    """

    pressure: float
    threshold: float
    streak: list[float]
    level: float
    resource: str
    usage: float
    capacity: float
    target: float
    round: RoundEvidence
    cooldown: CooldownEvidence
    limits: LimitsEvidence
    victim: VictimEvidence
    owner: str
    taint_until: str
    reserve: ReserveEvidence
    prediction: PredictionEvidence


class FaultyOomEvidence(PressureEvidence, total=False):
    """A ``faulty-oom`` eviction: the pod's last ``oom_count_threshold`` terminations were
    all OOMKilled (``last_terminations``, oldest first); ``found`` lists every faulty pod
    of the check, the round's ``plan`` the ones taken."""

    oom_count_threshold: int
    oom_kills: int
    last_terminations: list[str]
    found: list[str]


class LeakSampleEvidence(TypedDict, total=False):
    """One end of a memory leak: the pod's memory (bytes) ``at`` a time."""

    at: str
    memory: float


class MemoryLeakEvidence(PressureEvidence, total=False):
    """A ``faulty-memory-leak`` eviction: memory grew from ``first`` to ``last``
    (``growth`` times) within ``memory_leak_duration`` seconds."""

    memory_leak_duration: float
    first: LeakSampleEvidence
    last: LeakSampleEvidence
    growth: float
    found: list[str]


class TaintEvidence(TypedDict):
    """A pressure ``decision.taint``: held until ``until``, for the ``evictions`` listed."""

    until: str
    evictions: list[str]


class UntaintEvidence(TypedDict):
    """A pressure ``decision.untaint``: the taint held since ``tainted_at`` until ``until``."""

    tainted_at: str
    until: str


# -- disruption budgets (controller.policy.framework.disruption) -----------------------------


class DisruptionBudgetEvidence(TypedDict):
    """A PodDisruptionBudget covering a victim, and the disruptions it allowed then."""

    budget: str
    allowed: int


class HeldEvidence(TypedDict):
    """A candidate a PodDisruptionBudget (``budget``) kept from being evicted."""

    pod: str
    budget: str


# -- TDM window evictions (controller.policy.plugins.tdm) -----------------------------------


class TdmBudgetEvidence(TypedDict, total=False):
    """The job's eviction budget a TDM eviction was counted against (``Budget.evidence``).

    ``form`` is the annotation read (``none`` without one) and ``value`` its text;
    ``max_evict`` how many of the job's tasks one evict period may take. ``limit`` is
    the parsed annotation, ``error`` why it was unusable; the ``used_*`` counts and
    ``held_by_disruption_budgets`` appear only when they apply.
    """

    form: str
    value: str
    total: int
    running: int
    final: int
    max_evict: int
    limit: int
    error: str
    held_by_disruption_budgets: list[HeldEvidence]
    used_in_other_zones: int
    used_this_period: int


class SkippedJobEvidence(TdmBudgetEvidence, total=False):
    """A job of the zone whose budget was unusable (its ``error`` says why): not evicted."""

    job: str


class TdmOrderEvidence(TypedDict, total=False):
    """Where the victim stood among the job's ``candidates`` (``position``, from 1), and
    the order they were taken ``by``."""

    position: int
    candidates: int
    by: str


class TdmEvidence(TypedDict, total=False):
    """A TDM eviction (``tdm-window-closed``): revocable ``zone``'s ``window`` closed.

    Read by :mod:`projections.history` (the zone its decision history keys on) and by the
    explanations (the budget, the order, the period).
    """

    zone: str
    window: str
    timezone: str
    job: str
    budget: TdmBudgetEvidence
    order: TdmOrderEvidence
    evict_period: str
    evict_timer: str
    last_eviction: str | None
    disruption_budgets: list[DisruptionBudgetEvidence]
    skipped_jobs: list[SkippedJobEvidence]


# -- the actions (controller.policy.actions) -------------------------------------------------


class PreemptCandidateEvidence(TypedDict):
    """One of the best three nodes a topology-aware preemption dry-ran (higher is better
    on each level: the scores are negated)."""

    node: str
    highest_priority: int
    priority_sum: int
    victims: int
    earliest_start: float


# ``for`` is a keyword: the key an explanation also accepts for the preemptor is declared
# in the functional form (no writer of tide's sets it; an imported record may)
_PreemptorAlias = TypedDict("_PreemptorAlias", {"for": str}, total=False)


class PreemptEvidence(_PreemptorAlias, total=False):
    """A ``preempt`` / ``tdm-preempt`` eviction: ``preemptor`` (``preemptor_uid``, its
    ``priority``) is ``nominated`` to the victim's ``node``, found in ``phase`` by the
    ``normal`` or ``topology-aware`` search (the latter adds its best ``candidates``).

    ``zone`` is read by the ``tdm-preempt`` explanation; tide's preempt action does not
    write it (an imported record may).
    """

    preemptor: str
    preemptor_uid: str
    priority: int
    phase: str
    mode: Literal["normal", "topology-aware"]
    node: str
    nominated: str
    candidates: list[PreemptCandidateEvidence]
    disruption_budgets: list[DisruptionBudgetEvidence]
    zone: str


class AllocateEvidence(TypedDict, total=False):
    """An ``allocate`` bind: the best-scoring of ``feasible`` nodes for ``job`` in
    ``queue``, on ``idle`` resources (allocate; backfill writes no ``gradient`` and marks
    its ``best_effort`` binds)."""

    node: str
    score: float
    gradient: Literal["idle", "future-idle"]
    feasible: int
    job: str
    queue: str
    best_effort: bool
