"""`tide report` (the HTML picture of a log) and `tide audit series` (its samples as CSV).

The page itself is built in :mod:`replay.report`; this module reads the log, parses the
options and writes the file.
"""

from __future__ import annotations

import csv
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from controller.cli.common import fail, read_log_events
from controller.settings import DEFAULT_LOG
from replay.report import collect, render, series
from streams.events import parse_time


def _time(text: str | None, option: str) -> datetime | None:
    if not text:
        return None
    try:
        return parse_time(text)
    except ValueError as exc:
        fail(f"{option}: {text!r}: {exc}")


def write_report(log: str, out: Path, *, title: str | None = None) -> int:
    """Write the report of ``log`` to ``out``; return how many decisions it shows."""
    events = read_log_events(log)
    day = collect(events)
    out.write_text(render(day, events, title=title or f"tide report: {log}"), encoding="utf-8")
    return len(day.decisions)


def report(
    log: Annotated[str, typer.Argument(help="A log URL, a .db file or a .jsonl recording.")],
    out: Annotated[Path, typer.Option(help="The HTML file to write.")] = Path("report.html"),
    since: Annotated[str | None, typer.Option("--from", help="RFC 3339")] = None,
    until: Annotated[str | None, typer.Option("--to", help="RFC 3339")] = None,
    node: Annotated[list[str] | None, typer.Option(help="Only these nodes (repeat).")] = None,
) -> None:
    """One self-contained HTML page: pressure, thresholds, windows and decisions per node."""
    start, stop = _time(since, "--from"), _time(until, "--to")
    events = read_log_events(log)
    day = collect(events, since=start, until=stop, only=tuple(node or ()))
    if node and not day.nodes:
        fail(f"--node: no such node in {log}: {', '.join(node)}")
    out.write_text(render(day, events, title=f"tide report: {log}"), encoding="utf-8")
    typer.echo(f"wrote {out}: {len(day.nodes)} node(s), {len(day.decisions)} decisions")


def audit_series(
    node: Annotated[str, typer.Option(help="The node whose samples to print.")],
    log: Annotated[str, typer.Option(help="Log URL or path.")] = DEFAULT_LOG,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV (the only format for now).")] = True,
) -> None:
    """A node's usage samples (time, cpu %, memory %, cores, GiB) as CSV, to plot elsewhere."""
    day = collect(read_log_events(log), only=(node,))
    if node not in day.nodes:
        fail(f"--node: no such node in {log}: {node}")
    csv.writer(sys.stdout, lineterminator="\n").writerows(series(day, node))


def register(app: typer.Typer) -> None:
    """Add `tide report` and `tide audit series`."""
    from controller.cli.run_cmd import audit_app

    app.command()(report)
    audit_app.command("series")(audit_series)
