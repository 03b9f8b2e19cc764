"""The plan of one ``tide audit why POD`` answer (:mod:`replay.whyread`): the records it
always reads (its *moments*, from the log's indexes), the decisions it reads instead of
every decision of the log (:func:`narrowed`), and which of the pod's records read no
World (:func:`world_free`). Pure: the caller runs the queries and hands in their answers.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from controller.policy.pressure.candidates import PRESSURE_QOS
from projections.model import TaskStatus
from projections.pods import task_from_pod
from replay.streamed import WhyFold
from streams.events import DECISION_TYPES, Event, parse_time
from streams.payloads import as_decision, as_evict, as_watch, pressure_evidence, tdm_evidence


def _match(key: str, pod: str) -> bool:
    return key == pod or key.split("/", 1)[-1] == pod


def _pod_key(event: Event) -> str:
    d = as_decision(event)
    return f"{d.get('namespace')}/{d.get('pod')}" if d.get("pod") else ""


@dataclass
class Plan:
    """The moments of one pod's answer known before the fold (see the module docstring).

    ``moments``: the offsets always fed (sorted); ``tdm``: by job, the offsets of the
    triggers that evicted pods of that job; ``cooldowns``: by node, the offsets of the
    pressure decisions that start a cooldown there; ``checkpoints``: the positions of the
    log's checkpoints (sorted); ``gapless``: fold every record (a nomination).
    """

    moments: list[int]
    tdm: dict[str, list[int]] = field(default_factory=dict)
    cooldowns: dict[str, list[int]] = field(default_factory=dict)
    checkpoints: list[int] = field(default_factory=list)
    gapless: bool = False
    #: the records under the pod's name, by offset (some need no World: :func:`world_free`)
    named: dict[int, Event] = field(default_factory=dict)
    #: by node, (offset, until) of each pressure decision that starts a cooldown there
    held: dict[str, list[tuple[int, datetime]]] = field(default_factory=dict)
    #: the jobs and nodes whose TDM evictions and cooldowns ``decided`` holds all of (None:
    #: every decision of the log was read); a task of another reads every record
    jobs: frozenset[str] | None = None
    nodes: frozenset[str] | None = None
    #: the offsets of the records the World must be exact at (every record before them
    #: folded): the sessions of the pod's binds (a bind view replays one) and the pod's
    #: records that are not :func:`world_free` (they may make it Pending: a wait opens)
    full: list[int] = field(default_factory=list)
    #: the ids of the moments not under the pod's name (the causes the answer reads, the
    #: triggers of its jobs' TDM evictions): a local fold reads them by id
    ids: frozenset[str] = frozenset()

    def knows(self, job: str, node: str) -> bool:
        """Whether the moments of a task of ``job`` on ``node`` are all in the plan."""
        return (self.jobs is None or not job or job in self.jobs) and (
            self.nodes is None or not node or node in self.nodes
        )

    def next_moment(self, position: int) -> int | None:
        """The first static moment at or after ``position``."""
        i = bisect.bisect_left(self.moments, position)
        return self.moments[i] if i < len(self.moments) else None

    def next_full(self, position: int) -> int | None:
        """The first offset at or after ``position`` the World must be exact at."""
        return first_at(self.full, position)

    def next_checkpoint(self, position: int) -> int | None:
        """The first checkpoint position after ``position``."""
        i = bisect.bisect_right(self.checkpoints, position)
        return self.checkpoints[i] if i < len(self.checkpoints) else None

    def last_checkpoint(self, low: int, high: int) -> int | None:
        """The last checkpoint position in ``(low, high]``, if any."""
        i = bisect.bisect_right(self.checkpoints, high)
        return self.checkpoints[i - 1] if i and self.checkpoints[i - 1] > low else None

    def checkpoint_within(self, low: int, high: int) -> bool:
        """Whether a checkpoint lies at a position in ``(low, high]``."""
        i = bisect.bisect_right(self.checkpoints, low)
        return i < len(self.checkpoints) and self.checkpoints[i] <= high


def first_at(offsets: Sequence[int], position: int) -> int | None:
    """The first of sorted ``offsets`` at or after ``position``."""
    i = bisect.bisect_left(offsets, position)
    return offsets[i] if i < len(offsets) else None


def plan_for(
    pod: str,
    decided: Sequence[Event],
    *,
    named: Iterable[Event],
    configs: Iterable[Event],
    offsets_of: Callable[[set[str]], dict[str, int] | None],
    checkpoints: Iterable[int],
    known: tuple[frozenset[str], frozenset[str]] | None = None,
) -> Plan:
    """The :class:`Plan` of ``pod``'s answer: ``decided`` are every decision of the log,
    ``named`` the records under ``podname:NAME``, ``configs`` the ``config.applied``
    records; ``offsets_of`` gives the offsets of records by id (None: it cannot, and the
    log is then folded without gaps, as when an id is not on the log)."""
    fold = WhyFold(pod, decided)
    by_offset = {e.offset: e for e in named}
    moments = set(by_offset) | {e.offset for e in configs}
    gapless = any(_nominates(e, pod) for e in decided)
    tdm_causes: dict[str, set[str]] = {}
    cooldowns: dict[str, list[int]] = {}
    held: dict[str, list[tuple[int, datetime]]] = {}
    for event in decided:
        if event.type != "decision.evict":
            continue
        data = as_evict(event)
        job = tdm_evidence(data).get("job")
        if isinstance(job, str) and event.cause and _pod_key(event):
            tdm_causes.setdefault(job, set()).add(event.cause)
        cooldown = pressure_evidence(data).get("cooldown")
        if isinstance(cooldown, dict):
            node = str(data.get("node") or "")
            cooldowns.setdefault(node, []).append(event.offset)
            held.setdefault(node, []).append((event.offset, _until(cooldown.get("until"), event)))
    wanted = set(fold.needed) | {c for causes in tdm_causes.values() for c in causes}
    found = offsets_of(wanted) if wanted else {}
    if found is None or not wanted <= set(found):
        gapless = True
        found = found or {}
    moments |= {found[i] for i in fold.needed if i in found}
    tdm = {
        job: sorted(found[c] for c in causes if c in found) for job, causes in tdm_causes.items()
    }
    binds = [e for e in decided if e.type == "decision.bind" and _match(_pod_key(e), pod)]
    sessions = {e.cause for e in binds if e.cause}
    full = {o for o, e in by_offset.items() if not world_free(e)}
    full |= {found[c] for c in sessions if c in found}
    return Plan(
        moments=sorted(moments),
        tdm=tdm,
        cooldowns={node: sorted(offsets) for node, offsets in cooldowns.items()},
        checkpoints=sorted(p for p in checkpoints if p > 0),
        gapless=gapless,
        named=by_offset,
        held=held,
        jobs=None if known is None else known[0],
        nodes=None if known is None else known[1],
        full=sorted(full),
        ids=frozenset(wanted),
    )


@dataclass(frozen=True)
class Narrowed:
    """The decisions one pod's answer reads, and the jobs and nodes they cover."""

    decided: list[Event]
    jobs: frozenset[str]
    nodes: frozenset[str]


