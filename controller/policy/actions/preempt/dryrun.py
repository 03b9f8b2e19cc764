"""A topology-aware dry run that builds a scratch node only when a predicate must be asked.

:func:`controller.policy.actions.preempt.topology.select_victims_on_node` answers on a
:class:`~controller.policy.framework.simulate.Scratch`: every removal and give-back copies
resources, runs the simulate add / remove hooks (proportion's queue accounting) and then
asks whether the preemptor fits (future idle, the queue's ``allocatable``, the simulate
predicates). At 5,000 nodes a preempt cycle does thousands of these dry runs, and most of
their steps end at the resource test, long before a predicate is asked.

:class:`LightDryRun` walks the very same greedy and reprieve passes with the same
arithmetic, in the same order of operations, on two small vectors: the node's
``idle`` (with its ``releasing`` and ``pipelined``, which a Bound or Running victim does
not touch) and the preemptor's queue allocation (proportion's). A scratch copy of the node
is made, and the steps so far replayed on it, only when the resource and queue tests pass
and the simulate predicates must be asked; from then on each step goes to both. When
the only simulate predicate is the predicates plugin's (which reads the node copy and
nothing else), the copy's tasks are moved with the node accounting alone, without the
add / remove hooks.

Where the predicates plugin's predicate passed on the node itself (the session's predicate
memo says so) and the preemptor needs no pod beside it (no required pod affinity), every
simulate predicate must pass on any copy of the node holding a subset of its tasks
(:meth:`LightDryRun.predicate_free`): the dry run is then pure arithmetic and no copy is
made at all.

A node the session has not changed is read from the fold's index
(:mod:`projections.preemptindex`, :meth:`LightDryRun.reading`): its candidates in key
order and ``ValidateVictims``' room over all of them are kept from one session to the
next, with the victims' order keys (:meth:`~.fastpath.TaskRank.adopt`), so a session no
longer walks every node it dry-runs.

It applies only when the session's simulate add / remove / allocatable hooks are all
proportion's (:meth:`LightDryRun.of` returns None otherwise, and the scratch dry run is
used): those hooks are pure accounting on proportion's queue allocations, and
proportion's ``allocatable`` reads only the preemptor's queue. The equivalence is checked
by tests/controller/policy/actions/preempt/test_fastpath.py (decisions byte-identical with and
without the shortcuts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from controller.policy.actions.preempt.fastpath import TaskRank
from controller.policy.framework.resources import fits, less_equal_with_dimension
from controller.policy.framework.session import Session
from controller.policy.framework.simulate import Scratch
from controller.policy.plugins import predicates, proportion
from projections.accounting import node_add, node_remove
from projections.model import PREEMPTABLE_STATUSES, NodeInfo, QueueInfo, Resource, TaskInfo

_HOOKS = {
    "simulate_add_task": proportion._State.simulate_add_task,
    "simulate_remove_task": proportion._State.simulate_remove_task,
    "simulate_allocatable": proportion._State.simulate_allocatable,
}


@dataclass
class _Room:
    """The parts of a node :func:`fits` reads (``idle`` changed, the others shared)."""

    idle: Resource
    releasing: Resource
    pipelined: Resource


def _needs_company(task: TaskInfo) -> bool:
    """Whether ``task`` has a required pod-affinity term (any topology key): removing a
    pod from a node can make such a term fail there."""
    section = (task.affinity or {}).get("podAffinity") or {}
    return bool(section.get("requiredDuringSchedulingIgnoredDuringExecution"))


def usable(victims: Iterable[TaskInfo]) -> bool:
    """Whether every victim is Bound or Running (the accounting :class:`LightDryRun` does)."""
    return all(victim.status in PREEMPTABLE_STATUSES for victim in victims)


class LightDryRun:
    """The dry run of one session, on vectors (see the module docstring).

    Args:
        ssn: The session.
        state: proportion's session state, or None when proportion takes no part.
    """

    def __init__(self, ssn: Session, state: proportion._State | None) -> None:
        self.ssn = ssn
        self.state = state
        #: node name → (node version, its Bound or Running preemptable tasks in key order)
        self._tasks: dict[str, tuple[int, list[TaskInfo]]] = {}
        #: which of proportion's hooks the session walks (each point is gated on its own)
        self.accounting = bool(ssn.flat("simulate_remove_task"))
        self.back = bool(ssn.flat("simulate_add_task"))
        self.queue_check = bool(ssn.flat("simulate_allocatable"))
        #: the simulate predicates read only the node copy (predicates' hook alone), so
        #: the copy needs no plugin scratch state: its tasks are moved without the hooks
        simulate = ssn.flat("simulate_predicate")
        self.node_only = all(
            getattr(fn, "__func__", None) is predicates.PredicatesPlugin.simulate_predicate
            for fn in simulate
        )
        #: the predicates plugin whose simulate predicate is the only one, or None
        self.plugin: predicates.PredicatesPlugin | None = None
        if self.node_only and len(simulate) == 1:
            owner = getattr(simulate[0], "__self__", None)
            if isinstance(owner, predicates.PredicatesPlugin):
                self.plugin = owner
        #: nodes whose reading's order keys the rank took (:meth:`reading`)
        self._adopted: set[str] = set()
        #: the preemptor whose predicate memo :meth:`predicate_free` holds, and that memo
        self._memo_of: tuple[TaskInfo | None, dict[int, Any] | None] = (None, None)

    @classmethod
    def of(cls, ssn: Session) -> LightDryRun | None:
        """The light dry run for ``ssn``, or None when a simulate hook is not proportion's."""
        state: proportion._State | None = None
        for point, method in _HOOKS.items():
            for fn in ssn.flat(point):
                owner = getattr(fn, "__self__", None)
                if getattr(fn, "__func__", None) is not method or not isinstance(
                    owner, proportion._State
                ):
                    return None
                if state is not None and owner is not state:
                    return None
                state = owner
        return cls(ssn, state)

    def predicate_free(self, preemptor: TaskInfo, node: NodeInfo) -> bool:
        """Whether every simulate predicate the dry run would ask on ``node`` must pass, so
        that it may skip them (and the scratch copy they read).

        True only when the only simulate predicate is the predicates plugin's (which asks
        the plugin's own predicate on the copy, no wide topology terms being involved:
        the plugin keys its memo only then), the session's memo says that very predicate
        passed on ``node`` as it is now, and ``preemptor`` has no required pod-affinity
        term. Every check of that predicate is then monotone in the node's tasks: the pod
        count, the preemptor's anti-affinity and the other pods' anti-affinity can only
        pass on a copy holding a subset of the node's tasks, and the node's own fields are
        copied unchanged; a dry run's copy only ever holds such a subset.
        """
        plugin = self.plugin
        if plugin is None or _needs_company(preemptor):
            return False
        held, memo = self._memo_of
        if held is not preemptor:
            memo = None
            for fn, found in self.ssn.plan("predicate", preemptor):
                if fn is plugin.predicate:
                    memo = found
                    break
            self._memo_of = (preemptor, memo)
        if memo is None:
            return False
        pos = self.ssn.nodes.position(node.name)
        hit = memo.get(pos)
        return hit is not None and hit[0] == self.ssn.view.versions[pos] and hit[1] is None

    def reading(
        self, node: NodeInfo, by_job: Callable[[str], bool] | None, rank: TaskRank | None = None
    ) -> tuple[list[TaskInfo], Resource | None] | None:
        """``node``'s preemptees from the projection's index
        (:mod:`projections.preemptindex`), and the room ``validate_victims`` would find
        for them when they are all the node's candidates (else None); None when the
        node has no reading (a session change) or the filter has no per-job form.

        ``by_job`` is the filter's per-job form (:func:`~.victims.by_job_of`): every task
        of a reading is Bound or Running and marked preemptable, so it answers for them.
        ``rank`` takes the tasks' order keys kept with the reading (:meth:`TaskRank.adopt`).
        """
        if by_job is None:
            return None
        found = self.ssn.view.preempt_reading(node)
        if found is None:
            return None
        if rank is not None and found.node.name not in self._adopted:
            self._adopted.add(found.node.name)
            rank.adopt(found.node.name, found.memo)
        taken = [job for job in found.jobs if by_job(job)]
        if len(taken) == len(found.jobs):
            return list(found.tasks), found.room  # a copy: the reading is never changed
        keep = set(taken)
        return [task for task in found.tasks if task.job in keep], None

    def preemptees(self, node: NodeInfo, accept: Callable[[TaskInfo], bool]) -> list[TaskInfo]:
        """:func:`~controller.policy.actions.preempt.victims.node_preemptees` from a memo of the
        node's Bound or Running tasks marked preemptable, in key order, kept while the node
        is unchanged (both phases' filters refuse every other task)."""
        pos = self.ssn.nodes.position(node.name)
        version = self.ssn.view.versions[pos]
        hit = self._tasks.get(node.name)
        if hit is None or hit[0] != version:
            tasks = node.tasks
            hit = self._tasks[node.name] = (
                version,
                [
                    tasks[key]
                    for key in sorted(tasks)
                    if tasks[key].status in PREEMPTABLE_STATUSES and tasks[key].preemptable
                ],
            )
        return [task for task in hit[1] if accept(task)]

    def select(
        self,
        preemptor: TaskInfo,
        queue: QueueInfo,
        node: NodeInfo,
        queued: Iterable[TaskInfo],
        *,
        free: bool = False,
    ) -> tuple[TaskInfo, ...] | None:
        """The minimal victims on ``node`` (most protected first), or None: the answer of
        the scratch dry run for the victims ``queued`` in victim order (none skipped).
        ``free`` (:meth:`predicate_free`): every simulate predicate passes, so no scratch
        copy is made and none is asked.

        Every victim must be Bound or Running (:func:`usable`): taking one off adds its
        request to the node's idle, and giving it back takes it away again.

        Raises:
            StatementError: As the scratch would (a victim not on the node).
            FitError: A simulate hook refused while the scratch was replayed.
        """
        ssn = self.ssn
        request = preemptor.init_resreq
        room = _Room(node.idle.clone(), node.releasing, node.pipelined)
        alloc: Resource | None = None
        deserved: Resource | None = None
        open_queue = queue.state == "Open"
        if self.state is not None and self.queue_check:
            attr = self.state.get().get(queue.name)
            if attr is not None:
                alloc, deserved = attr.allocated.clone(), attr.deserved
        peek = ssn.jobs.peek
        scratch: Scratch | None = None
        potential: list[TaskInfo] = []
        mine: list[bool] = []  # whether each potential victim counts in the queue's share

        def allocatable() -> bool:
            if not self.queue_check:
                return True
            if not open_queue or alloc is None or deserved is None:
                return False
            return less_equal_with_dimension(alloc.clone().add(request), deserved, request)

        def fit() -> bool:
            nonlocal scratch
            if not fits(request, room, future=True) or not allocatable():  # type: ignore[arg-type]
                return False
            if free:
                return True
            if scratch is None:
                scratch = Scratch(ssn, [node.name])
                for victim in potential:
                    take(scratch, victim)
            if backlog:
                copy = scratch.node(node.name)
                for move, victim in backlog:
                    move(copy, victim)
                backlog.clear()
            return scratch.predicate(preemptor, node.name) is None

        # node_only: the copy's moves wait until a predicate reads the copy (a give-back
        # that fails at the resource test is taken back before any predicate sees it);
        # they are made then in the same order, and node_add / node_remove of a task the
        # copy holds (or lacks) never raise, so waiting changes no answer
        backlog: list[tuple[Callable[[NodeInfo, TaskInfo], None], TaskInfo]] = []

        def take(scratch: Scratch, victim: TaskInfo) -> None:
            if self.node_only:
                backlog.append((node_remove, victim))
            else:
                scratch.remove_task(preemptor, victim)

        def give(scratch: Scratch, victim: TaskInfo) -> None:
            if self.node_only:
                backlog.append((node_add, victim))
            else:
                scratch.add_task(preemptor, victim, node.name, status=victim.status)

        fitted = False
        for victim in queued:
            room.idle.add(victim.resreq)
            job = peek(victim.job)
            counts = self.accounting and job is not None and job.queue == queue.name
            if counts and alloc is not None:
                alloc.sub(victim.resreq)
            potential.append(victim)
            mine.append(counts)
            if scratch is not None:
                take(scratch, victim)
            if fit():
                fitted = True
                break
        if not fitted:
            return None
        chosen: list[TaskInfo] = []
        for victim, counts in zip(reversed(potential), reversed(mine), strict=True):
            room.idle.sub(victim.resreq)
            if counts and self.back and alloc is not None:
                alloc.add(victim.resreq)
            if scratch is not None:
                give(scratch, victim)
            if not fit():
                room.idle.add(victim.resreq)
                if counts and self.accounting and alloc is not None:
                    alloc.sub(victim.resreq)
                if scratch is not None:
                    take(scratch, victim)
                chosen.append(victim)
        return tuple(chosen) if chosen else None
