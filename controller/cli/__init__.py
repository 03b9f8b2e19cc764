"""The `tide` command line. Each command group lives in its own module with a
``register(app)`` function; this module only assembles them."""

from __future__ import annotations

try:  # Ctrl-C while Python imports the command line is exit 130 too, no traceback
    from importlib.metadata import PackageNotFoundError, version
    from typing import Annotated

    import typer

    from controller.cli import (
        audit_cmd,
        demo_cmd,
        log_cmd,
        record_cmd,
        replay_cmd,
        report_cmd,
        run_cmd,
        simulate_cmd,
        state_cmd,
    )
    from controller.cli.common import EXIT_INTERRUPTED, guard_all, plain_help
except KeyboardInterrupt:
    raise SystemExit(130) from None

app = typer.Typer(
    name="tide",
    help="tide: a reactive, event-sourced Kubernetes controller for co-located clusters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: the order of ``tide --help``
COMMANDS = (
    log_cmd,
    state_cmd,
    simulate_cmd,
    demo_cmd,
    replay_cmd,
    audit_cmd,
    report_cmd,
    record_cmd,
    run_cmd,
)
for module in COMMANDS:
    module.register(app)
guard_all(app)
plain_help(app)


def _version(value: bool) -> None:
    if value:
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
        raise SystemExit(EXIT_INTERRUPTED) from None
