"""The payloads tide writes to the log, as types: one schema that mypy checks everywhere.

Every ``data`` that tide itself writes (``config.applied``, ``trigger.fired``,
``decision.*``, ``effect.*``) is declared here as a :class:`~typing.TypedDict`, with
``Literal`` vocabularies for the closed sets of words (reason codes, decision kinds,
trigger kinds, taint effects). Writers build these types, :mod:`streams.validation`
checks imported records against the same vocabularies, and readers turn an
:class:`~streams.events.Event`'s ``data`` into its payload type at one boundary, the
``as_*`` helpers below (a ``cast``: a TypedDict is a plain dict at runtime, so the codec
writes the same bytes and nothing is copied).

A decision's ``evidence`` stays an open mapping (plugins explain themselves freely), but
every evidence another module *reads back* is declared in an evidence TypedDict, with its
accessor, in :mod:`streams.evidence` (``PressureEvidence``, ``TdmEvidence``,
``PreemptEvidence``, ``AllocateEvidence``…); this module re-exports them all.

Kubernetes payloads (``k8s.watch``, ``metrics.*``) are declared by their envelopes only:
:class:`WatchPayload` (resource, event, object), :class:`NodeSample` and
:class:`PodSample` name the fields tide reads, and the API object itself stays a
:data:`RawObject` (open JSON as the API server returns it, like kopf's ``RawBody``):
tide never builds models of API objects. Nothing else in tide annotates a bare
``dict[str, Any]``; ``tests/architecture/test_payload_types.py`` counts what remains.
"""

from typing import Any, Literal, NotRequired, TypedDict, cast, get_args

from streams.events import JSON, Event
from streams.evidence import AllocateEvidence as AllocateEvidence
from streams.evidence import CooldownEvidence as CooldownEvidence
from streams.evidence import DisruptionBudgetEvidence as DisruptionBudgetEvidence
from streams.evidence import Evidence as Evidence
from streams.evidence import EvidenceDict as EvidenceDict
from streams.evidence import FaultyOomEvidence as FaultyOomEvidence
from streams.evidence import HeldEvidence as HeldEvidence
from streams.evidence import LeakSampleEvidence as LeakSampleEvidence
from streams.evidence import LimitsEvidence as LimitsEvidence
from streams.evidence import MemoryLeakEvidence as MemoryLeakEvidence
from streams.evidence import PredictionEvidence as PredictionEvidence
from streams.evidence import PreemptCandidateEvidence as PreemptCandidateEvidence
from streams.evidence import PreemptEvidence as PreemptEvidence
from streams.evidence import PressureEvidence as PressureEvidence
from streams.evidence import ReserveEvidence as ReserveEvidence
from streams.evidence import RoundEvidence as RoundEvidence
from streams.evidence import SkippedJobEvidence as SkippedJobEvidence
from streams.evidence import TaintEvidence as TaintEvidence
from streams.evidence import TdmBudgetEvidence as TdmBudgetEvidence
from streams.evidence import TdmEvidence as TdmEvidence
from streams.evidence import TdmOrderEvidence as TdmOrderEvidence
from streams.evidence import UntaintEvidence as UntaintEvidence
from streams.evidence import VictimEvidence as VictimEvidence

# -- vocabularies ------------------------------------------------------------------------

ReasonCode = Literal[
    "tdm-window-closed",
    "tdm-preempt",
    "preempt",
    "allocate",
    "low-node-utilization",
    "cpu-pressure",
    "memory-pressure",
    "oom-risk",
    "faulty-oom",
    "faulty-memory-leak",
    "predicted-pressure",
    "eviction-taint",
]
"""Why a decision was taken; the reason codes of Volcano's and Koordinator's evictors."""

DecisionKind = Literal["evict", "bind", "taint", "untaint"]
"""What a decision asks of the cluster (the suffix of its ``decision.*`` type)."""

PodDecisionKind = Literal["evict", "bind"]
NodeDecisionKind = Literal["taint", "untaint"]