def narrowed(
    pod: str,
    named: Sequence[Event],
    *,
    naming: Callable[[str], list[Event]],
    of_job: Callable[[str], list[Event]],
    caused: Callable[[Sequence[str]], list[Event]],
    cooling: Callable[[Sequence[str]], list[Event]],
) -> Narrowed | None:
    """Instead of every decision of the log, the ones the answer reads: the pod's own
    (``named``), the evictions that name it (a round's plan; ``naming(name)``: a superset
    of the evictions whose evidence names a pod of that bare name), the TDM evictions of
    its jobs (``of_job(job)``: a superset of those whose evidence names the job), every
    decision of the sessions that bound it (``caused``, a bind view replays them) and the
    cooldowns started on its nodes (``cooling``). None when a preemption nominated it: its
    outcome reads node deletions anywhere, so the log is read whole, as before."""
    name = pod.rsplit("/", 1)[-1]
    own = [e for e in named if e.type in DECISION_TYPES]
    found = {e.offset: e for e in own}
    for event in naming(name):
        if event.type != "decision.evict":
            continue
        if _nominates(event, pod):
            return None
        if _names(event, pod):
            found[event.offset] = event
    jobs, nodes = set(), set()
    for event in named:
        job, node = pod_of(event)
        jobs.add(job)
        nodes.add(node)
        if event.type in DECISION_TYPES:
            nodes.add(str(as_decision(event).get("node") or ""))
    jobs.discard("")
    nodes.discard("")
    for job in sorted(jobs):
        for event in of_job(job):
            if event.type == "decision.evict" and tdm_evidence(as_evict(event)).get("job") == job:
                found[event.offset] = event
    sessions = sorted({e.cause for e in own if e.type == "decision.bind" and e.cause})
    for event in caused(sessions) if sessions else []:
        found[event.offset] = event
    for event in cooling(sorted(nodes)) if nodes else []:
        found[event.offset] = event
    return Narrowed([found[o] for o in sorted(found)], frozenset(jobs), frozenset(nodes))


