"""Built-in actions: the one table that registers them (Volcano's ``actions/factory.go``).

Each action module exposes ``NAME``, ``parse_args(raw) -> Args`` (its ``configurations``
entry) and ``build(args) -> Action``; an action's ``execute(ssn)`` stages operations on
statements and commits them, and the engine collects the committed decision events.
"""

from __future__ import annotations

from controller.actions import allocate, shuffle
from controller.framework.plugin import ActionSpec

BUILTIN_ACTIONS: dict[str, ActionSpec] = {
    module.NAME: ActionSpec(module.NAME, module.parse_args, module.build)
    for module in (allocate, shuffle)
}

# ---- register further actions below (e.g. preempt) -------------------------------------