TriggerKind = Literal[
    "tick",
    "window-start",
    "window-end",
    "evict-period",
    "eviction-batch",
    "untaint",
    "rescheduling",
]
"""Why the controller thought: the session tick, a TDM zone's window boundaries and evict
period, the pressure follow-ups (a later graceful batch, a taint's removal) and the
rescheduling plugin's interval."""

TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
"""The effects of a Kubernetes node taint (core/v1 ``TaintEffect``)."""

EffectType = Literal["effect.applied", "effect.failed", "effect.skipped"]

EffectReason = Literal[
    "dry-run",
    "guard-rail",
    "gone",
    "budget",
    "conflict",
    "not-found",
    "rejected",
    "unavailable",
    "unsupported",
]
"""Why an effect was skipped or failed, in a word (``tide run``'s effector writes it beside
the free-text ``error``, so a metric label and an alert can tell a guard rail's refusal
from a dry run). Skipped: ``dry-run``; ``guard-rail`` (an eviction limit refused it);
``gone`` (the pod was already gone). Failed: ``budget`` (a PodDisruptionBudget's 429);
``conflict`` (409, or a node that kept changing under the patch); ``not-found`` (404);
``rejected`` (another 4xx or a permanent 5xx); ``unavailable`` (a 5xx, a throttling 429 or
no answer, after the retries); ``unsupported`` (a decision tide does not apply)."""

#: the reasons each outcome type may carry (an applied effect carries none)
EFFECT_REASONS: dict[str, frozenset[str]] = {
    "effect.applied": frozenset(),
    "effect.skipped": frozenset({"dry-run", "guard-rail", "gone"}),
    "effect.failed": frozenset(
        {"budget", "conflict", "not-found", "rejected", "unavailable", "unsupported"}
    ),
}

REASON_CODES: frozenset[str] = frozenset(get_args(ReasonCode))
DECISION_KINDS: frozenset[str] = frozenset(get_args(DecisionKind))
TRIGGER_KINDS: frozenset[str] = frozenset(get_args(TriggerKind))
TAINT_EFFECTS: frozenset[str] = frozenset(get_args(TaintEffect))

RawObject = dict[str, Any]
"""A Kubernetes API object as the API server returns it (open JSON, read with ``.get``;
kopf's ``RawBody``). tide reads a few fields of it and never builds a model."""

RawConfig = dict[str, Any]
"""A scheduler configuration as read from YAML/JSON, before
:mod:`controller.policy.framework.config` checks it (open: it is the user's document)."""


# -- decisions -----------------------------------------------------------------------------


class Taint(TypedDict):
    """A node taint as Kubernetes writes it (``value`` may be absent on imported records)."""

    key: str
    value: NotRequired[str]
    effect: TaintEffect


class PodDecisionFields(TypedDict):
    """What a pod decision names besides its ``kind``: the pod, its node and the why."""

    namespace: str
    pod: str
    uid: str
    node: str
    reason: ReasonCode
    source: str
    evidence: Evidence


class EvictPayload(PodDecisionFields):
    """``decision.evict``: evict ``namespace/pod`` (``uid``) from ``node``.

    Pressure evictions add ``notice_at`` (= the decision's ``at``: the pod is told) and
    ``evict_at`` (the Eviction API call, after ``preStopDelaySeconds``).
    """

    kind: Literal["evict"]
    notice_at: NotRequired[str]
    evict_at: NotRequired[str]


class BindPayload(PodDecisionFields):
    """``decision.bind``: bind ``namespace/pod`` (``uid``) to ``node``."""

    kind: Literal["bind"]


class TaintPayload(TypedDict):
    """``decision.taint`` / ``decision.untaint``: put ``taint`` on ``node`` or take it off."""

    kind: NodeDecisionKind
    node: str
    taint: Taint
    reason: ReasonCode
    source: str
    evidence: Evidence


PodDecisionPayload = EvictPayload | BindPayload
DecisionPayload = EvictPayload | BindPayload | TaintPayload


# -- Kubernetes payloads: the envelopes tide reads around raw objects ----------------------

WatchResource = Literal["nodes", "pods", "podgroups", "queues", "poddisruptionbudgets"]
"""The resources tide watches (``streams.validation`` checks an imported record's)."""

