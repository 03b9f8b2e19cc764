"""Built-in plugins, one module (or package) each (Volcano's ``pkg/scheduler/plugins``).

Each plugin module exposes ``NAME``, ``parse_args(raw) -> Args``,
``build(args, ctx) -> Plugin`` and optionally ``schedules(args, ctx)``; the table that
registers them is :data:`controller.policy.builtins.BUILTIN_PLUGINS` (above this package, so
that plugins stay independent of one another and of the table).
"""
