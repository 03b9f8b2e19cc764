"""Non-decisions: why a pod was *not* evicted, or is not bound.

The log records what was decided, not what was considered and passed over. Rather than
write more to the log, this module derives the answer offline: a session is a pure
function of the log prefix, so folding the log into a fresh
:class:`~projections.world.World` up to a decision point recreates exactly the state the
controller saw there. Along one fold it notes, for the pod asked about:

* each TDM trigger of its zone where other pods of its job were evicted and it was not
  (the job's budget allowed only so many, chosen lowest priority, newest first);
* each metrics sample of its node over a pressure threshold while the node was cooling
  down from an earlier round (no new round may start during the cooldown), when the pod
  was a candidate there (a live BE pod not evicted before), and each pressure round that planned it
  without evicting it (batch limit, or enough freed);
* every time it waited (:mod:`replay.waiting`), whether it was later bound, deleted or
  is still pending: at each written scheduling session while it was Pending, the same
  predicates question as below, compressed into stretches of time with the same reason;
* at the end, if the pod is still pending: a scheduling session opened on the final
  state, whose allocate predicates are run over every node (which failed, on how many
  nodes), with the queue and gang minimum of its job.

Cost: one fold of the whole log (the same work as ``tide state``) plus one session at
the end, and one at a written session while the pod waits when what sessions see changed
since the last one asked; nothing is written. Which task the pod is (:class:`TaskKey`) is
looked up once per change of a pod of that name, not by a scan of every task at every
sample (that scan was 89 % of ``tide audit why`` on a 39,015-record log). The fold may
start from a saved state (:class:`WhyNot`'s ``world``: a World folded up to a position).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from controller.policy.loader import Policy, load_policy
from controller.policy.pressure.candidates import PRESSURE_QOS, evictable
from controller.policy.pressure.inputs import node_numbers
from projections.world import World
from replay.units import percent
from replay.waiting import WaitFold, pending_reason
from streams.events import DECISION_TYPES, Event, format_time
from streams.payloads import (
    as_decision,
    as_evict,
    as_node_sample,
    as_trigger,
    as_watch,
    pressure_evidence,
    tdm_evidence,
)

_TDM_KINDS = frozenset({"window-end", "evict-period"})
#: the resources a "was cooling down" sentence is said of (:func:`_cooling`)
COOLING_RESOURCES = ("cpu", "memory")


def _match(key: str, pod: str) -> bool:
    return key == pod or key.split("/", 1)[-1] == pod


def why_not(
    events: Iterable[Event], pod: str, *, progress: Callable[[int], None] | None = None
) -> list[str]:
    """Sentences saying when ``pod`` was considered and not evicted, or why it is pending.

    ``progress`` is called now and then with how many records were folded.
    """
    records = list(events)
    fold = WhyNot(pod, decided_by_cause(records))
    for i, event in enumerate(records):
        if progress is not None and not i & 1023:
            progress(i)
        fold.feed(event)
    return fold.finish()


def decided_by_cause(decisions: Iterable[Event]) -> dict[str, list[Event]]:
    """The decision records of ``decisions`` (other records are skipped) by their cause."""
    by_cause: dict[str, list[Event]] = defaultdict(list)
    for event in decisions:
        if event.type in DECISION_TYPES and event.cause:
            by_cause[event.cause].append(event)
    return by_cause


class WhyNot:
    """:func:`why_not` as a fold fed one record at a time (offset order).

    ``decided`` indexes the log's decisions by cause (:func:`decided_by_cause`); with it
    the records can be streamed: only the folded world is kept, not the log.
    """

    def __init__(
        self, pod: str, decided: Mapping[str, list[Event]], *, world: World | None = None
    ) -> None:
        """``world``: the state to fold on from (a World folded up to its ``position``,
        a checkpoint's, say; then feed the records after it); a fresh World by default."""
        self.pod = pod
        self.decided = decided
        self.world = World() if world is None else world
        self.task_key = TaskKey(pod)
        self.out: list[str] = []
        self.last: Event | None = None
        self._policy: Policy | None = None
        self._policy_key: int | None = None
        self._cooling_said: set[tuple[str, str]] = set()
        #: the pod's pending time, explained session by session (replay/waiting.py)
        self.waits = WaitFold(pod)

    def feed(self, event: Event) -> None:
        """Fold one record, noting what it passed over."""
        world, pod = self.world, self.pod
        self.last = event
        if event.type == "trigger.fired" and as_trigger(event).get("kind") in _TDM_KINDS:
            key = self.task_key.find(world)
            self.out += _tdm_passed_over(world, event, self.decided.get(event.id, []), key)
        self.waits.before(world, event)
        world.apply(event)
        self.task_key.saw(event)
        self.waits.after(world, event, self.decided.get(event.id, []))
        if event.type == "metrics.node":
            if self._policy is None or self._policy_key != id(world.config):
                self._policy = load_policy(world.config or {})
                self._policy_key = id(world.config)
            self.out += _cooling(
                world, event, self.task_key.find(world), self._policy, self._cooling_said
            )
            self.out += _planned_not_evicted(event, self.decided.get(event.id, []), pod)

    def settled(self) -> bool:
        """Whether the records still to come can add nothing unless one names the pod: no
        task of it is in the world (a cooling or TDM sentence needs one, and only a pod
        watch record adds one) and no wait of it is open (one ends at a later session)."""
        waits = self.waits.waits
        return task_key(self.world, self.pod) is None and not (waits and waits[-1].end is None)

    def finish(self) -> list[str]:
        """The sentences, then why the pod waited (each wait, stretch by stretch), ending
        with why it is pending (if it is)."""
        return self.out + self.waits.lines() + _pending(self.world, self.last, self.pod)


def task_key(world: World, pod: str) -> str | None:
    """The task ``pod`` names in ``world``: itself, else the first (sorted) of the tasks
    whose name is ``pod``; None when there is none. Scans every task: see :class:`TaskKey`."""
    tasks = world.cluster.tasks
    if pod in tasks:
        return pod
    found = sorted(k for k in tasks if _match(k, pod))
    return found[0] if found else None


class TaskKey:
    """:func:`task_key` of one pod along a fold, scanning the tasks only when they may
    have changed for it.

    The fold's task keys change only with a pod's watch record (``ClusterState._on_pod``
    adds or removes that pod's key; a configuration change re-adds the same keys), so
    the answer holds until a pod watch record names a pod that :func:`task_key` could
    match (or names none it can read: then it is looked up again, to be safe).
    """

    def __init__(self, pod: str) -> None:
        self.pod = pod
        self._known = False
        self._key: str | None = None

    def saw(self, event: Event) -> None:
        """A record just folded into the world."""
        if not self._known or event.type != "k8s.watch":
            return
        # the payload typed without a call per record (a TypedDict is the dict itself)
        if TYPE_CHECKING:
            data = as_watch(event)
        else:
            data = event.data
        if data.get("resource") != "pods":
            return
        obj = data.get("object")
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str):
            self._known = False
            return
        namespace = meta.get("namespace") if isinstance(meta, dict) else None
        if _match(f"{namespace or 'default'}/{name}", self.pod) or name == self.pod:
            self._known = False

    def find(self, world: World) -> str | None:
        """:func:`task_key` of the pod in ``world`` (the world :meth:`saw` was told of)."""
        if not self._known:
            self._key = task_key(world, self.pod)
            self._known = True
        return self._key


