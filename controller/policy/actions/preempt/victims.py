"""Who may be a victim, in which order victims go, and whether a preemptor may try.

Upstream: volcano-sh/volcano pkg/scheduler/actions/preempt/preempt.go (the inter-job and
intra-job filters of ``Execute``, ``taskEligibleToPreempt``) and
pkg/scheduler/util/scheduler_helper.go (``BuildVictimsPriorityQueue``,
``ValidateVictims``).

Victims are read only through :attr:`TaskInfo.preemptable` and the session's
``preemptable`` extension point: which pods may be victims at all is the projection's and
the plugins' business, not this module's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import cmp_to_key

from controller.policy.actions.preempt.fastpath import TaskRank
from controller.policy.framework.points import FitError, FitStatus
from controller.policy.framework.session import Session
from projections.accounting import future_idle_with
from projections.model import PREEMPTABLE_STATUSES, JobInfo, NodeInfo, TaskInfo, TaskStatus

#: A victim filter over a node's tasks.
Filter = Callable[[TaskInfo], bool]

NEVER = "Never"
#: The attribute of a filter built here that holds its per-job form (:func:`by_job_of`).
BY_JOB = "by_job"


def by_job_of(accept: Filter) -> Callable[[str], bool] | None:
    """The per-job form of ``accept``, when it has one: a function of a job id that
    answers as ``accept`` does for every task of that job in a preemptable status and
    marked preemptable (a filter of this module whose preemptor is not BestEffort)."""
    found: Callable[[str], bool] | None = getattr(accept, BY_JOB, None)
    return found


def _common(preemptor: TaskInfo, victim: TaskInfo) -> bool:
    """The checks both phases share: a preemptable status (Bound or Running), the
    BestEffort rule (a BestEffort preemptor never evicts a non-BestEffort task) and the
    task's own ``preemptable`` mark."""
    return (
        victim.status in PREEMPTABLE_STATUSES
        and not (preemptor.best_effort and not victim.best_effort)
        and victim.preemptable
    )


def inter_job(
    ssn: Session, preemptor: TaskInfo, job: JobInfo, queues: dict[str, str | None] | None = None
) -> Filter:
    """Phase 1: tasks of *other* jobs of the preemptor's queue.

    ``queues`` memoises job id → queue (None: not a session job) across filters of one
    run: a job's queue never changes within a session.
    """
    known: dict[str, str | None] = {} if queues is None else queues
    lookup = ssn.jobs.lookup

    best_effort, own = preemptor.best_effort, preemptor.job

    def by_job(job_id: str) -> bool:
        if job_id == own:
            return False
        try:
            queue = known[job_id]
        except KeyError:
            owner = lookup(job_id)
            queue = known[job_id] = owner.queue if owner is not None else None
        return queue == job.queue

    def accept(victim: TaskInfo) -> bool:
        # _common inlined (this runs on every task of every node searched)
        if (
            victim.status not in PREEMPTABLE_STATUSES
            or (best_effort and not victim.best_effort)
            or not victim.preemptable
        ):
            return False
        return by_job(victim.job)

    if not best_effort:
        setattr(accept, BY_JOB, by_job)
    return accept


def intra_job(preemptor: TaskInfo) -> Filter:
    """Phase 2: other tasks of the preemptor's own job."""

    def accept(victim: TaskInfo) -> bool:
        return _common(preemptor, victim) and victim.job == preemptor.job

    if not preemptor.best_effort:
        setattr(accept, BY_JOB, preemptor.job.__eq__)
    return accept


def node_preemptees(node: NodeInfo, accept: Filter) -> list[TaskInfo]:
    """The node's tasks that pass ``accept``, in key order (Volcano walks a map)."""
    return [node.tasks[key] for key in sorted(node.tasks) if accept(node.tasks[key])]


def same_tasks(left: Sequence[TaskInfo], right: Sequence[TaskInfo]) -> bool:
    """Whether two lists hold the very same task objects in the same order."""
    return len(left) == len(right) and all(a is b for a, b in zip(left, right, strict=True))


def validate_victims(preemptor: TaskInfo, node: NodeInfo, victims: Sequence[TaskInfo]) -> bool:
    """Volcano's ``ValidateVictims``: the node's future idle plus every victim's request
    must hold the preemptor's request (no victims is fine if future idle already does)."""
    return preemptor.init_resreq.less_equal(future_idle_with(node, victims))


def victim_order(
    ssn: Session, preemptor: TaskInfo, victims: Sequence[TaskInfo], rank: TaskRank | None = None
) -> list[TaskInfo]:
    """The victims, the one to evict first first (all of :func:`iter_victim_order`)."""
    return list(iter_victim_order(ssn, preemptor, victims, rank))


