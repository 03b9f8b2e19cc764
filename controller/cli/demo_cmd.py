"""`tide demo`: the built-in co-located cluster through a day of virtual time, its report.

A thin command: :func:`controller.simulate.demo.run_demo` runs the demo's scenario and
keeps its log, :func:`controller.compose.simulated.save_checkpoint` leaves the log's World
checkpoint, and ``tide report``'s page is written beside it.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from controller.cli.common import fail
from controller.compose.simulated import save_checkpoint
from controller.simulate.demo import run_demo
from streams.backends import is_sqlite_log
from streams.events import Event
from streams.payloads import as_decision, as_evict


def tide_command() -> str:
    """How to run ``tide`` from here, as the hints print it: ``tide`` when the ``tide`` on
    ``$PATH`` is this one; else the path of this installation's script (relative to the
    working directory when under it: ``.venv/bin/tide`` after the quick start, which
    never activates the virtual environment)."""
    script = Path(sys.executable).parent / "tide"
    if not script.is_file():
        return "tide"  # not a console-script installation: nothing better to print
    found = shutil.which("tide")
    if found is not None and Path(found).resolve() == script.resolve():
        return "tide"
    try:
        shown = script.relative_to(Path.cwd())
    except ValueError:
        return shlex.quote(str(script))
    return shlex.quote(str(shown))


def hints(decisions: Sequence[Event], db: Path, *, tide: str) -> list[str]:
    """The commands to try next on the demo's log, each runnable as printed."""
    log = shlex.quote(str(db))
    evicted = next((d for d in decisions if as_decision(d).get("kind") == "evict"), None)
    out = []
    if evicted is not None:
        pod = as_evict(evicted)
        out.append(f"{tide} audit why {pod['namespace']}/{pod['pod']} --log {log}")
    out += [
        f"{tide} audit decisions --log {log} --reason tdm-window-closed",
        f"{tide} audit timeline --log {log} --node shared-0",
        f"{tide} state {log} --at 2026-11-21T13:30:00Z",
        f"{tide} replay {log} --verify",
        f"{tide} audit metrics --log {log}",
    ]
    return out


def demo(
    db: Annotated[Path, typer.Option(help="Where to keep the demo's log.")] = Path("tide-demo.db"),
) -> None:
    """A built-in co-located cluster through a day of virtual time; ends with its report."""
    if db.exists() and not is_sqlite_log(db):
        fail(f"--db {db} exists and is not a tide log; the demo replaces its log: name another")
    decisions = run_demo(db)
    save_checkpoint(f"sqlite:///{db}")
    tide = tide_command()
    typer.echo(f"the log is in {db}. Try:")
    for line in hints(decisions, db, tide=tide):
        typer.echo(f"  {line}")
    from controller.cli.report_cmd import write_report

    page = db.with_suffix(".html")
    shown = write_report(str(db), page, title="tide demo: a day of a co-located cluster")
    again = f"{tide} report {shlex.quote(str(db))} --out {shlex.quote(str(page))}"
    typer.echo(f"\nthe report (open it in a browser, no network needed): {page}")
    typer.echo(f"  {shown} decisions drawn; {again} writes it again")


def register(app: typer.Typer) -> None:
    """Add ``tide demo``."""
    app.command()(demo)