WatchEventKind = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
"""A watch event's type, as the API server names it."""

WATCH_RESOURCE_NAMES: frozenset[str] = frozenset(get_args(WatchResource))
WATCH_EVENT_KINDS: frozenset[str] = frozenset(get_args(WatchEventKind))

Quantity = str | int | float
"""A Kubernetes quantity as a sample carries it (``"6400m"``, ``"53687091Ki"``, a number)."""


class ObjectMeta(TypedDict, total=False):
    """The ``metadata`` fields tide reads of an object or a sample (any may be absent)."""

    name: str
    namespace: str
    uid: str
    resourceVersion: str


class WatchPayload(TypedDict):
    """``k8s.watch``: ``event`` happened to ``object``, one of ``resource``."""

    resource: WatchResource
    event: WatchEventKind
    object: RawObject


class NodeSample(TypedDict):
    """``metrics.node``: a NodeMetrics object (``metrics.k8s.io``): the node's ``usage``."""

    metadata: ObjectMeta
    usage: dict[str, Quantity]
    timestamp: NotRequired[str]
    window: NotRequired[str]


class ContainerUsage(TypedDict):
    """One container of a PodMetrics object."""

    name: NotRequired[str]
    usage: dict[str, Quantity]


class PodSample(TypedDict):
    """``metrics.pod``: a PodMetrics object: its ``containers``' usage (summed per pod)."""

    metadata: ObjectMeta
    containers: list[ContainerUsage]
    timestamp: NotRequired[str]
    window: NotRequired[str]


# -- triggers, effects, configuration -------------------------------------------------------


class TriggerPayload(TypedDict):
    """``trigger.fired``: trigger ``trigger`` of ``kind`` fired at ``scheduled``.

    ``zone`` names a TDM zone's trigger; ``nodes`` lists the nodes a pressure follow-up
    (``eviction-batch`` / ``untaint``) is due on. Validation does not check ``kind``
    against :data:`TriggerKind` (records written elsewhere may carry others).
    """

    trigger: str
    kind: TriggerKind
    scheduled: str
    zone: NotRequired[str]
    nodes: NotRequired[list[str]]


class FollowupData(TypedDict):
    """What a pressure follow-up adds to its trigger payload."""

    nodes: list[str]


class EffectPayload(TypedDict):
    """``effect.applied`` / ``effect.failed`` / ``effect.skipped``: the outcome of decision
    ``decision``.

    ``target`` is ``namespace/pod`` or a node name; ``error`` is required on a failure and
    on a skip (why nothing was attempted: ``dry-run``, a guard rail, the pod gone).
    ``reason`` is that why in a word (:data:`EffectReason`, :data:`EFFECT_REASONS`): the
    Kubernetes effector writes it; the simulated cluster's outcomes and logs written before
    it have none.
    """

    decision: str
    kind: DecisionKind
    target: str
    error: NotRequired[str]
    reason: NotRequired[EffectReason]


class SealPayload(TypedDict):
    """``log.sealed``: its writer ended cleanly after the record whose hash is ``head``
    (``streams.seal``)."""

    head: str


class ConfigPayload(TypedDict):
    """``config.applied``: the scheduler configuration in force from now, and its origin.

    ``behaviour`` is the level of tide's rules the record was written under
    (``projections.ownership``); a record without it was written before levels existed and
    replays with level 1.
    """

    config: dict[str, object]
    source: str
    behaviour: NotRequired[int]


# -- the boundary: payload <-> Event.data -----------------------------------------------------

Payload = EvictPayload | BindPayload | TaintPayload | TriggerPayload | EffectPayload | ConfigPayload


def as_json(payload: Payload) -> JSON:
    """``payload`` as an event's ``data`` (the same dict: a TypedDict is a dict at runtime)."""
    return cast(JSON, payload)


def trigger_kind(value: str) -> TriggerKind:
    """``value`` as a :data:`TriggerKind`; ValueError when tide has no such trigger kind."""
    if value not in TRIGGER_KINDS:
        raise ValueError(f"unknown trigger kind {value!r}")
    return cast(TriggerKind, value)


