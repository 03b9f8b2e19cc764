"""`tide report` (the HTML picture of a log) and `tide audit series` (its samples as CSV or
JSON Lines).

The page itself is built in :mod:`replay.report`; this module reads the log, parses the
options and writes the file.
"""

from __future__ import annotations

import csv
import json
import sys
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from controller.cli.audit_cmd import audit_app
from controller.cli.common import fail, read_log_events, read_policy
from controller.cli.progress import Progress, tracked
from controller.cli.reading import decisions, folded, records
from controller.cli.report_read import report_day
from replay.bindview import BindFold
from replay.report import collect, render, series
from replay.report_whatif import whatif_section
from replay.resimulate import decision_dicts, diff_runs
from replay.streamed import ReportFold
from replay.verify import replay
from replay.whatif import WhatIf, compare, from_report
from streams.codec import decision_line
from streams.events import DECISION_TYPES, Event, parse_time
from streams.urls import DEFAULT_LOG

#: the binds a page derives every node's verdict for, by default (a page to print keeps a few)
BIND_VIEWS = 100


def _time(text: str | None, option: str) -> datetime | None:
    if not text:
        return None
    try:
        return parse_time(text)
    except ValueError as exc:
        fail(f"{option}: {text!r}: {exc}")


def write_report(log: str, out: Path, *, title: str | None = None) -> int:
    """Write the report of ``log`` to ``out``; return how many decisions it shows."""
    fold = ReportFold(decisions(log))
    day = fold.day(folded(log, "report"))
    page = render(day, fold.needed(), title=title or f"tide report: {log}")
    out.write_text(page, encoding="utf-8")
    return len(day.decisions)


def report(
    log: Annotated[str, typer.Argument(help="A log URL, a .db file or a .jsonl recording.")],
    out: Annotated[Path, typer.Option(help="The HTML file to write.")] = Path("report.html"),
    since: Annotated[str | None, typer.Option("--from", help="RFC 3339")] = None,
    until: Annotated[str | None, typer.Option("--to", help="RFC 3339")] = None,
    node: Annotated[list[str] | None, typer.Option(help="Only these nodes (repeat).")] = None,
    against: Annotated[
        str | None, typer.Option(help="What-if view: compare with this second log's decisions.")
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(help="What-if view: this log's decision points under another config."),
    ] = None,
    resimulate: Annotated[
        bool,
        typer.Option(help="With --config: re-run the log's inputs through the simulator."),
    ] = False,
    bind_views: Annotated[
        int,
        typer.Option(
            "--bind-views",
            min=0,
            help="Derive every node's verdict for the range's first N binds (each costs one"
            " evaluation of every node).",
        ),
    ] = BIND_VIEWS,
) -> None:
    """One self-contained HTML page to print for an incident review: a summary of what
    was decided where and when, decisions per reason per hour, the binds, and per node
    (busiest first) pressure, thresholds, windows and decisions; with --against or
    --config, a what-if view of the two decision streams."""
    start, stop = _time(since, "--from"), _time(until, "--to")
    if against and config:
        fail("give --against or --config, not both")
    if resimulate and config is None:
        fail("--resimulate needs --config: the configuration to re-run the inputs under")
    only = tuple(node or ())
    found = None
    if against or config:  # the what-if views compare whole runs: read the log whole
        events = read_log_events(log)
        day = collect(
            tracked(events, "report"),
            since=start,
            until=stop,
            only=only,
            binds=BindFold(events, since=start, until=stop, limit=bind_views),
        )
        if node and not day.nodes:
            fail(f"--node: no such node in {log}: {', '.join(node)}")
        found = _whatif(events, against=against, config=config, resimulate=resimulate)
    else:  # streamed: the decisions, then one paged pass (from a checkpoint before --from)
        day, events = report_day(log, since=start, until=stop, only=only, bind_views=bind_views)
        if node and not day.nodes:
            fail(f"--node: no such node in {log}: {', '.join(node)}")
    extra = [whatif_section(found[0], label=found[1])] if found else []
    out.write_text(render(day, events, title=f"tide report: {log}", extra=extra), "utf-8")
    typer.echo(
        f"wrote {out}: {len(day.nodes)} node(s), {len(day.decisions)} decisions"
        + (f"; what-if: {found[0].real} real difference(s)" if found else "")
    )


def _whatif(
    events: list[Event], *, against: str | None, config: Path | None, resimulate: bool
) -> tuple[WhatIf, str] | None:
    """The what-if of this log against a second log or another configuration, and its label."""
    if against:
        other = read_log_events(against)
        return compare(decision_dicts(events), decision_dicts(other)), f"{against} vs this log"
    if config is None:
        return None
    policy = read_policy(config)
    if resimulate:
        from controller.cli.explain_cmd import resimulate as rerun

        after = rerun(events, policy, source=str(config))
        return diff_runs(events, after), f"the inputs re-simulated under {config}"
    with Progress("replay", len(events)) as bar:
        replayed = replay(events, override=policy.raw, stop_at_first=False, progress=bar.callback())
    recorded = [decision_line(e).decode() for e in events if e.type in DECISION_TYPES and e.cause]
    return from_report(replayed, recorded), f"the decision points replayed under {config}"


class SeriesFormat(StrEnum):
    """The forms of ``tide audit series``: CSV for a spreadsheet or a plotting tool, JSON
    Lines for ``jq`` and the scripts that read ``tide audit decisions``."""

    csv = "csv"
    jsonl = "jsonl"


def audit_series(
    node: Annotated[str, typer.Option(help="The node whose samples to print.")],
    log: Annotated[str, typer.Option(help="Log URL or path.")] = DEFAULT_LOG,
    form: Annotated[
        SeriesFormat,
        typer.Option("--format", help="csv (a header row, then one row per sample) or jsonl."),
    ] = SeriesFormat.csv,
    as_csv: Annotated[
        bool, typer.Option("--csv", hidden=True, help="The same as --format csv.")
    ] = False,
) -> None:
    """A node's usage samples (time, cpu %, memory %, cores, GiB) as CSV or JSON Lines, to
    plot elsewhere."""
    if as_csv and form is not SeriesFormat.csv:
        fail(f"--csv and --format {form.value} ask for two formats: give one")
    day = collect(records(log), only=(node,))
    if node not in day.nodes:
        fail(f"--node: no such node in {log}: {node}")
    rows = series(day, node)
    if form is SeriesFormat.csv:
        csv.writer(sys.stdout, lineterminator="\n").writerows(rows)
        return
    heading, samples = rows[0], rows[1:]
    for row in samples:
        values = [row[0], *(float(cell) for cell in row[1:])]
        typer.echo(json.dumps(dict(zip(heading, values, strict=True))))


def register(app: typer.Typer) -> None:
    """Add `tide report` and `tide audit series`."""
    app.command()(report)
    audit_app.command("series")(audit_series)
