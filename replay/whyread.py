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

**The local parts.** Most of the World is read only by the bind views (a session replayed
over every node) and by the waits (a session's predicates while the pod is Pending). The
other sentences read the *local parts*: which tasks bear the pod's name and their fields
(job, QoS, node, status, uid, the owned and evictable marks), the nodes they are on
(capacity), those nodes' usage series and pressure cooldowns, whether the pod was evicted
by pressure and not yet gone, and the configuration. Each of those is folded from records
filed under the pod's name (its watch records, the decisions about it and their effects)
or under one of its nodes (the node's watch records and samples, the decisions on it), or
from ``config.applied``: nothing else moves them. So once no record ahead needs the World
exact (:attr:`Plan.full`: the sessions of the pod's binds, its records that may make it
Pending) and no wait is open, the fold reads only those records and the moments read by id
(``local``; :func:`local_keys`): a World exact at some point and fed them alone from there
keeps its local parts exact, whatever it holds beside them. A pod that was never Pending
and never bound by tide folds from offset 0 on them alone, with no checkpoint loaded. Should
the answer come to need the World exact again after all (a wait opening with no record of
the pod saying so, a task the plan's narrow queries do not cover), it is folded again with
the World exact throughout.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import cast

from controller.policy.pressure.candidates import PRESSURE_QOS
from projections.model import TaskInfo
from projections.world import World
from replay.bindview import BindFold, with_views
from replay.explain import Answer
from replay.nomination import nomination_answers
from replay.streamed import WhyFold
from replay.whynot import COOLING_RESOURCES
from replay.whyplan import Narrowed, Plan, first_at, narrowed, plan_for, pod_of, world_free
from streams.events import DECISION_TYPES, Event
from streams.payloads import as_decision, as_watch
from streams.subjects import name_key, node_key

#: records: folding fewer than this many is cheaper than loading a checkpoint (a 30,000-pod
#: World loads in about the time ~30,000 records fold); only the cost depends on it
LOAD_COST = 20_000


def _match(key: str, pod: str) -> bool:
    return key == pod or key.split("/", 1)[-1] == pod


def _candidate_node(task: TaskInfo) -> str:
    """The node a cooling sentence may name for ``task`` ("" when it is no pressure
    candidate: :func:`replay.whynot._cooling`)."""
    return task.node_name if task.evictable and task.qos in PRESSURE_QOS else ""


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

    def _task(self) -> TaskInfo | None:
        key = self.why.whynot.task_key.find(self.world)
        return None if key is None else self.world.cluster.tasks[key]

    def local(self, plan: Plan, position: int) -> bool:
        """Whether from ``position`` on the answer reads only the World's local parts (the
        module docstring): no record ahead needs the World exact, no wait is open, no
        task of the pod is Pending, and the plan knows the moments of its task."""
        if plan.jobs is None or plan.nodes is None or plan.gapless:
            return False
        if plan.next_full(position) is not None or self.waiting():
            return False
        task = self._task()
        return task is None or plan.knows(task.job, _candidate_node(task))

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
        task = self._task()
        if task is not None:
            node = _candidate_node(task)
            if not plan.knows(task.job, node):
                return position
            if task.job:
                ahead.append(first_at(plan.tdm.get(task.job, ()), position))
            if node:
                clock = world.pressure.clock
                cooldowns = world.pressure.cooldowns
                for resource in COOLING_RESOURCES:
                    held = cooldowns.get((node, resource))
                    if held is not None and (clock is None or held.until > clock):
                        return position
                ahead.append(first_at(plan.cooldowns.get(node, ()), position))
        found = [a for a in ahead if a is not None]
        return min(found) if found else None

    def beyond(self, plan: Plan, record: Event) -> int | bool | None:
        """Where the next moment may lie once the world-free ``record`` is fed without
        the World (:func:`world_free`), judged without the World past it: the next record
        always fed, the evicting triggers of the jobs and the cooldowns of the nodes the
        pod's task has now or may have after it; None: no moment ahead; False: a cooldown
        may be held on such a node at ``record`` (the World is read from there on)."""
        task = self._task()
        job, node = pod_of(record)
        jobs, nodes = {job}, {node}
        if record.type in DECISION_TYPES:  # a bind puts the task on its node
            nodes.add(str(as_decision(record).get("node") or ""))
        if task is not None:
            jobs.add(task.job)
            nodes.add(_candidate_node(task))
        jobs.discard("")
        nodes.discard("")
        if not all(plan.knows(j, "") for j in jobs) or not all(plan.knows("", n) for n in nodes):
            return False
        for name in sorted(nodes):
            if any(o < record.offset and u > record.at for o, u in plan.held.get(name, ())):
                return False
        ahead = [plan.next_moment(record.offset + 1)]
        ahead += [first_at(plan.tdm.get(j, ()), record.offset + 1) for j in sorted(jobs)]
        ahead += [first_at(plan.cooldowns.get(n, ()), record.offset + 1) for n in sorted(nodes)]
        found = [a for a in ahead if a is not None]
        return min(found) if found else None

    def note(self, record: Event) -> None:
        """Feed a world-free record to the folds without folding it into the World."""
        whynot = self.why.whynot
        world = whynot.world
        whynot.world = cast(World, _Unchanged(world))
        try:
            self.feed(record)
        finally:
            whynot.world = world

    def answer(self) -> tuple[list[Answer], list[str]]:
        found = sorted(
            with_views(self.why.answers(), self.binds.views())
            + nomination_answers(self.kept, self.pod),
            key=lambda a: (a.decision.at, a.decision.offset, a.decision.type != "decision.evict"),
        )
        return found, self.why.not_decided()


class _Unchanged:
    """A World that reads as ``world`` and folds nothing (:meth:`_Fold.note`)."""

    def __init__(self, world: World) -> None:
        self._world = world

    def apply(self, event: Event) -> None:
        """Fold nothing: the World is taken from a checkpoint past ``event`` next."""

    def __getattr__(self, name: str) -> object:
        return getattr(self._world, name)


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
    #: world-free records fed without the World (a checkpoint past them loaded next)
    noted: int = 0
    #: records fed to the local parts only, and the offset that local fold began at
    local: int = 0
    local_from: int | None = None
    #: the local fold gave up (a wait opened, or a task the plan does not cover): the
    #: answer was folded again with every record, and the figures above are that fold's
    again: bool = False

    def restart(self) -> None:
        """Count a fold again, from nothing (the local fold gave up)."""
        self.folded, self.noted, self.local, self.local_from = 0, 0, 0, None
        self.loaded.clear()
        self.again = True


class _Exact(Exception):
    """The local parts no longer answer: fold the answer again, the World kept exact."""


def fold_why(
    pod: str,
    decided: list[Event],
    plan: Plan,
    *,
    records: Callable[[int], Generator[Event, None, None]],
    resume: Callable[[int], World | None],
    local: Callable[[int], Generator[Event, None, None]] | None = None,
    read: Read | None = None,
) -> tuple[list[Answer], list[str]]:
    """The answers and the non-decisions about ``pod``: the folds of
    ``controller.cli.explain_cmd._why_fold`` fed only the records from moment to moment
    of ``plan``. ``records(start)`` reads the log from an offset; ``resume(upto)`` is the
    World of the nearest good checkpoint at or before ``upto`` (or None); ``local(start)``
    reads the records the World's local parts fold from an offset (:func:`local_keys`,
    the ``config.applied`` records and the records of ``plan.ids``; None: the World is
    kept exact throughout)."""
    read = read if read is not None else Read()
    if local is not None:
        try:
            return _fold_why(_Fold(pod, decided), plan, records, resume, local, read)
        except _Exact:
            read.restart()
    return _fold_why(_Fold(pod, decided), plan, records, resume, None, read)


def local_keys(pod: str, plan: Plan) -> list[str]:
    """The subject keys of the records the World's local parts fold, but for the
    ``config.applied`` records and the moments read by id: the pod's name and its nodes."""
    return [name_key(pod), *(node_key(n) for n in sorted(plan.nodes or ()))]


def _fold_why(
    fold: _Fold,
    plan: Plan,
    records: Callable[[int], Generator[Event, None, None]],
    resume: Callable[[int], World | None],
    local: Callable[[int], Generator[Event, None, None]] | None,
    read: Read,
) -> tuple[list[Answer], list[str]]:
    position, evaluate = 0, 0
    events = records(0)
    try:
        while True:
            if position >= evaluate:
                horizon = fold.horizon(plan, position)
                if horizon is None:
                    break  # no moment ahead, no wait open: nothing can change the answer
                if local is not None and fold.local(plan, position):
                    events.close()
                    events = local(position)
                    read.local_from = position
                    _fold_local(fold, plan, events, read)
                    break
                record = plan.named.get(horizon)
                if horizon > position and record is not None and world_free(record):
                    beyond = fold.beyond(plan, record)
                    if beyond is None:  # the last moment: fed, and nothing can follow
                        fold.note(record)
                        read.noted += 1
                        break
                    last = plan.last_checkpoint(horizon, beyond) if beyond is not False else None
                    world = (
                        resume(beyond) if last is not None and last - position > LOAD_COST else None
                    )
                    if world is not None and world.position > horizon:
                        fold.note(record)
                        read.noted += 1
                        read.loaded.append(world.position)
                        fold.swap(world)
                        position = evaluate = world.position
                        events.close()
                        events = records(position)
                        continue
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


def _fold_local(fold: _Fold, plan: Plan, events: Generator[Event, None, None], read: Read) -> None:
    """Feed the records of the local parts until no moment lies ahead (:class:`_Exact`
    when the answer comes to need the World exact again)."""
    for event in events:
        fold.feed(event)
        read.local += 1
        position = event.offset + 1
        if not fold.local(plan, position):
            raise _Exact
        if fold.horizon(plan, position) is None:
            return


__all__ = [
    "LOAD_COST",
    "Narrowed",
    "Plan",
    "Read",
    "fold_why",
    "local_keys",
    "narrowed",
    "plan_for",
]
