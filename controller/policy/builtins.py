"""The built-in plugin and action tables: the composition root's registries.

One explicit table each, as Volcano's ``pkg/scheduler/plugins/factory.go`` and
``pkg/scheduler/actions/factory.go`` register theirs. They live *above* the framework,
the plugins and the actions (the layers contract in ``pyproject.toml``), so the framework
never reaches up for them: whoever loads a configuration or runs a cycle passes the
tables in (``controller.policy.loader`` and ``controller.policy.engine`` default to these).

A plugin module exposes ``NAME``, ``parse_args(raw)``, ``build(args, ctx)`` and optionally
``schedules(args, ctx)`` (the triggers it declares); an action module exposes ``NAME``,
``parse_args(raw)`` and ``build(args)``.
"""

from __future__ import annotations

from collections.abc import Mapping

from controller.policy.actions import allocate, backfill, preempt, shuffle
from controller.policy.framework.plugin import ActionSpec, PluginSpec
from controller.policy.plugins import (
    conformance,
    gang,
    nodeorder,
    predicates,
    priority,
    proportion,
    rescheduling,
    reservation,
    tdm,
    usage,
)
from projections.behaviour import PLACEMENT_PLUGINS, PREEMPT_BACKFILL

PluginRegistry = Mapping[str, PluginSpec]
ActionRegistry = Mapping[str, ActionSpec]

BUILTIN_PLUGINS: dict[str, PluginSpec] = {
    spec.name: spec
    for spec in (
        PluginSpec(priority.NAME, priority.parse_args, priority.build),
        PluginSpec(gang.NAME, gang.parse_args, gang.build),
        PluginSpec(conformance.NAME, conformance.parse_args, conformance.build),
        PluginSpec(predicates.NAME, predicates.parse_args, predicates.build),
        PluginSpec(proportion.NAME, proportion.parse_args, proportion.build),
        PluginSpec(tdm.NAME, tdm.parse_args, tdm.build, tdm.schedules),
        PluginSpec(reservation.NAME, reservation.parse_args, reservation.build),
        PluginSpec(
            rescheduling.NAME,
            rescheduling.parse_args,
            rescheduling.build,
            rescheduling.schedules,
            rescheduling.warnings,
            since=PLACEMENT_PLUGINS,
        ),
        # since a change: configurations of older logs named them and had them skipped
        PluginSpec(nodeorder.NAME, nodeorder.parse_args, nodeorder.build, since=PLACEMENT_PLUGINS),
        PluginSpec(usage.NAME, usage.parse_args, usage.build, since=PLACEMENT_PLUGINS),
        # ---- register further plugins here -----------------------------------------------
    )
}

BUILTIN_ACTIONS: dict[str, ActionSpec] = {
    module.NAME: ActionSpec(module.NAME, module.parse_args, module.build)
    for module in (allocate, shuffle)
}
# since a change: configurations of older logs named them and had them skipped
BUILTIN_ACTIONS[preempt.NAME] = ActionSpec(
    preempt.NAME, preempt.parse_args, preempt.build, since=PREEMPT_BACKFILL
)
BUILTIN_ACTIONS[backfill.NAME] = ActionSpec(
    backfill.NAME, backfill.parse_args, backfill.build, since=PREEMPT_BACKFILL
)
# ---- register further actions above (e.g. preempt) -------------------------------------
