"""Scratch copies of session nodes, for what-if questions that must change nothing.

Preempt (and, later, rescheduling) asks "if these victims left node N, would the
preemptor fit there and pass the predicates, and may its queue take it?" before it stages
anything. Asking through a :class:`~controller.policy.framework.statement.Statement` would change
the session's view and fire every plugin's allocate / deallocate handlers (proportion's
queue shares, gang's counts), and a discard would have to undo all of it. A
:class:`Scratch` answers instead on its own copies:

* a :class:`SimNode` per node asked about: a private copy of the session's current node
  (:func:`~controller.policy.framework.view.copy_node`), whose idle / used / releasing / pipelined
  resources and task map a what-if changes with the projection's own accounting
  (:func:`projections.accounting.node_add` / ``node_remove``), plus the tasks added and
  removed so far;
* per-plugin scratch state (:meth:`Scratch.state`), which a plugin's simulate hooks create
  from the session's state on first use and then change instead of it (proportion keeps
  copies of its queue allocations there).

The plugins take part through four extension points registered like every other one and
walked in tier order (:mod:`controller.policy.framework.extensions`), after Volcano's
``pkg/scheduler/framework/session_plugins.go``: ``SimulateAddTaskFn``,
``SimulateRemoveTaskFn``, ``SimulatePredicateFn`` and ``SimulateAllocatableFn``. Volcano
threads a per-task ``CycleState`` through them; the scratch plays that part here.

A scratch never writes to the session, its view or its plugins' state, and never fires
the session's event handlers: drop it and nothing happened. Everything is deterministic
(nodes in name order, no clock). A hook that raises :class:`FitError` during
:meth:`Scratch.add_task` / :meth:`Scratch.remove_task` leaves the scratch half-changed:
the what-if failed, so drop the scratch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from controller.policy.framework.errors import StatementError
from controller.policy.framework.points import FitError
from controller.policy.framework.resources import fits
from controller.policy.framework.view import clone_task, copy_node
from projections.accounting import node_add, node_remove
from projections.model import NodeInfo, QueueInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from controller.policy.framework.session import Session

S = TypeVar("S")


@dataclass
class SimNode:
    """A scratch copy of one session node, and the tasks a what-if moved on it."""

    #: The private copy (change it only through :class:`Scratch`).
    node: NodeInfo
    #: Tasks placed on the copy, in order (as placed: status and node set).
    added: list[TaskInfo] = field(default_factory=list)
    #: Tasks taken off the copy, in order (as the node held them).
    removed: list[TaskInfo] = field(default_factory=list)


class Scratch:
    """Scratch copies of some session nodes, and the plugins' scratch state.

    Args:
        ssn: The session to ask about (read, never written).
        node_names: The nodes to copy (each must be a session node).
    """

    def __init__(self, ssn: Session, node_names: Iterable[str]) -> None:
        self.ssn = ssn
        self.nodes: dict[str, SimNode] = {}
        for name in sorted(set(node_names)):
            if name not in ssn.nodes:
                raise StatementError(f"node {name} is not in the session")
            self.nodes[name] = SimNode(copy_node(ssn.nodes[name]))
        self._states: dict[str, Any] = {}

    def node(self, name: str) -> NodeInfo:
        """The scratch copy of node ``name``."""
        sim = self.nodes.get(name)
        if sim is None:
            raise StatementError(f"node {name} is not in the scratch")
        return sim.node

    def state(self, plugin: str, factory: Callable[[], S]) -> S:
        """``plugin``'s scratch state, made by ``factory`` on first use.

        ``factory`` builds it from the session's state without changing that state (a copy);
        the plugin's simulate hooks then read and change only this object.
        """
        if plugin not in self._states:
            self._states[plugin] = factory()
        state: S = self._states[plugin]
        return state

    # -- what-if steps -----------------------------------------------------------------

    def remove_task(self, to_schedule: TaskInfo, task: TaskInfo, *, node: str = "") -> TaskInfo:
        """Take ``task`` off its node's copy, then run the simulate-remove hooks.

        Volcano's ``NodeInfo.RemoveTask`` on the simulated node followed by
        ``Session.SimulateRemoveTaskFn``.

        Args:
            to_schedule: The task the what-if is for (the preemptor).
            task: The task to take off (a victim), as the session knows it.
            node: Its node (default: ``task.node_name``).

        Returns:
            The copy the node held (its status decides what the removal freed).

        Raises:
            StatementError: The node is not in the scratch or does not hold the task.
            FitError: A hook refused (drop the scratch).
        """
        sim = self.nodes.get(node or task.node_name)
        key = task.key
        if sim is None or key not in sim.node.tasks:
            raise StatementError(f"task {key} is not on a scratch node")
        stored = sim.node.tasks[key]
        node_remove(sim.node, stored, key)
        sim.removed.append(stored)
        self.ssn.simulate_remove_task(self, to_schedule, stored, sim.node)
        return stored

    def add_task(
        self,
        to_schedule: TaskInfo,
        task: TaskInfo,
        node: str,
        *,
        status: TaskStatus = TaskStatus.ALLOCATED,
    ) -> TaskInfo:
        """Place ``task`` on ``node``'s copy with ``status``, then run the simulate-add hooks.

        Volcano's ``NodeInfo.AddTask`` on the simulated node followed by
        ``Session.SimulateAddTaskFn``. The session's task is not changed: the copy placed
        is a new version (``status``, ``node_name`` = ``node``).

        Returns:
            The version placed.

        Raises:
            StatementError: The node is not in the scratch or already holds the task.
            FitError: A hook refused (drop the scratch).
        """
        sim = self.nodes.get(node)
        if sim is None:
            raise StatementError(f"node {node} is not in the scratch")
        if task.key in sim.node.tasks:
            raise StatementError(f"task {task.key} is already on scratch node {node}")
        placed = clone_task(task, status=status, node_name=node)
        node_add(sim.node, placed)
        sim.added.append(placed)
        self.ssn.simulate_add_task(self, to_schedule, placed, sim.node)
        return placed

    # -- questions ---------------------------------------------------------------------

    def fits(self, task: TaskInfo, node: str, *, future: bool = False) -> bool:
        """Whether ``task.init_resreq`` fits the copy's idle (or future idle) resources."""
        return fits(task.init_resreq, self.node(node), future=future)

    def predicate(self, task: TaskInfo, node: str) -> FitError | None:
        """The first simulate-predicate hook's refusal of the copy, or None when all pass.

        Volcano's ``Session.SimulatePredicateFn`` on the simulated node.
        """
        try:
            self.ssn.simulate_predicate(self, task, self.node(node))
        except FitError as exc:
            return exc
        return None

    def allocatable(self, queue: QueueInfo, task: TaskInfo) -> bool:
        """Whether ``queue`` may take ``task`` on the scratch shares (every hook agrees).

        Volcano's ``Session.SimulateAllocatableFn``.
        """
        return self.ssn.simulate_allocatable(self, queue, task)
