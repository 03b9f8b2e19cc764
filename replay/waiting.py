"""Why a pod waited: its pending time explained, whether it was later bound, deleted or not.

``tide audit why`` used to explain a wait only for a pod still pending at the log's end (one
session opened on the final state). A pod that waited and was then bound, or deleted
without ever being bound, got "no decision about …" although it may have waited for
minutes. :class:`WaitFold` rides along the why-not fold (:class:`replay.whynot.WhyNot`) and,
at each scheduling session on the log while the pod is Pending, asks the predicates what a
session sees for it there (:func:`pending_reason`: the predicates that fail
and on how many nodes, its queue and gang minimum). Consecutive sessions with the same
reason are one *stretch* (from, to, how many sessions); a wait ends when a session binds
the pod, when it is deleted, or at the log's end.

Which sessions: a session that decided nothing is not written to the log (the quiet-tick
and empty-session rules of :mod:`controller.policy.step`), so the sessions seen are the
written ``trigger.fired`` records of a scheduling kind; the pod waited through the
unwritten ones for the same reason, since nothing a session sees changed in between
(else the next session would have been written, or decided the same). A pod that left the
queue before any written session shows no stretch; its wait, if any, is still named.

Cost: the fold is the why-not fold's own; a session is opened only when the pod is Pending
at a written session *and* something a session sees changed since the last one asked
(``sched_version``, or another configuration): an unchanged state gives the same reason,
so its stretch grows without a session.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from controller.policy.engine import build_cycle
from controller.policy.framework.nodes import allocate_check, predicate_nodes
from controller.policy.framework.session import open_session
from controller.policy.loader import Policy, load_policy
from controller.policy.pressure import PRESSURE_TRIGGER_KINDS
from projections.world import World
from streams.events import Event, format_time
from streams.payloads import as_decision, as_trigger, as_watch


@dataclass(slots=True)
class Stretch:
    """Sessions in a row that saw the same reason."""

    reason: str
    first: datetime
    last: datetime
    sessions: int = 1


@dataclass(slots=True)
class Wait:
    """One Pending spell of task ``key``: since its first session, its stretches, and
    how it ended (None: still pending at the end)."""

    key: str
    since: datetime
    stretches: list[Stretch] = field(default_factory=list)
    end: str | None = None


def _matches(key: str, pod: str) -> bool:
    return key == pod or key.split("/", 1)[-1] == pod


class WaitFold:
    """The waits of ``pod`` (``namespace/name`` or a name), fed around a world's fold."""

    def __init__(self, pod: str) -> None:
        self.pod = pod
        self.waits: list[Wait] = []
        self._open: Wait | None = None
        self._seen: tuple[int, int] | None = None  # (configuration, sched_version) last asked
        self._policy: Policy | None = None
        self._policy_of: int | None = None

    def before(self, world: World, event: Event) -> None:
        """See ``event`` before ``world`` folds it: the deletion of the waiting pod ends
        its wait, with the reason a session would have seen just before."""
        wait = self._open
        if wait is None or event.type != "k8s.watch":
            return
        data = as_watch(event)
        if data.get("event") != "DELETED" or data.get("resource") != "pods":
            return
        meta = (data.get("object") or {}).get("metadata") or {}
        if f"{meta.get('namespace') or 'default'}/{meta.get('name')}" != wait.key:
            return
        task = world.cluster.tasks.get(wait.key)
        if task is None or (meta.get("uid") and task.uid and meta.get("uid") != task.uid):
            return  # an older incarnation's late delete
        if wait.key in world.cluster.pending:
            self._look(world, wait, event.at, sessions=0)
        self._close(f"deleted at {format_time(event.at)} without being bound")

    def after(self, world: World, event: Event, decided: list[Event]) -> None:
        """See ``event`` once folded into ``world``; ``decided``: the decisions it caused."""
        if event.type == "k8s.watch":
            self._watched(world, event)
            return
        if event.type != "trigger.fired" or as_trigger(event).get("kind") in PRESSURE_TRIGGER_KINDS:
            return
        key = self._pending_key(world)
        wait = self._open
        if key is None:
            if wait is not None:  # left the queue some other way (bound elsewhere, finished)
                self._close(f"no longer pending at {format_time(event.at)}")
            return
        if wait is not None and wait.key != key:
            self._close(f"no longer pending at {format_time(event.at)}")
            wait = None
        for decision in decided:
            d = as_decision(decision)
            if decision.type == "decision.bind" and f"{d.get('namespace')}/{d.get('pod')}" == key:
                if wait is not None:
                    self._close(f"bound to {d.get('node')} at {format_time(event.at)}")
                return
        if wait is None:
            wait = self._start(key, event.at)
        self._look(world, wait, event.at, sessions=1)

    def _watched(self, world: World, event: Event) -> None:
        """A watch record: the pod arriving Pending starts a wait; leaving the queue
        without a bind of ours (another scheduler, a recorded binding) ends it."""
        data = as_watch(event)
        if data.get("resource") != "pods":
            return
        meta = (data.get("object") or {}).get("metadata") or {}
        name = meta.get("name")
        if not isinstance(name, str) or not (name == self.pod or self.pod.endswith("/" + name)):
            return
        key = f"{meta.get('namespace') or 'default'}/{name}"
        if not _matches(key, self.pod):
            return
        wait = self._open
        pending = key in world.cluster.pending
        if wait is None or wait.key != key:
            if pending and (wait is None or wait.key not in world.cluster.pending):
                if wait is not None:
                    self._close(f"no longer pending at {format_time(event.at)}")
                self._start(key, event.at)
            return
        if not pending and key in world.cluster.tasks:
            self._close(f"no longer pending at {format_time(event.at)}")

    def _start(self, key: str, at: datetime) -> Wait:
        wait = self._open = Wait(key, at)
        self.waits.append(wait)
        self._seen = None
        return wait

    def _look(self, world: World, wait: Wait, at: datetime, *, sessions: int) -> None:
        """What a session at ``at`` sees for the waiting task: a new stretch, or the last
        one grown (``sessions``: how many written sessions this look stands for)."""
        seen = (id(world.config), world.cluster.sched_version)
        last = wait.stretches[-1] if wait.stretches else None
        if last is not None and seen == self._seen:
            last.last, last.sessions = at, last.sessions + sessions
            return
        self._seen = seen
        reason = self._reason(world, wait.key, at)
        if last is not None and last.reason == reason:
            last.last, last.sessions = at, last.sessions + sessions
        else:
            wait.stretches.append(Stretch(reason, at, at, sessions))

    def lines(self) -> list[str]:
        """A sentence per stretch of every wait, then how the wait ended."""
        out = []
        for wait in self.waits:
            if not wait.stretches and wait.end is not None and wait.end.startswith("bound "):
                continue  # bound by the first session that considered it: it did not wait
            for s in wait.stretches:
                span = (
                    f"at {format_time(s.first)}"
                    if s.first == s.last
                    else f"from {format_time(s.first)} to {format_time(s.last)}"
                )
                looked = f"{s.sessions} session(s)" if s.sessions else "no session"
                out.append(f"{wait.key} waited {span} ({looked}): {s.reason}")
            end = f"then {wait.end}" if wait.end is not None else "still pending at the end"
            out.append(f"{wait.key} was pending from {format_time(wait.since)}: {end}")
        return out

    def _close(self, end: str) -> None:
        assert self._open is not None
        self._open.end = end
        self._open = None

    def _pending_key(self, world: World) -> str | None:
        pending = world.cluster.pending
        if self.pod in pending:
            return self.pod
        if self._open is not None and self._open.key in pending:
            return self._open.key
        if "/" in self.pod:
            return None
        found = [k for k in pending if _matches(k, self.pod)]
        return min(found) if found else None

    def _reason(self, world: World, key: str, when: datetime) -> str:
        if self._policy is None or self._policy_of != id(world.config):
            self._policy, self._policy_of = load_policy(world.config or {}), id(world.config)
        if self._policy.config is None:
            return "no scheduler configuration is in force, so no session runs"
        return pending_reason(world, key, when, self._policy)


