"""The printing side of `tide audit why` (answers, then non-decisions) and of the
`tide replay --config` what-if summary, as text or JSON.

Kept apart from :mod:`controller.cli.run_cmd` so the command function there stays a thin
wrapper; the explanations themselves are built in :mod:`replay.explain` and
:mod:`replay.whynot`.
"""

from __future__ import annotations

import json

import typer

from replay.explain import answers
from replay.verify import ReplayReport
from replay.whatif import from_report
from replay.whynot import why_not
from streams.codec import decision_line
from streams.events import DECISION_TYPES, Event


def why(events: list[Event], pod: str, *, as_json: bool) -> None:
    """Print why ``pod`` was evicted or bound, and why not; exit 1 when nothing is known."""
    found = answers(events, pod)
    passed = why_not(events, pod)
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "pod": pod,
                    "decisions": [a.as_json() for a in found],
                    "not_decided": passed,
                },
                indent=2,
                sort_keys=True,
            )
        )
    else:
        blocks = [a.text() for a in found] + [f"not decided: {line}" for line in passed]
        typer.echo("\n\n".join(blocks) if blocks else f"no decision about {pod}")
    if not found and not passed:
        raise typer.Exit(1)


def print_whatif(
    events: list[Event], report: ReplayReport, *, start: int, as_json: bool, diff: bool
) -> None:
    """Print a counterfactual replay: the differing points with ``diff``, then the summary."""
    recorded = [
        decision_line(e).decode()
        for e in events
        if e.type in DECISION_TYPES and e.cause is not None and e.offset >= start
    ]
    whatif = from_report(report, recorded)
    if as_json:
        typer.echo(json.dumps(whatif.as_json(), indent=2, sort_keys=True))
        return
    if diff:
        for difference in report.differences:
            typer.echo(difference.describe())
    typer.echo(
        f"replayed {report.checked} decision points, {report.decisions} recorded decisions "
        f"under the other configuration: {len(report.differences)} point(s) differ"
    )
    for line in whatif.lines():
        typer.echo(line)