def _tdm_passed_over(
    world: World, trigger: Event, decided: list[Event], key: str | None
) -> list[str]:
    if key is None:
        return []
    task = world.cluster.tasks[key]
    evicted = [as_evict(d) for d in decided if d.type == "decision.evict"]
    if any(f"{d.get('namespace')}/{d.get('pod')}" == key for d in evicted):
        return []
    same_job = [d for d in evicted if tdm_evidence(d).get("job") == task.job]
    if not same_job:
        return []
    ev = tdm_evidence(same_job[0])
    budget = ev.get("budget") or {}
    order = ev.get("order") or {}
    chosen = ", ".join(f"{d.get('namespace')}/{d.get('pod')}" for d in same_job)
    form = budget.get("form") or "none"
    rule = "no budget annotation" if form == "none" else f"budget {form}={budget.get('value')}"
    return [
        f"{key} was a candidate but was not evicted at {format_time(trigger.at)} when zone "
        f"{as_trigger(trigger).get('zone')}'s {as_trigger(trigger).get('kind')} fired: job "
        f"{task.job} had {budget.get('running', '?')} running and {rule}, so at most "
        f"{budget.get('max_evict', '?')} per evict period; of {order.get('candidates', '?')} "
        f"candidates {chosen} came first (lowest priority, newest first)"
    ]


