"""The ``proportion`` plugin: queues share the cluster by weight.

Upstream: volcano-sh/volcano pkg/scheduler/plugins/proportion/proportion.go,
``proportionPlugin.OnSessionOpen``.

Each queue with jobs gets a ``deserved`` share by weighted water-filling of the cluster's
allocatable resources, capped by its real capability and its request and raised to its
guarantee. A task may be allocated only while its queue's allocation stays within
``deserved`` (``allocatable``); a queue at or beyond it is ``overused``; queues are
ordered by spec priority, then by the smaller share. Event handlers keep ``allocated``
current as statements allocate and evict.

Computing the queue attributes by walking every task of every session job was the
dominant cost of a session over 150,000 tasks, so the sums come from the cluster fold's
maintained per-queue totals (:mod:`projections.queuetotals`, the same numbers) when the
cluster keeps them, and from a walk only over a bare cluster. Sessions that never ask
(a TDM window-close cycle without pending pods) should not pay even that: the attributes are
computed on first use, from the projection's state at session open, and the allocate /
deallocate events are queued and replayed onto them at the next read: the result is
exactly what eager computation and eager updates would give.

What-if questions (:mod:`controller.policy.framework.simulate`) get copies of the queue
attributes as scratch state: the simulate add / remove hooks move a task's request in
and out of the copy of its queue's ``allocated``, and the simulate allocatable answers
``allocatable`` over the copies. The session's attributes are never touched by them
(computing them on first use is not a change: it gives what eager computation would).

The sums walk jobs in the projection's order, not sorted: the model's quantities are
Kubernetes ``MilliValue``/``Value`` integers, and float sums of integers below 2^53 are
exact, hence the same in any order. Sorting 150,000 job ids would cost more than the sums.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.policy.framework.plugin import PluginContext, no_args
from controller.policy.framework.resources import (
    diff,
    exceeded_part,
    less_equal_with_dimension,
    maximum,
    min_dimension,
    multi,
    share,
)
from controller.policy.framework.session import Session
from controller.policy.framework.simulate import Scratch
from projections.model import (
    ALLOCATED_STATUSES,
    NodeInfo,
    QueueInfo,
    Resource,
    TaskInfo,
    TaskStatus,
)

NAME = "proportion"
_UNLIMITED = float("inf")
_PENDING = TaskStatus.PENDING


def parse_args(raw: Mapping[str, Any]) -> None:
    """No arguments."""
    no_args(raw)


@dataclass
class QueueAttr:
    """Per-queue accounting (Volcano's ``queueAttr``)."""

    name: str
    weight: int
    guarantee: Resource = field(default_factory=Resource)
    real_capability: Resource | None = None
    deserved: Resource = field(default_factory=Resource)
    allocated: Resource = field(default_factory=Resource)
    request: Resource = field(default_factory=Resource)
    share: float = 0.0

    def update_share(self) -> None:
        self.share = share(self.allocated, self.deserved)

    def copy(self) -> QueueAttr:
        """A copy whose resources may be changed without touching this one."""
        return QueueAttr(
            self.name,
            self.weight,
            guarantee=self.guarantee.clone(),
            real_capability=None if self.real_capability is None else self.real_capability.clone(),
            deserved=self.deserved.clone(),
            allocated=self.allocated.clone(),
            request=self.request.clone(),
            share=self.share,
        )


def _capability(queue: QueueInfo) -> Resource | None:
    if queue.capability is None:
        return None
    cap = queue.capability.clone()
    if cap.milli_cpu <= 0:
        cap.milli_cpu = _UNLIMITED
    if cap.memory <= 0:
        cap.memory = _UNLIMITED
    return cap


def water_fill(attrs: list[QueueAttr], total: Resource) -> None:
    """Distribute ``total`` into each attr's ``deserved`` (iterative, weighted)."""
    remaining = total.clone()
    met: set[str] = set()
    while True:
        total_weight = sum(a.weight for a in attrs if a.name not in met)
        if total_weight == 0:
            break
        old_remaining = remaining.clone()
        increased, decreased = Resource(), Resource()
        for attr in attrs:
            if attr.name in met:
                continue
            old = attr.deserved.clone()
            deserved = old.clone().add(multi(remaining, attr.weight / total_weight))
            if attr.real_capability is not None:
                deserved = min_dimension(deserved, attr.real_capability, infinite_default=True)
            deserved = min_dimension(deserved, attr.request, infinite_default=False)
            attr.deserved = maximum(deserved, attr.guarantee)
            attr.update_share()
            if attr.request.less_equal(attr.deserved) or attr.deserved == old:
                met.add(attr.name)
            up, down = diff(attr.deserved, old)
            increased.add(up)
            decreased.add(down)
        remaining.sub(increased).add(decreased)
        if remaining.is_empty() or remaining == old_remaining:
            break


def _accumulate(tasks: list[TaskInfo], allocated: Resource, request: Resource) -> None:
    """Add allocated-status requests to both, Pending requests to ``request`` only.

    The hot loop of the session over every task: plain float sums, one pass.
    """
    a_cpu = a_mem = p_cpu = p_mem = 0.0
    a_scalars: dict[str, float] = {}
    p_scalars: dict[str, float] = {}
    for task in tasks:
        status = task.status
        if status in ALLOCATED_STATUSES:
            req = task.resreq
            a_cpu += req.milli_cpu
            a_mem += req.memory
            for name, value in req.scalars.items():
                a_scalars[name] = a_scalars.get(name, 0.0) + value
        elif status == _PENDING:
            req = task.resreq
            p_cpu += req.milli_cpu
            p_mem += req.memory
            for name, value in req.scalars.items():
                p_scalars[name] = p_scalars.get(name, 0.0) + value
    if a_cpu or a_mem or a_scalars:
        got = Resource(a_cpu, a_mem, a_scalars)
        allocated.add(got)
        request.add(got)
    if p_cpu or p_mem or p_scalars:
        request.add(Resource(p_cpu, p_mem, p_scalars))


class _State:
    """One session's proportion state (the plugin object itself stays stateless)."""

    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.attrs: dict[str, QueueAttr] | None = None
        self.early: list[tuple[str, Resource, int]] = []  # (job, request, sign) not applied yet

    def get(self) -> dict[str, QueueAttr]:
        if self.attrs is None:
            self.attrs = self._compute()
        if self.early:
            attrs, jobs = self.attrs, self.ssn.jobs
            moved: set[str] = set()
            for job_id, req, sign in self.early:
                # only the job's queue is read: peek, so that the view need not clone it
                job = jobs.peek(job_id)
                attr = attrs.get(job.queue) if job is not None else None
                if attr is not None:
                    (attr.allocated.add if sign > 0 else attr.allocated.sub)(req)
                    moved.add(attr.name)
            for name in sorted(moved):
                attrs[name].update_share()
            self.early = []
        return self.attrs

    def _compute(self) -> dict[str, QueueAttr]:
        ssn = self.ssn
        attrs: dict[str, QueueAttr] = {}
        totals = ssn.view.opening_queue_totals()
        if totals is not None:  # the fold's maintained totals: no walk over the tasks
            for name, sums in totals.items():
                queue = ssn.queues[name]
                attrs[name] = QueueAttr(
                    queue.name,
                    queue.weight,
                    guarantee=queue.guarantee.clone() if queue.guarantee else Resource(),
                    allocated=sums.allocated,
                    request=sums.request,
                )
        else:
            grouped = ssn.view.opening_tasks_by_queue()
            for name in sorted(grouped):
                queue = ssn.queues[name]
                attr = attrs[name] = QueueAttr(
                    queue.name,
                    queue.weight,
                    guarantee=queue.guarantee.clone() if queue.guarantee else Resource(),
                )
                _accumulate(grouped[name], attr.allocated, attr.request)
        total = ssn.total_resource()
        guarantees = Resource()
        for name in sorted(attrs):
            guarantees.add(attrs[name].guarantee)
        for name in sorted(attrs):
            attr = attrs[name]
            real = exceeded_part(total, guarantees).add(attr.guarantee)
            cap = _capability(ssn.queues[name])
            attr.real_capability = (
                real if cap is None else min_dimension(real, cap, infinite_default=True)
            )
        water_fill([attrs[name] for name in sorted(attrs)], total)
        return attrs

    def on_event(self, task: TaskInfo, sign: int) -> None:
        # applied on the next read (integral quantities: the sums do not depend on when;
        # a job's queue does not change within a session): a window close's thousands of
        # evictions are never read back by most sessions
        self.early.append((task.job, task.resreq, sign))

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return -1 if left.priority > right.priority else 1
        attrs = self.get()
        lshare = attrs[left.name].share if left.name in attrs else 0.0
        rshare = attrs[right.name].share if right.name in attrs else 0.0
        return -1 if lshare < rshare else (1 if lshare > rshare else 0)

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        return _queue_allocatable(self.get(), queue, task)

    def overused(self, queue: QueueInfo) -> bool:
        attr = self.get().get(queue.name)
        return attr is not None and attr.deserved.less_equal(attr.allocated)

    # -- simulate hooks (scratch copies of the queue attributes) -----------------------

    def scratch_attrs(self, scratch: Scratch) -> dict[str, QueueAttr]:
        """This session's queue attributes as the scratch sees them (copied on first use)."""
        return scratch.state(NAME, lambda: {name: a.copy() for name, a in self.get().items()})

    def _simulate_move(self, scratch: Scratch, task: TaskInfo, sign: int) -> None:
        job = self.ssn.jobs.peek(task.job)
        if job is None:
            return
        attr = self.scratch_attrs(scratch).get(job.queue)
        if attr is not None:
            (attr.allocated.add if sign > 0 else attr.allocated.sub)(task.resreq)
            attr.update_share()

    def simulate_add_task(
        self, scratch: Scratch, to_schedule: TaskInfo, added: TaskInfo, node: NodeInfo
    ) -> None:
        """Count ``added`` in its queue's scratch allocation.

        Mirrors the ``AddSimulateAddTaskFn`` registration of volcano-sh/volcano
        ``pkg/scheduler/plugins/capacity/capacity.go`` (``attr.allocated.Add`` on the
        cycle state's queue attributes), on proportion's attributes.
        """
        del to_schedule, node
        self._simulate_move(scratch, added, 1)

    def simulate_remove_task(
        self, scratch: Scratch, to_schedule: TaskInfo, removed: TaskInfo, node: NodeInfo
    ) -> None:
        """Take ``removed`` out of its queue's scratch allocation.

        Mirrors the ``AddSimulateRemoveTaskFn`` registration of volcano-sh/volcano
        ``pkg/scheduler/plugins/capacity/capacity.go`` (``attr.allocated.Sub``).
        """
        del to_schedule, node
        self._simulate_move(scratch, removed, -1)

    def simulate_allocatable(self, scratch: Scratch, queue: QueueInfo, task: TaskInfo) -> bool:
        """:meth:`allocatable` over the scratch allocations.

        Mirrors the ``AddSimulateAllocatableFn`` registration of volcano-sh/volcano
        ``pkg/scheduler/plugins/capacity/capacity.go`` (``queueAllocatable`` on the cycle
        state), with proportion's ``allocatable`` rule.
        """
        return _queue_allocatable(self.scratch_attrs(scratch), queue, task)


def _queue_allocatable(attrs: dict[str, QueueAttr], queue: QueueInfo, task: TaskInfo) -> bool:
    """Volcano's proportion ``queueAllocatable``: the queue is open and its allocation
    plus the request stays within ``deserved`` in every dimension the request asks for."""
    if queue.state != "Open":
        return False
    attr = attrs.get(queue.name)
    if attr is None:
        return False
    future = attr.allocated.clone().add(task.resreq)
    return less_equal_with_dimension(future, attr.deserved, task.resreq)


class ProportionPlugin:
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        state = _State(ssn)
        ssn.add_queue_order_fn(NAME, state.queue_order)
        ssn.add_allocatable_fn(NAME, state.allocatable)
        ssn.add_overused_fn(NAME, state.overused)
        ssn.add_simulate_add_task_fn(NAME, state.simulate_add_task)
        ssn.add_simulate_remove_task_fn(NAME, state.simulate_remove_task)
        ssn.add_simulate_allocatable_fn(NAME, state.simulate_allocatable)
        ssn.add_event_handler(
            NAME,
            allocate=lambda task: state.on_event(task, 1),
            deallocate=lambda task: state.on_event(task, -1),
        )

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def build(args: None, ctx: PluginContext) -> ProportionPlugin:
    del args, ctx
    return ProportionPlugin()
