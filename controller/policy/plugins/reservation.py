"""The ``reservation`` plugin: keep what a pressure eviction freed for LS pods.

This is tide's design (beyond upstream koordlet): the koordlet reserves nothing after an
eviction (koordinator-sh/koordinator's koord-descheduler only reserves room for an evicted
pod's replacement, in its migration controller).

With ``eviction.schedulingOptimization.resourceReservation``, a pressure eviction holds
the freed amount on its node for latency-sensitive pods for ``reservationDuration``:

* **predicate**: a BE task (``qos == "BE"``) is refused on a node where its request does
  not fit the node's idle resources minus the amount held (``Unschedulable``, the reason
  names the reservation). LS tasks are never refused here: the room is theirs.
* **node order**: a node from which pods of the task's owner (``Kind/name``) were just
  evicted scores :data:`EVICTED_OWNER_PENALTY`, so the owner's replacements prefer other
  nodes (they would likely be evicted again).

What is held, and until when, is the ``pressure`` projection's
(:class:`projections.pressure.PressureState`, ``ssn.pressure``): the
reservation is recorded in the eviction's evidence only when ``resourceReservation`` is
on, so the plugin needs no arguments. It reads the projection rather than
``controller.policy.pressure.reserved_for_ls`` because plugins sit below the pressure package
(the import-linter layers in ``pyproject.toml``); both read the same methods. A World
without a pressure projection, or a session with nothing held, registers nothing, so
the plugin costs nothing in allocate's node search then.

Enabling: name it in a tier (``- name: reservation``); the demo configuration does.
It is not added implicitly, as no Volcano plugin is: the tiers say what runs.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

from controller.policy.framework.plugin import PluginContext, no_args
from controller.policy.framework.points import FitError, FitStatus
from controller.policy.framework.session import Session
from projections.model import MIN_RESOURCE, NodeInfo, Resource, TaskInfo
from projections.pressure import PressureState
from projections.world import PolicyInputs

NAME = "reservation"
BE = "BE"
#: Score of a node the task's owner just lost pods on (other plugins score up to 100).
EVICTED_OWNER_PENALTY = -50.0


def parse_args(raw: Mapping[str, Any]) -> None:
    """No arguments."""
    no_args(raw)


def pressure_state(world: PolicyInputs) -> PressureState:
    """The World's pressure projection (the reservations and evicted owners it folds)."""
    return world.pressure


def _le(a: float, b: float) -> bool:
    """Volcano's ``LessEqual`` on one dimension (with the 0.1 tolerance)."""
    return a < b or abs(a - b) < MIN_RESOURCE


def fit_key(task: TaskInfo) -> Hashable:
    """What the predicate reads of a task: its cpu and memory request if BE, else nothing."""
    if task.qos != BE:
        return None
    req = task.init_resreq
    return (req.milli_cpu, req.memory)


def owner_key(task: TaskInfo) -> str:
    """What the node order reads of a task: its owner."""
    return task.owner


class ReservationPlugin:
    name = NAME

    def on_session_open(self, ssn: Session) -> None:
        state = ssn.pressure
        now = ssn.now
        held: dict[str, Resource] = {}
        owners: dict[str, frozenset[str]] = {}
        for node_name in sorted(state.reservations):
            if node_name not in ssn.nodes:
                continue
            amount = state.reserved(node_name, now)
            if amount.milli_cpu > 0 or amount.memory > 0:
                held[node_name] = amount
            lost = state.evicted_owners(node_name, now)
            if lost:
                owners[node_name] = lost
        if held:

            def predicate(task: TaskInfo, node: NodeInfo) -> None:
                if task.qos != BE:
                    return
                amount = held.get(node.name)
                if amount is None:
                    return
                req, idle = task.init_resreq, node.idle
                if _le(req.milli_cpu, idle.milli_cpu - amount.milli_cpu) and _le(
                    req.memory, idle.memory - amount.memory
                ):
                    return
                raise FitError(
                    FitStatus.UNSCHEDULABLE,
                    f"node(s) hold resources reserved for LS pods after a pressure eviction "
                    f"(cpu {amount.milli_cpu:g}m, memory {amount.memory:g})",
                    plugin=NAME,
                )

            ssn.add_predicate_fn(NAME, predicate, key=fit_key)
        if owners:

            def node_order(task: TaskInfo, node: NodeInfo) -> float:
                lost = owners.get(node.name)
                if lost is not None and task.owner and task.owner in lost:
                    return EVICTED_OWNER_PENALTY
                return 0.0

            ssn.add_node_order_fn(NAME, node_order, key=owner_key)

    def on_session_close(self, ssn: Session) -> None:
        del ssn


def build(args: None, ctx: PluginContext) -> ReservationPlugin:
    del args, ctx
    return ReservationPlugin()
