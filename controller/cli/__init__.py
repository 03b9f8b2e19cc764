"""The `tide` command line. Each command group lives in its own module with a
``register(app)`` function; this module only assembles them."""

from __future__ import annotations

import typer

from controller.cli import log_cmd, record_cmd, report_cmd, run_cmd, state_cmd

app = typer.Typer(
    name="tide",
    help="tide: a reactive, event-sourced Kubernetes controller for co-located clusters.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for module in (log_cmd, state_cmd, run_cmd, report_cmd, record_cmd):
    module.register(app)


def main() -> None:
    """Console-script entry point."""
    app()
