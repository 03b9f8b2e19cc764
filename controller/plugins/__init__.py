"""Built-in plugins: the one table that registers them (Volcano's ``plugins/factory.go``).

Each plugin module exposes ``NAME``, ``parse_args(raw) -> Args`` and
``build(args, ctx) -> Plugin``; :data:`BUILTIN_PLUGINS` maps the name a configuration
uses to its :class:`~controller.framework.plugin.PluginSpec`.
"""

from __future__ import annotations

from controller.framework.plugin import PluginSpec
from controller.plugins import (
    conformance,
    gang,
    predicates,
    priority,
    proportion,
    reservation,
    tdm,
)

BUILTIN_PLUGINS: dict[str, PluginSpec] = {
    module.NAME: PluginSpec(module.NAME, module.parse_args, module.build)
    for module in (priority, gang, conformance, predicates, proportion, tdm, reservation)
}
