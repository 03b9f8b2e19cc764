"""`tide audit`: the questions a log answers (why, decisions, timeline, metrics, summary).

Its own module so that `tide report` can add `audit series` here without importing the
simulate/replay commands, which import the report writer for `tide demo`.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Generator, Iterable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer

from controller.cli.common import fail
from controller.cli.lazy import lazy_group
from controller.cli.reading import about, decisions, is_recording, reader, records
from replay.audit import decision_keys, select_decisions
from streams.codec import decision_line
from streams.events import DECISION_TYPES, Event, format_time, parse_time
from streams.gcpause import paced
from streams.payloads import DECISION_KINDS, REASON_CODES, as_decision
from streams.subjects import VERSION as SUBJECTS_VERSION
from streams.subjects import job_key, mention_key, name_key, node_key
from streams.urls import DEFAULT_LOG

if TYPE_CHECKING:
    from projections.world import World
    from replay.explain import Answer
    from replay.whyread import Narrowed
    from streams.paging import LogReader

audit_app = typer.Typer(help="Questions over a log.", no_args_is_help=True)


@audit_app.command("why")
def audit_why(
    pod: Annotated[str, typer.Argument(help="namespace/name or name")],
    log: Annotated[str, typer.Option(help="Log URL or path.")] = DEFAULT_LOG,
    as_json: Annotated[bool, typer.Option("--json", help="JSON for scripts.")] = False,
) -> None:
    """Why was this pod evicted or bound (or not)? Sentences first, then the evidence."""
    from controller.cli.explain_cmd import _print_why, why_streamed

    answer = _why_read(log, pod)
    if answer is None:  # a recording, or a log without the indexes: read as before
        why_streamed(log, pod, as_json=as_json)
        return
    _print_why(pod, answer[0], answer[1], as_json=as_json)


def _why_read(source: str, pod: str) -> tuple[list[Answer], list[str]] | None:
    """The answer about ``pod`` folded only from moment to moment (:mod:`replay.whyread`):
    the pod's records from the subject index, the records by id, the World from the
    nearest checkpoint before each moment; None when the log has no subject index or no
    lookup by id (then :func:`controller.cli.explain_cmd.why_streamed` answers)."""
    from replay.streamed import WhyFold
    from replay.whyread import fold_why, local_keys, plan_for
    from streams.conflicts import RecordLookup

    if is_recording(source):
        return None
    with reader(source) as log:
        named = log.about([name_key(pod)])
        lookup = log.log
        if named is None or not isinstance(lookup, RecordLookup):
            return None
        found = list(named)
        narrow = _narrowed(log, pod, found)
        decided = list(log.of_types(DECISION_TYPES)) if narrow is None else narrow.decided
        if not found and WhyFold(pod, decided).first is None:
            return [], []  # the log names no such pod, no decision reads it

        def offsets(ids: set[str]) -> dict[str, int]:
            return {i: e.offset for i, e in log.run(lookup.records(sorted(ids))).items()}

        url = log.log.url or source
        plan = plan_for(
            pod,
            decided,
            named=found,
            configs=log.of_types(["config.applied"]),
            offsets_of=offsets,
            checkpoints=log.run(_positions(url)),
            known=None if narrow is None else (narrow.jobs, narrow.nodes),
        )
        moments = sorted(log.run(lookup.records(sorted(plan.ids))).values(), key=_offset)
        keys = local_keys(pod, plan)
        return fold_why(
            pod,
            decided,
            plan,
            records=lambda start: _records(log, start),
            resume=lambda upto: log.run(_resumed(log, url, upto)),
            local=None if narrow is None else lambda start: _local(log, keys, moments, start),
        )


def _narrowed(log: LogReader, pod: str, named: list[Event]) -> Narrowed | None:
    """The decisions ``pod``'s answer reads, by the SQLite log's indexes and narrow
    queries (:func:`replay.whyread.narrowed`); None on another log (every decision read)."""
    from replay.whyread import narrowed
    from streams.backends import sqlite_subjects as q

    if not q.is_sqlite(log.log):
        return None
    sqlite: Any = log.log  # a SQLiteLog (its class is not imported here: see is_sqlite)
    types = orjson.dumps(sorted(DECISION_TYPES)).decode()
    indexed = log.run(q.indexed(sqlite)) == SUBJECTS_VERSION  # mention keys: version 2 on

    def mentioning(key: str, text: str) -> list[Event]:
        if indexed:
            return list(log.about([key]) or ())
        return log.run(q.query(sqlite, q.MENTIONING, '["decision.evict"]', text))

    def caused(ids: Sequence[str]) -> list[Event]:
        return log.run(q.query(sqlite, q.CAUSED, types, orjson.dumps(list(ids)).decode()))

    def cooling(nodes: Sequence[str]) -> list[Event]:
        keys = orjson.dumps([node_key(n) for n in nodes]).decode()
        return log.run(q.query(sqlite, q.FILED_MENTIONING, keys, "decision.evict", "cooldown"))

    return narrowed(
        pod,
        named,
        naming=lambda name: mentioning(mention_key(name), name),
        of_job=lambda job: mentioning(job_key(job), job),
        caused=caused,
        cooling=cooling,
    )


def _records(log: LogReader, start: int) -> Generator[Event, None, None]:
    yield from paced(log.records(start))


def _offset(event: Event) -> int:
    return event.offset


def _local(
    log: LogReader, keys: list[str], moments: list[Event], start: int
) -> Generator[Event, None, None]:
    """The records the World's local parts fold from ``start`` on (offset order, once
    each): those under ``keys``, the ``config.applied`` records and ``moments``."""
    import heapq

    about = log.about(keys, start)
    if about is None:  # the plan was read from this index: it cannot be gone
        raise RuntimeError("the log's subject index is gone")
    later = (e for e in moments if e.offset >= start)
    configs = log.of_types(["config.applied"], start)
    last = -1
    for event in heapq.merge(about, configs, later, key=_offset):
        if event.offset != last:
            last = event.offset
            yield event


async def _positions(url: str) -> list[int]:
    from streams.backends.checkpoints import open_log_store

    store = await open_log_store(url, create=False)
    if store is None:
        return []
    async with store:
        try:
            return [info.position for info in await store.stored()]
        except store.unreadable:
            return []


async def _resumed(log: LogReader, url: str, upto: int) -> World | None:
    from projections.store import resume_at
    from streams.backends.checkpoints import open_log_store

    store = await open_log_store(url, create=False)
    if store is None:
        return None
    async with store:
        return await resume_at(store, log.log, upto=upto)


class DecisionFormat(StrEnum):
    """The forms of ``tide audit decisions``."""

    table = "table"
    jsonl = "jsonl"


#: the columns of ``tide audit decisions --format table``: heading and the field shown
_COLUMNS = (("time", "at"), ("kind", "kind"), ("reason", "reason"), ("node", "node"))


def decision_table(events: Iterable[Event]) -> list[str]:
    """The decisions as an aligned text table: a heading line, then one row per decision
    (time, kind, reason, node, and the pod as ``namespace/name`` or the taint)."""
    rows = [[heading for heading, _ in _COLUMNS] + ["pod / taint"]]
    for event in events:
        data = as_decision(event)
        cells = [format_time(event.at)]
        cells += [str(data.get(name) or "-") for _, name in _COLUMNS[1:]]
        if data.get("pod"):
            cells.append(f"{data.get('namespace')}/{data.get('pod')}")
        else:
            cells.append(_taint(data.get("taint")))
        rows.append(cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    ]


def _taint(taint: object) -> str:
    """A taint as kubectl writes one: ``key=value:Effect`` (``key:Effect`` without a value)."""
    if not isinstance(taint, dict):
        return "-"
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


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
    form: Annotated[
        DecisionFormat | None,
        typer.Option(
            "--format",
            help="table (one aligned row per decision) or jsonl (one JSON object per line);"
            " default: table on a terminal, jsonl on a pipe or in a file.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Decisions by time range, reason, node, namespace or kind: a table on a terminal,
    JSON Lines for scripts."""
    _known("--reason", reason, REASON_CODES)
    _known("--kind", kind, DECISION_KINDS)
    try:
        start = parse_time(since) if since else None
        stop = parse_time(until) if until else None
    except ValueError as exc:
        fail(str(exc))
    keys = decision_keys(node=node, namespace=namespace)
    chosen = select_decisions(
        decisions(log) if keys is None else about(log, keys),
        reason=reason,
        node=node,
        namespace=namespace,
        kind=kind,
        since=start,
        until=stop,
    )
    if form is None:  # a person at a terminal reads a table; a pipe keeps getting JSON Lines
        form = DecisionFormat.table if sys.stdout.isatty() else DecisionFormat.jsonl
    if form is DecisionFormat.jsonl:
        for event in chosen:
            typer.echo(decision_line(event).decode())
        return
    lines = decision_table(chosen)
    for line in lines:
        typer.echo(line)
    if len(lines) == 1:
        typer.echo("no decision matches", err=True)


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
