"""Commands whose modules load when they are looked up, so that a command imports what it
uses and nothing else (``tide --version`` and ``tide audit decisions`` never import the
Kubernetes client, the HTTP server or the Prometheus library ``tide run`` needs; tested by
tests/controller/cli/test_startup.py, measured by benchmarks/bench_startup.py).

A command module keeps its ``register(app)`` function; :func:`load` imports modules by
name and registers them on a scratch Typer, and :func:`lazy_group` makes the click group
class that asks for them only when one of its commands is looked up (to run it, or to
list it in ``--help``).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import import_module

import typer
from typer.core import TyperGroup

#: the callbacks already wrapped by :func:`controller.cli.common.guarded` (by id)
_GUARDED: set[int] = set()


@cache
def load(modules: tuple[str, ...]) -> typer.Typer:
    """A Typer holding what the ``controller.cli`` ``modules`` register, every command
    (and every command they add to a group defined elsewhere, ``tide audit series``)
    wrapped once by :func:`controller.cli.common.guarded`; imported once per process."""
    holder = typer.Typer(rich_markup_mode=None)
    for module in modules:
        import_module(f"controller.cli.{module}").register(holder)
    guard(holder)
    return holder


def guard(app: typer.Typer) -> None:
    """:func:`controller.cli.common.guarded` around each command of ``app`` and its groups
    that is not wrapped yet, and their help as plain text
    (:func:`controller.cli.common.plain_help`)."""
    from controller.cli.common import guarded, plain_help

    plain_help(app)  # help as plain text: no reStructuredText, no rich panels
    for command in app.registered_commands:
        if command.callback is not None and id(command.callback) not in _GUARDED:
            command.callback = guarded(command.callback)
            _GUARDED.add(id(command.callback))
    for group in app.registered_groups:
        if group.typer_instance is not None:
            guard(group.typer_instance)


def lazy_group(owner: typer.Typer | None, later: Mapping[str, tuple[str, ...]]) -> type[TyperGroup]:
    """A click group class for ``owner`` (the Typer it is built from; None: the top-level
    app) whose commands named in ``later`` are added by the modules given there, imported
    when the command is first looked up. They are listed after ``owner``'s own, in the
    order of ``later``."""

    class LazyGroup(TyperGroup):
        def list_commands(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]
            own = super().list_commands(ctx)
            return [*(n for n in later if owner is None), *own] + [
                n for n in later if owner is not None and n not in own
            ]

        def get_command(  # type: ignore[override]
            self, ctx: typer.Context, cmd_name: str
        ) -> typer.core.TyperCommand | TyperGroup | None:
            if cmd_name not in self.commands and cmd_name in later:
                holder = load(later[cmd_name])
                if owner is not None:  # what the modules added to owner, guarded too
                    guard(owner)
                built = typer.main.get_group(owner or holder).commands.get(cmd_name)
                if built is not None:
                    self.commands[cmd_name] = built
            found = self.commands.get(cmd_name)
            return found  # type: ignore[return-value]

    return LazyGroup