def _names(event: Event, pod: str) -> bool:
    """An eviction of another pod that names ``pod`` in its pressure round's plan."""
    held = (as_decision(event).get("evidence") or {}).get("round")
    plan = held.get("plan") if isinstance(held, dict) else None
    return isinstance(plan, list) and any(isinstance(p, str) and _match(p, pod) for p in plan)


def _until(value: object, event: Event) -> datetime:
    """A cooldown's end as the pressure fold reads it (an unreadable one: held for ever,
    which only costs a longer fold)."""
    try:
        return parse_time(str(value)) if value else datetime.max.replace(tzinfo=UTC)
    except ValueError:
        return datetime.max.replace(tzinfo=UTC)


def world_free(event: Event) -> bool:
    """Whether the why-not and bind folds read nothing of the World at ``event``, a record
    under the pod's name, when no wait of the pod is open and no task of it is Pending:
    a decision, an applied effect, a pod sample, a deletion, or a watch record whose pod
    is not Pending (a task is Pending after a watch record only if that record's pod is:
    an overlay only ever makes it Binding or Releasing). An effect that failed or was
    skipped may put a bind's Pending back; a Pending pod starts a wait: those need it."""
    if event.type in DECISION_TYPES or event.type in ("effect.applied", "metrics.pod"):
        return True
    if event.type != "k8s.watch":
        return False
    data = as_watch(event)
    if data.get("resource") != "pods":
        return False
    if data.get("event") == "DELETED":
        return True
    try:
        return task_from_pod(data.get("object") or {}).status != TaskStatus.PENDING
    except (KeyError, TypeError, AttributeError):
        return False


def pod_of(event: Event) -> tuple[str, str]:
    """(job, node) a watch record's pod would have as a task ("" when not a pod record;
    no node when it can be no pressure candidate)."""
    if event.type != "k8s.watch":
        return "", ""
    data = as_watch(event)
    if data.get("resource") != "pods" or data.get("event") == "DELETED":
        return "", ""
    try:
        task = task_from_pod(data.get("object") or {})
    except (KeyError, TypeError, AttributeError):
        return "", ""
    # a cooling sentence needs a pressure candidate: its QoS class is the pod's own
    return task.job, task.node_name if task.qos in PRESSURE_QOS else ""


def _nominates(event: Event, pod: str) -> bool:
    if event.type != "decision.evict":
        return False
    preemptor = (as_decision(event).get("evidence") or {}).get("preemptor")
    return isinstance(preemptor, str) and _match(preemptor, pod)


__all__ = ["Narrowed", "Plan", "first_at", "narrowed", "plan_for", "pod_of", "world_free"]
