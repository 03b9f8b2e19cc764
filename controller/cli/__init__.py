"""The `tide` command line. Each command group lives in its own module with a
``register(app)`` function; this module only assembles them, and loads a command's module
only when that command runs (or when ``tide --help`` lists them all), so that a command
imports what it uses and nothing else: ``tide --version`` and ``tide audit decisions`` never
import the Kubernetes client, the HTTP server or the Prometheus library that ``tide run``
needs (tests/controller/cli/test_startup.py)."""

from __future__ import annotations

try:  # Ctrl-C while Python imports the command line is exit 130 too, no traceback
    from typing import Annotated

    import typer

    from controller.cli.coercion import install
    from controller.cli.lazy import lazy_group
except KeyboardInterrupt:
    raise SystemExit(130) from None

#: the order of ``tide --help``: each command's name and the modules (under
#: ``controller.cli``, imported when the command is looked up: controller/cli/lazy.py)
#: whose ``register(app)`` add it
COMMANDS: dict[str, tuple[str, ...]] = {
    "log": ("log_cmd",),
    "state": ("state_cmd",),
    "simulate": ("simulate_cmd",),
    "demo": ("demo_cmd",),
    "replay": ("replay_cmd",),
    "audit": ("audit_cmd",),
    "report": ("report_cmd",),
    "record": ("record_cmd",),
    "run": ("run_cmd",),
}

install()  # typer's parameter coercion without pydantic for tide's plain types

app = typer.Typer(
    name="tide",
    cls=lazy_group(None, COMMANDS),
    help="tide: a reactive, event-sourced Kubernetes controller for co-located clusters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: rich's panels show every flag as <bool>
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"tide {version('tide')}")
        except PackageNotFoundError:
            typer.echo("tide (not installed)")
        raise typer.Exit()


@app.callback()
def _options(
    show_version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """tide: a reactive, event-sourced Kubernetes controller for co-located clusters."""


def main() -> None:
    """Console-script entry point: exit 130 on Ctrl-C at any moment (the commands' own
    ``guarded`` wrapper and typer turn it into that code; this holds outside them)."""
    try:
        app()
    except KeyboardInterrupt:
        raise SystemExit(130) from None  # controller.cli.common.EXIT_INTERRUPTED
