"""`tide demo`: the built-in co-located cluster through a day of virtual time, its report.

A thin command: :func:`controller.simulate.demo.run_demo` runs the demo's scenario and
keeps its log, :func:`controller.compose.simulated.save_checkpoint` leaves the log's World
checkpoint, and ``tide report``'s page is written beside it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from controller.cli.common import fail
from controller.compose.simulated import save_checkpoint
from controller.simulate.demo import run_demo
from streams.backends import is_sqlite_log


def demo(
    db: Annotated[Path, typer.Option(help="Where to keep the demo's log.")] = Path("tide-demo.db"),
) -> None:
    """A built-in co-located cluster through a day of virtual time; ends with its report."""
    if db.exists() and not is_sqlite_log(db):
        fail(f"--db {db} exists and is not a tide log; the demo replaces its log: name another")
    run_demo(db)
    save_checkpoint(f"sqlite:///{db}")
    from controller.cli.report_cmd import write_report

    page = db.with_suffix(".html")
    shown = write_report(str(db), page, title="tide demo: a day of a co-located cluster")
    typer.echo(f"\nthe report (open it in a browser, no network needed): {page}")
    typer.echo(f"  {shown} decisions drawn; tide report {db} --out {page} writes it again")


def register(app: typer.Typer) -> None:
    """Add ``tide demo``."""
    app.command()(demo)