def as_decision(event: Event) -> DecisionPayload:
    """The payload of a ``decision.*`` record (narrow on ``kind``)."""
    return cast(DecisionPayload, event.data)


def as_evict(event: Event) -> EvictPayload:
    """The payload of a ``decision.evict`` record."""
    return cast(EvictPayload, event.data)


def as_pod_decision(event: Event) -> PodDecisionPayload:
    """The payload of a ``decision.evict`` or ``decision.bind`` record."""
    return cast(PodDecisionPayload, event.data)


def as_bind(event: Event) -> BindPayload:
    """The payload of a ``decision.bind`` record."""
    return cast(BindPayload, event.data)


def as_taint(event: Event) -> TaintPayload:
    """The payload of a ``decision.taint`` or ``decision.untaint`` record."""
    return cast(TaintPayload, event.data)


def as_trigger(event: Event) -> TriggerPayload:
    """The payload of a ``trigger.fired`` record."""
    return cast(TriggerPayload, event.data)


def as_effect(event: Event) -> EffectPayload:
    """The payload of an ``effect.applied`` or ``effect.failed`` record."""
    return cast(EffectPayload, event.data)


def as_config(event: Event) -> ConfigPayload:
    """The payload of a ``config.applied`` record."""
    return cast(ConfigPayload, event.data)


def as_seal(event: Event) -> SealPayload:
    """The payload of a ``log.sealed`` record."""
    return cast(SealPayload, event.data)


def as_watch(event: Event) -> WatchPayload:
    """The payload of a ``k8s.watch`` record (its ``object`` stays a :data:`RawObject`)."""
    return cast(WatchPayload, event.data)


def as_node_sample(event: Event) -> NodeSample:
    """The payload of a ``metrics.node`` record."""
    return cast(NodeSample, event.data)


def as_pod_sample(event: Event) -> PodSample:
    """The payload of a ``metrics.pod`` record."""
    return cast(PodSample, event.data)


# -- the evidence accessors (their types: streams.evidence) ---------------------------------------


def evidence_of(payload: DecisionPayload) -> Evidence:
    """A decision's evidence as a whole (``{}`` when it has none), to show, not to read."""
    return payload.get("evidence") or {}


def pressure_evidence(payload: EvictPayload) -> PressureEvidence:
    """The read-back keys of a pressure eviction's evidence (``{}`` when it has none)."""
    return cast(PressureEvidence, payload.get("evidence") or {})


def faulty_oom_evidence(payload: EvictPayload) -> FaultyOomEvidence:
    """The evidence of a ``faulty-oom`` eviction (``{}`` when it has none)."""
    return cast(FaultyOomEvidence, payload.get("evidence") or {})


def memory_leak_evidence(payload: EvictPayload) -> MemoryLeakEvidence:
    """The evidence of a ``faulty-memory-leak`` eviction (``{}`` when it has none)."""
    return cast(MemoryLeakEvidence, payload.get("evidence") or {})


def tdm_evidence(payload: EvictPayload) -> TdmEvidence:
    """The read-back keys of a TDM eviction's evidence (``{}`` when it has none)."""
    return cast(TdmEvidence, payload.get("evidence") or {})


def preempt_evidence(payload: EvictPayload) -> PreemptEvidence:
    """The evidence of a ``preempt`` / ``tdm-preempt`` eviction (``{}`` when it has none)."""
    return cast(PreemptEvidence, payload.get("evidence") or {})


def allocate_evidence(payload: BindPayload) -> AllocateEvidence:
    """The evidence of an ``allocate`` bind (``{}`` when it has none)."""
    return cast(AllocateEvidence, payload.get("evidence") or {})


def taint_evidence(payload: TaintPayload) -> TaintEvidence:
    """The evidence of a pressure ``decision.taint``."""
    return cast(TaintEvidence, payload.get("evidence") or {})


def untaint_evidence(payload: TaintPayload) -> UntaintEvidence:
    """The evidence of a pressure ``decision.untaint``."""
    return cast(UntaintEvidence, payload.get("evidence") or {})
