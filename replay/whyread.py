"""What ``tide audit why POD`` reads of a log, and no more (issue 26).

The answer folds a World for the why-not part (:class:`replay.whynot.WhyNot`) and the
bind views (:class:`replay.bindview.BindFold`), and it used to fold it over the pod's
whole life: on a day's log, hours of records, nearly all of which only moved the World
(``World.apply`` was 57 % of the profile). Those folds read the World only at some
records, the *moments*; between two moments a record changes nothing of the answer but
the World, and the World at the next moment is the one a checkpoint at or before it
holds. So :func:`fold_why` folds from one moment to the next, and where the gap holds a
checkpoint far enough on (:data:`LOAD_COST`) it loads that checkpoint instead of
folding the gap: the same World, hence the same answer as a fold from offset 0.

The moments, all read from indexes (:class:`Plan`):

* every record filed under the pod's name (``podname:NAME``: its watch records, the
  decisions about it, their effects, its samples) and every ``config.applied`` (they
  change which task the pod is, whether it is Pending, the policy in force);
* the records the answer's decisions name as their cause (a trigger, a sample), and the
  causes of the decisions about other pods that name it (a pressure round's plan);
* while a task of the pod is in the World: the triggers that evicted pods of its job
  (the TDM "was a candidate but was not evicted" sentence), the pressure decisions that
  start a cooldown on its node, and every record while such a cooldown is held (the
  "was cooling down" sentence);
* every record while the pod is Pending or one of its waits is open (the wait's
  stretches read the World at each session).

A preemption that nominated the pod reads node deletions anywhere in the log: then the
log is folded without gaps, as before. The gaps are chosen at *evaluation points* (the
start, after each moment, at each checkpoint position): there the fold knows the World
exactly and can say which of the moments above lie ahead; past the last of them, with no
wait open, nothing can change and the fold stops.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field

from projections.world import World
from replay.bindview import BindFold, with_views
from replay.explain import Answer
from replay.nomination import nomination_answers
from replay.streamed import WhyFold
from streams.events import DECISION_TYPES, Event
from streams.payloads import as_decision, as_evict, as_watch, pressure_evidence, tdm_evidence

#: records: folding fewer than this many is cheaper than loading a checkpoint (a 30,000-pod
#: World loads in about the time ~30,000 records fold); only the cost depends on it
LOAD_COST = 20_000


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

    def next_moment(self, position: int) -> int | None:
        """The first static moment at or after ``position``."""
        i = bisect.bisect_left(self.moments, position)
        return self.moments[i] if i < len(self.moments) else None

    def next_checkpoint(self, position: int) -> int | None:
        """The first checkpoint position after ``position``."""
        i = bisect.bisect_right(self.checkpoints, position)
        return self.checkpoints[i] if i < len(self.checkpoints) else None

    def checkpoint_within(self, low: int, high: int) -> bool:
        """Whether a checkpoint lies at a position in ``(low, high]``."""
        i = bisect.bisect_right(self.checkpoints, low)
        return i < len(self.checkpoints) and self.checkpoints[i] <= high


def _first_at(offsets: Sequence[int], position: int) -> int | None:
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
) -> Plan:
    """The :class:`Plan` of ``pod``'s answer: ``decided`` are every decision of the log,
    ``named`` the records under ``podname:NAME``, ``configs`` the ``config.applied``
    records; ``offsets_of`` gives the offsets of records by id (None: it cannot, and the
    log is then folded without gaps, as when an id is not on the log)."""
    fold = WhyFold(pod, decided)
    moments = {e.offset for e in named} | {e.offset for e in configs}
    gapless = any(_nominates(e, pod) for e in decided)
    tdm_causes: dict[str, set[str]] = {}
    cooldowns: dict[str, list[int]] = {}
    for event in decided:
        if event.type != "decision.evict":
            continue
        data = as_evict(event)
        job = tdm_evidence(data).get("job")
        if isinstance(job, str) and event.cause and _pod_key(event):
            tdm_causes.setdefault(job, set()).add(event.cause)
        if isinstance(pressure_evidence(data).get("cooldown"), dict):
            cooldowns.setdefault(str(data.get("node") or ""), []).append(event.offset)
    wanted = set(fold.needed) | {c for causes in tdm_causes.values() for c in causes}
    found = offsets_of(wanted) if wanted else {}
    if found is None or not wanted <= set(found):
        gapless = True
        found = found or {}
    moments |= {found[i] for i in fold.needed if i in found}
    tdm = {
        job: sorted(found[c] for c in causes if c in found) for job, causes in tdm_causes.items()
    }
    return Plan(
        moments=sorted(moments),
        tdm=tdm,
        cooldowns={node: sorted(offsets) for node, offsets in cooldowns.items()},
        checkpoints=sorted(p for p in checkpoints if p > 0),
        gapless=gapless,
    )


def _nominates(event: Event, pod: str) -> bool:
    if event.type != "decision.evict":
        return False
    preemptor = (as_decision(event).get("evidence") or {}).get("preemptor")
    return isinstance(preemptor, str) and _match(preemptor, pod)


class _Fold:
    """The folds of one answer over one World (swapped for a checkpoint's in a gap)."""

    def __init__(self, pod: str, decided: list[Event]) -> None:
        self.pod = pod
        self.why = WhyFold(pod, decided)
        self.binds = BindFold(decided, pod=pod, world=self.why.whynot.world)
        self.causes = {
            e.cause
            for e in decided
            if e.cause and "preemptor" in (as_decision(e).get("evidence") or {})
        }
        self.name = pod.rsplit("/", 1)[-1]
        self.kept: list[Event] = []

    @property
    def world(self) -> World:
        return self.why.whynot.world

    def feed(self, event: Event) -> None:
        self.binds.before(event)
        self.why.feed(event)
        if (
            event.type in DECISION_TYPES
            or event.id in self.causes
            or _watch_about(event, self.name)
        ):
            self.kept.append(event)

    def swap(self, world: World) -> None:
        """Fold on from ``world`` (a checkpoint's, further along) instead."""
        whynot = self.why.whynot
        whynot.world = world
        whynot.task_key = type(whynot.task_key)(self.pod)
        self.binds.world = world

    def waiting(self) -> bool:
        """Whether a wait of the pod is open or a task of it is Pending."""
        waits = self.why.whynot.waits.waits
        if waits and waits[-1].end is None:
            return True
        pending = self.world.cluster.pending
        return self.pod in pending or any(_match(k, self.pod) for k in pending)

    def horizon(self, plan: Plan, position: int) -> int | None:
        """The first offset at or after ``position`` the answer may read the World at
        (None: none); ``position`` itself when it reads every record from here (a wait,
        a held cooldown on the pod's node)."""
        if plan.gapless or self.waiting():
            return position
        ahead = [plan.next_moment(position)]
        world = self.world
        key = self.why.whynot.task_key.find(world)
        if key is not None:
            task = world.cluster.tasks[key]
            if task.job:
                ahead.append(_first_at(plan.tdm.get(task.job, ()), position))
            node = task.node_name
            if node:
                clock = world.pressure.clock
                for (name, _), held in world.pressure.cooldowns.items():
                    if name == node and (clock is None or held.until > clock):
                        return position
                ahead.append(_first_at(plan.cooldowns.get(node, ()), position))
        found = [a for a in ahead if a is not None]
        return min(found) if found else None

    def answer(self) -> tuple[list[Answer], list[str]]:
        found = sorted(
            with_views(self.why.answers(), self.binds.views())
            + nomination_answers(self.kept, self.pod),
            key=lambda a: (a.decision.at, a.decision.offset, a.decision.type != "decision.evict"),
        )
        return found, self.why.not_decided()


def _watch_about(event: Event, name: str) -> bool:
    """A watch record a nomination's outcome may read: the pod named ``name``, or a node
    deleted (as ``controller.cli.explain_cmd`` keeps them)."""
    if event.type != "k8s.watch":
        return False
    data = as_watch(event)
    resource = data.get("resource")
    if resource == "nodes":
        return data.get("event") == "DELETED"
    meta = (data.get("object") or {}).get("metadata") or {}
    return resource == "pods" and meta.get("name") == name


@dataclass
class Read:
    """What one answer read: records folded, checkpoints loaded (for the benchmark)."""

    folded: int = 0
    loaded: list[int] = field(default_factory=list)


def fold_why(
    pod: str,
    decided: list[Event],
    plan: Plan,
    *,
    records: Callable[[int], Generator[Event, None, None]],
    resume: Callable[[int], World | None],
    read: Read | None = None,
) -> tuple[list[Answer], list[str]]:
    """The answers and the non-decisions about ``pod``: the folds of
    ``controller.cli.explain_cmd._why_fold`` fed only the records from moment to moment
    of ``plan``. ``records(start)`` reads the log from an offset; ``resume(upto)`` is the
    World of the nearest good checkpoint at or before ``upto`` (or None)."""
    fold = _Fold(pod, decided)
    read = read if read is not None else Read()
    position, evaluate = 0, 0
    events = records(0)
    try:
        while True:
            if position >= evaluate:
                horizon = fold.horizon(plan, position)
                if horizon is None:
                    break  # no moment ahead, no wait open: nothing can change the answer
                if horizon - position > LOAD_COST and plan.checkpoint_within(
                    position + LOAD_COST, horizon
                ):
                    world = resume(horizon)
                    if world is not None and world.position > position:
                        read.loaded.append(world.position)
                        fold.swap(world)
                        position = world.position
                        events.close()
                        events = records(position)
                stops = [plan.next_checkpoint(position), plan.next_moment(position)]
                evaluate = min((s for s in stops if s is not None), default=1 << 62)
                if evaluate == plan.next_moment(position):
                    evaluate += 1  # once that moment is fed
            event = next(events, None)
            if event is None:
                break
            fold.feed(event)
            read.folded += 1
            position = event.offset + 1
    finally:
        events.close()
    return fold.answer()


__all__ = ["LOAD_COST", "Plan", "Read", "fold_why", "plan_for"]