def iter_victim_order(
    ssn: Session, preemptor: TaskInfo, victims: Sequence[TaskInfo], rank: TaskRank | None = None
) -> Iterator[TaskInfo]:
    """The victims, the one to evict first first, each job's tasks sorted only when the
    walk reaches that job (a dry run that stops early sorts less).

    Read it before the session changes: the job and queue orders are asked as it goes.

    Volcano's ``BuildVictimsPriorityQueue``: within one job the task that would be
    scheduled last goes first; a victim whose job left the session goes before one whose
    job is there; across queues the queue that would be served last goes first; across
    jobs of one queue the job that would be scheduled last goes first, then the task.
    Volcano's heap leaves equal victims in heap order; tide ends with the task key.

    Computed by groups, the same order as comparing every pair: two victims of
    different session jobs are ordered by their queues or jobs alone (the queue and job
    comparisons end in a name, so they never tie between two queues or two jobs), so
    the jobs are sorted once and each job's tasks once, instead of comparing (and
    looking up the jobs of) every pair of victims. With ``rank`` (the session's task order
    as a key, :mod:`~.fastpath`) a group's tasks are sorted by that key when it applies.
    """
    jobs = ssn.jobs
    task_cmp = ssn.task_order_compare

    def by_task(left: TaskInfo, right: TaskInfo) -> int:
        result = -task_cmp(left, right)
        if result:
            return result
        return (left.key > right.key) - (left.key < right.key)

    orphans: list[TaskInfo] = []
    groups: dict[str, list[TaskInfo]] = {}
    owners: dict[str, JobInfo] = {}
    for victim in victims:
        found = groups.get(victim.job)
        if found is not None:
            found.append(victim)
            continue
        job = jobs.lookup(victim.job)
        if job is None:
            orphans.append(victim)
        else:
            owners[victim.job] = job
            groups[victim.job] = [victim]
    with_queues = jobs.lookup(preemptor.job) is not None
    queues = ssn.queues

    def by_job(left: str, right: str) -> int:
        lj, rj = owners[left], owners[right]
        if with_queues and lj.queue != rj.queue:
            lq, rq = queues.get(lj.queue), queues.get(rj.queue)
            if lq is not None and rq is not None:
                return -ssn.queue_order_compare(lq, rq)
        return -ssn.job_order_compare(lj, rj)

    def tasks_of(group: list[TaskInfo]) -> list[TaskInfo]:
        if rank is not None and len(group) > 1:
            fast = rank.sort(group, reverse=True)
            if fast is not None:
                return fast
        return sorted(group, key=cmp_to_key(by_task))

    yield from tasks_of(orphans)
    if (
        rank is not None
        and rank.job_parts is not None
        and len({owner.queue for owner in owners.values()}) <= 1
    ):
        keys = {job_id: rank.job_key(owner) for job_id, owner in owners.items()}
        ordered = sorted(groups, key=keys.__getitem__, reverse=True)
    else:
        ordered = sorted(groups, key=cmp_to_key(by_job))
    for job_id in ordered:
        yield from tasks_of(groups[job_id])


def eligible(ssn: Session, preemptor: TaskInfo, nominated: str) -> str | None:
    """Why ``preemptor`` may not preempt now, or None when it may.

    Volcano's ``taskEligibleToPreempt``: ``preemptionPolicy: Never`` never preempts. A
    task nominated to a node (an earlier preemption) does not preempt again while that
    node passes the session predicates (its room is coming), nor while a lower-priority
    pod there is still releasing (the earlier preemption is under way); only a node the
    predicates now reject as unresolvable lets it try elsewhere.

    Difference from Volcano: a nominated node that left the session releases the
    nomination (:mod:`projections.nominations`), so the task may try again (Volcano
    refuses while ``status.nominatedNodeName`` names a missing node).
    """
    if preemptor.preemption_policy == NEVER:
        return "preemptionPolicy is Never"
    if not nominated:
        return None
    node = ssn.nodes.get(nominated)
    if node is None:
        return None
    try:
        ssn.predicate(preemptor, node)
    except FitError as exc:
        if exc.status == FitStatus.UNSCHEDULABLE_AND_UNRESOLVABLE:
            return None
    else:
        room = node.future_idle()
        held = node.tasks.get(preemptor.key)
        if held is not None and held.status == TaskStatus.PIPELINED:
            room.add(held.resreq)  # allocate's hold on the room for this very task
        if preemptor.init_resreq.less_equal(room):
            return f"nominated node {nominated} already fits"
    for key in sorted(node.tasks):
        other = node.tasks[key]
        if other.status == TaskStatus.RELEASING and other.pod_priority < preemptor.pod_priority:
            return f"a pod on nominated node {nominated} is still terminating"
    return None
