"""The one pure entry point from a log record to the decisions it causes.

Both the live/simulated loop and ``tide replay --verify`` call :func:`decide` with the
world folded up to and including ``event``; what it returns is, by construction, a
function of the log prefix. Routing:

* ``trigger.fired`` of a session kind (tick, TDM window start/end, evict period) → a
  Volcano-style session (``controller.policy.engine.run_cycle``);
* ``trigger.fired`` of a pressure follow-up kind (later graceful batch, untaint) and every
  ``metrics.node`` sample → pressure eviction (``controller.policy.pressure``).
"""

from __future__ import annotations

from controller.policy.engine import run_cycle
from controller.policy.framework.config import TideConfig
from controller.policy.pressure import PRESSURE_TRIGGER_KINDS, check_node, on_trigger
from controller.policy.pressure.config import EvictionConfig
from projections.world import World
from streams.events import Event
from streams.payloads import as_trigger


def decide(
    world: World, event: Event, config: TideConfig | None, eviction: EvictionConfig | None
) -> list[Event]:
    """The decision events ``event`` causes, given the world folded through ``event``.

    ``config`` None runs no sessions, ``eviction`` None no pressure eviction.
    """
    if event.type == "trigger.fired":
        if as_trigger(event).get("kind") in PRESSURE_TRIGGER_KINDS:
            return on_trigger(world, event, eviction) if eviction is not None else []
        return run_cycle(world, event, config) if config is not None else []
    if event.type == "metrics.node" and eviction is not None:
        return check_node(world, event, eviction)
    return []


def is_decision_source(event: Event) -> bool:
    """Whether ``event`` can cause decisions (replay re-derives exactly these)."""
    return event.type in ("trigger.fired", "metrics.node")
