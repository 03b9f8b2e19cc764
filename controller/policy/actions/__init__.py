"""Built-in actions, one module each (Volcano's ``pkg/scheduler/actions``).

Each action module exposes ``NAME``, ``parse_args(raw) -> Args`` (its ``configurations``
entry) and ``build(args) -> Action``; an action's ``execute(ssn)`` stages operations on
statements and commits them, and the engine collects the committed decision events. The
table that registers them is :data:`controller.policy.builtins.BUILTIN_ACTIONS`.
"""