def _cooling(
    world: World, sample: Event, key: str | None, policy: Policy, said: set[tuple[str, str]]
) -> list[str]:
    eviction = policy.eviction
    name = (as_node_sample(sample).get("metadata") or {}).get("name")
    if eviction is None or key is None or not isinstance(name, str):
        return []
    task = world.cluster.tasks[key]
    if task.qos not in PRESSURE_QOS or not evictable(task, name, world.pressure):
        return []  # not a pressure candidate on this node (LS pods are never taken)
    node = world.cluster.nodes.get(name)
    series = world.usage.nodes.get(name)
    numbers = node_numbers(node, series) if node is not None and series is not None else None
    if numbers is None:
        return []
    out = []
    for resource in COOLING_RESOURCES:
        limits = eviction.resource(resource)
        value = numbers.pressure(resource)
        if not limits.enabled or value <= limits.evict_threshold:
            continue
        held = world.pressure.cooldowns.get((name, resource))
        if held is None or not sample.at < held.until or (name, resource) in said:
            continue
        said.add((name, resource))
        out.append(
            f"{key} was not evicted at {format_time(sample.at)} although {name}'s "
            f"{resource} was {percent(value)} of capacity, above the "
            f"{percent(limits.evict_threshold)} threshold: the node was cooling down after "
            f"the last {resource} round until {format_time(held.until)}, and no new round "
            "may start before then"
        )
    return out


def _planned_not_evicted(sample: Event, decided: list[Event], pod: str) -> list[str]:
    out = []
    for d in (as_evict(e) for e in decided if e.type == "decision.evict"):
        ev = pressure_evidence(d)
        held = ev.get("round")
        plan = list(held.get("plan") or []) if held else []
        hits = [p for p in plan if _match(p, pod)]
        if not hits or any(
            _match(f"{e.get('namespace')}/{e.get('pod')}", pod)
            for e in (as_decision(x) for x in decided)
        ):
            continue
        limits: Mapping[str, object] = ev.get("limits") or {}
        out.append(
            f"{hits[0]} was in the plan of pressure round {ev.get('round', {}).get('id')} at "
            f"{format_time(sample.at)} but not in this batch (at most "
            f"{limits.get('max_per_batch', '?')} per batch, {limits.get('max_per_minute', '?')}"
            " per minute; later batches stop once enough is freed)"
        )
        break
    return out


def _pending(world: World, last: Event | None, pod: str) -> list[str]:
    cluster = world.cluster
    key = next((k for k in sorted(cluster.pending) if _match(k, pod)), None)
    if key is None or last is None:
        return []
    policy = load_policy(world.config or {})
    if policy.config is None:
        return [f"{key} is pending: no scheduler configuration is in force, so no session runs"]
    return [
        f"{key} is pending at {format_time(last.at)}: {pending_reason(world, key, last.at, policy)}"
    ]