def pending_reason(world: World, key: str, when: datetime, policy: Policy) -> str:
    """Why the Pending task ``key`` is not placed, as a session at ``when`` would see it: the
    predicates that fail and on how many nodes, and its job's queue and gang minimum.

    ``policy`` must carry a scheduler configuration (``policy.config``)."""
    assert policy.config is not None
    task = world.cluster.pending[key]
    trigger = Event(
        type="trigger.fired",
        at=when,
        id="audit-why",
        data={"trigger": "audit-why", "kind": "tick", "scheduled": format_time(when)},
    )
    built = build_cycle(policy.config)
    ssn = open_session(
        world, trigger, tiers=policy.config.tiers, plugins=built.plugins, ctx=built.ctx
    )
    try:
        result = predicate_nodes(ssn, task, allocate_check(ssn), move_cursor=False)
        job = ssn.jobs.lookup(task.job) if task.job else None
    finally:
        ssn.close()
    reasons = Counter(err.reason for err in result.errors.values())
    failed = "; ".join(f"{why} on {n} node(s)" for why, n in sorted(reasons.items()))
    nodes = len(result.errors) + len(result.feasible)
    text = ""
    if result.feasible and not result.errors:
        text += f"all {nodes} node(s) would fit it now"
    else:
        text += f"{len(result.errors)} of {nodes} node(s) fail the predicates ({failed})"
        if result.feasible:
            text += f"; {len(result.feasible)} would fit"
    if job is not None:
        text += f"; job {job.id} in queue {job.queue} needs at least {job.min_available} pod(s)"
        text += " placed together (gang minimum)"
    return text
