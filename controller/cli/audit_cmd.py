"""`tide audit`: the questions a log answers (why, decisions, timeline, metrics, summary).

Its own module so that `tide report` can add `audit series` here without importing the
simulate/replay commands, which import the report writer for `tide demo`.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any

import typer

from controller.cli.common import fail
from controller.cli.lazy import lazy_group
from controller.cli.reading import about, decisions, records
from replay.audit import decision_keys, select_decisions
from streams.codec import decision_line
from streams.events import parse_time
from streams.payloads import DECISION_KINDS, REASON_CODES, as_decision
from streams.urls import DEFAULT_LOG

audit_app = typer.Typer(help="Questions over a log.", no_args_is_help=True)


@audit_app.command("why")
def audit_why(
    pod: Annotated[str, typer.Argument(help="namespace/name or name")],
    log: Annotated[str, typer.Option(help="Log URL or path.")] = DEFAULT_LOG,
    as_json: Annotated[bool, typer.Option("--json", help="JSON for scripts.")] = False,
) -> None:
    """Why was this pod evicted or bound (or not)? Sentences first, then the evidence."""
    from controller.cli.explain_cmd import why_streamed

    why_streamed(log, pod, as_json=as_json)


def _known(option: str, value: str | None, valid: frozenset[str]) -> None:
    if value is not None and value not in valid:
        raise typer.BadParameter(
            f"unknown {option.lstrip('-')} {value!r} (valid: {', '.join(sorted(valid))})",
            param_hint=option,
        )


@audit_app.command("decisions")
def audit_decisions(
    log: Annotated[str, typer.Option(help="Log URL or path.")] = DEFAULT_LOG,
    reason: str | None = None,
    node: str | None = None,
    namespace: str | None = None,
    kind: str | None = None,
    since: Annotated[str | None, typer.Option("--from", help="RFC 3339")] = None,
    until: Annotated[str | None, typer.Option("--to", help="RFC 3339")] = None,
) -> None:
    """Decisions by time range, reason, node, namespace or kind (JSON Lines)."""
    _known("--reason", reason, REASON_CODES)
    _known("--kind", kind, DECISION_KINDS)
    try:
        start = parse_time(since) if since else None
        stop = parse_time(until) if until else None
    except ValueError as exc:
        fail(str(exc))
    keys = decision_keys(node=node, namespace=namespace)
    for event in select_decisions(
        decisions(log) if keys is None else about(log, keys),
        reason=reason,
        node=node,
        namespace=namespace,
        kind=kind,
        since=start,
        until=stop,
    ):
        typer.echo(decision_line(event).decode())


@audit_app.command("timeline")
def audit_timeline(
    log: Annotated[str, typer.Option(help="Log URL or path.")] = DEFAULT_LOG,
    pod: str | None = None,
    node: str | None = None,
    metrics: Annotated[
        bool, typer.Option("--metrics/--no-metrics", help="Include the usage samples.")
    ] = True,
    summary: Annotated[bool, typer.Option(help="A few lines instead of every record.")] = False,
) -> None:
    """Everything that happened to one pod or node (pressure as % of capacity)."""
    from replay.timeline import timeline, timeline_keys, timeline_summary, zone_keys

    if not pod and not node:
        fail("give --pod or --node")
    events = about(log, timeline_keys(pod=pod, node=node), then=lambda f: zone_keys(f, node))
    if summary:
        lines = timeline_summary(events, pod=pod, node=node)
    else:
        lines = timeline(events, pod=pod, node=node, metrics=metrics)
    for line in lines:
        typer.echo(line)


@audit_app.command("metrics")
def audit_metrics(
    log: Annotated[str, typer.Option(help="Log URL or path.")] = DEFAULT_LOG,
) -> None:
    """The pressure-eviction metrics, computed from the log (Prometheus text format)."""
    from projections.metrics import compute_metrics
    from replay.metrics import render

    typer.echo(render(compute_metrics(records(log))), nl=False)


@audit_app.command("summary")
def audit_summary(
    log: Annotated[str, typer.Option(help="Log URL or path.")] = DEFAULT_LOG,
) -> None:
    """Counts of records and decisions by type and reason; any node that was over its
    allocatable (the over-commit invariant), with when and by how much."""
    from replay.overcommit import OvercommitFold

    types: Counter[str] = Counter()
    reasons: Counter[tuple[Any, Any]] = Counter()
    overcommit = OvercommitFold()
    for e in records(log):
        types[e.type] += 1
        overcommit.apply(e)
        if e.type.startswith("decision."):
            decision = as_decision(e)
            reasons[decision.get("kind"), decision.get("reason")] += 1
    for name, count in sorted(types.items()):
        typer.echo(f"{name:18} {count}")
    for (kind, reason), count in sorted(reasons.items(), key=lambda kv: (str(kv[0]), kv[1])):
        typer.echo(f"  {kind} {reason}: {count}")
    for line in overcommit.lines():
        typer.echo(line)


def register(app: typer.Typer) -> None:
    """Add `tide audit` and its questions (`tide audit series` is `tide report`'s, loaded
    when asked for)."""
    app.add_typer(audit_app, name="audit", cls=lazy_group(audit_app, {"series": ("report_cmd",)}))
