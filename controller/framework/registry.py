"""Where the built-in plugin and action tables are found.

The tables themselves live with their implementations (``controller.plugins.BUILTIN_PLUGINS``,
``controller.actions.BUILTIN_ACTIONS``), one explicit table each, as Volcano's
``factory.go`` files. The framework sits *below* those packages, so it must not import
them statically (the layers contract in ``pyproject.toml`` holds that); configuration
loading still has to validate every plugin's arguments at load time. The two functions
here resolve the tables late, by module name, and are the only such place: callers
that have a registry at hand (the engine, tests) pass it explicitly instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from controller.framework.plugin import ActionSpec, PluginSpec

PluginRegistry = Mapping[str, PluginSpec]
ActionRegistry = Mapping[str, ActionSpec]


def builtin_plugins() -> PluginRegistry:
    """``controller.plugins.BUILTIN_PLUGINS``, resolved at call time."""
    table: PluginRegistry = importlib.import_module("controller.plugins").BUILTIN_PLUGINS
    return table


def builtin_actions() -> ActionRegistry:
    """``controller.actions.BUILTIN_ACTIONS``, resolved at call time."""
    table: ActionRegistry = importlib.import_module("controller.actions").BUILTIN_ACTIONS
    return table
