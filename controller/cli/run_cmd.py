"""`tide simulate`, `tide demo`, `tide replay` and `tide audit`."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import orjson
import typer
import yaml

from controller.cli.common import (
    RECORD_CHECKS,
    fail,
    persist,
    read_log_events,
    read_policy,
    require_persistent,
    resume_from,
    save_checkpoint,
)
from controller.cli.progress import Progress
from controller.framework.durations import parse_duration
from controller.settings import DEFAULT_LOG
from controller.simulate.demo import run_demo
from controller.simulate.runner import Simulation
from controller.simulate.scenario import ScenarioError, frees_usage, is_scenario, load_scenario
from replay.audit import select_decisions
from replay.timeline import timeline, timeline_summary
from replay.verify import replay
from streams.backends import is_sqlite_log, open_log
from streams.chain import ChainReport, Sealable, check_chain, run_id
from streams.codec import decision_line
from streams.events import Event, format_time, parse_time
from streams.payloads import DECISION_KINDS, REASON_CODES
from streams.recording import read_recording


def _inputs(path: Path) -> tuple[list[Event], int]:
    if not path.exists():
        fail(f"{path}: no such file")
    if is_scenario(path):
        try:
            events, _, _ = load_scenario(path)
        except ScenarioError as exc:
            fail(str(exc))
        return events, 0
    events, bad = [], 0
    for item in read_recording(path, extra=RECORD_CHECKS):
        if isinstance(item, Event):
            events.append(item)
        else:
            bad += 1
            typer.echo(f"set aside {item.source}:{item.line}: {item.reason}", err=True)
    return events, bad


def simulate(
    recording: Annotated[Path, typer.Argument(help="A JSON Lines recording or a scenario YAML.")],
    config: Annotated[
        list[Path],
        typer.Option(
            "--config",
            "-c",
            help="tide configuration YAML (or a ConfigMap wrapping one); may be repeated.",
        ),
    ],
    until: Annotated[
        str | None,
        typer.Option(
            help="Stop at this time: RFC 3339, or +DURATION after the first input (+6m, +1h30m)."
        ),
    ] = None,
    decisions: Annotated[
        Path | None, typer.Option(help="Write decisions here (JSON Lines); default stdout.")
    ] = None,
    log: Annotated[str | None, typer.Option(help="Also keep the whole log here (URL).")] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Serve the eviction metrics on this port after the run (Ctrl-C ends)."),
    ] = None,
    metrics_address: Annotated[
        str, typer.Option(help="Address the metrics server binds (default: this host only).")
    ] = "127.0.0.1",
    another_run: Annotated[
        bool,
        typer.Option(
            "--another-run",
            help="Append to a --log that another run (other inputs or configuration) started.",
        ),
    ] = False,
) -> None:
    """Run the controller over a recording in virtual time against the simulated cluster."""
    if log:
        require_persistent(log)
    policy = read_policy(config)
    events, bad = _inputs(recording)
    stop = None
    if until:
        try:
            if until.startswith("+"):
                first = min((e.at for e in events), default=None)
                stop = first + parse_duration(until[1:]) if first is not None else None
            else:
                stop = parse_time(until)
        except ValueError as exc:
            fail(f"--until: {until!r}: {exc} (RFC 3339, or +DURATION such as +6m)")
    if is_scenario(recording) and stop is None:
        _, _, stop = load_scenario(recording)
    first, last = (
        min((e.at for e in events), default=None),
        stop or max((e.at for e in events), default=None),
    )
    span = (last - first).total_seconds() if first and last else 0.0
    relief = False
    if is_scenario(recording):
        try:
            relief = frees_usage(yaml.safe_load(recording.read_text()) or {})
        except ScenarioError as exc:
            fail(str(exc))
    with Progress("simulate", span, size=len(events)) as bar:
        result = Simulation(
            policy.config,
            eviction=policy.eviction,
            config_source=",".join(str(c) for c in config),
            relief=relief,
        ).run(events, until=stop, progress=bar.callback())
    out = decisions.open("wb") if decisions else sys.stdout.buffer
    try:
        for decision in result.decisions:
            out.write(decision_line(decision) + b"\n")
    finally:
        if decisions:
            out.close()
    if log:
        run = run_id(
            orjson.dumps(dict(policy.raw), option=orjson.OPT_SORT_KEYS, default=str),
            "\n".join(e.id for e in events).encode(),
            (format_time(stop) if stop else "").encode(),
        )
        persist(log, result.log.events, run=run, another_run=another_run)
    typer.echo(
        f"simulated {len(result.log.events)} records, {len(result.decisions)} decisions"
        + (f"; log kept in {log}" if log else ""),
        err=True,
    )
    if metrics_port is not None:
        _serve_metrics(result.log.events, metrics_port, metrics_address)
    if bad:
        raise typer.Exit(1)


def _serve_metrics(events: list[Event], port: int, address: str) -> None:
    """Serve ``/metrics`` (computed from the run's log) until interrupted."""
    import threading

    from prometheus_client import start_http_server

    from projections.metrics import compute_metrics
    from replay.metrics import registry

    server, thread = start_http_server(
        port, addr=address, registry=registry(compute_metrics(events))
    )
    host, bound = server.server_address[:2]
    name = host.decode() if isinstance(host, bytes) else str(host)
    shown = f"[{name}]" if ":" in name else name
    typer.echo(f"serving metrics on http://{shown}:{bound}/metrics (Ctrl-C to stop)", err=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        thread.join()


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


def replay_cmd(
    log: Annotated[str, typer.Argument(help="A log URL, a .db file or a .jsonl recording.")],
    config: Annotated[Path | None, typer.Option(help="Replay with another configuration.")] = None,
    verify: Annotated[bool, typer.Option(help="Fail on the first differing decision.")] = False,
    diff: Annotated[bool, typer.Option(help="List every differing decision.")] = False,
    start: Annotated[
        int | None,
        typer.Option(
            "--from",
            min=0,
            help="Verify only decision points at or after this offset (the state before "
            "it comes from a checkpoint when one is usable).",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="With --config: the what-if summary as JSON.")
    ] = False,
    resimulate: Annotated[
        bool,
        typer.Option(
            help="With --config: re-run the log's inputs (watch events and metric samples "
            "with no cause) through the simulator under the other configuration, so its own "
            "triggers fire, and compare the two decision streams.",
        ),
    ] = False,
) -> None:
    """Re-derive every decision of a log deterministically."""
    if resimulate:
        if config is None:
            fail("--resimulate needs --config: the configuration to re-run the inputs under")
        from controller.cli.explain_cmd import print_resimulated

        policy = read_policy(config)
        print_resimulated(
            read_log_events(log), policy, source=str(config), as_json=as_json, diff=diff
        )
        return
    override = read_policy(config).raw if config else None
    world = None
    if start is None or (log.endswith(".jsonl") and "://" not in log):
        events = read_log_events(log)
    else:
        if "://" not in log and not Path(log).exists():
            fail(f"{log}: no such log")
        world, events = asyncio.run(resume_from(log, start))
    with Progress("replay", len(events)) as bar:
        report = replay(
            events,
            override=override,
            stop_at_first=not diff and override is None,
            start=start or 0,
            world=world,
            progress=bar.callback(),
        )
    if override is not None:
        from controller.cli.explain_cmd import print_whatif

        print_whatif(events, report, start=start or 0, as_json=as_json, diff=diff)
        return
    for difference in report.differences:
        typer.echo(difference.describe())
    for item in report.unaccounted:
        typer.echo(item.describe())
    chain = _chain(log, events) if verify and start is None else None
    if chain is not None and (chain.chained or not chain.ok):
        typer.echo(chain.describe())
    broken = chain is not None and not chain.ok
    problems = len(report.differences) + len(report.unaccounted) + broken
    typer.echo(
        f"replayed {report.checked} decision points, {report.decisions} recorded decisions: "
        + (f"{problems} difference(s)" if problems else "identical")
    )
    if verify and problems:
        raise typer.Exit(1)


def _chain(source: str, events: list[Event]) -> ChainReport:
    """The hash chain of a whole log already read (with its seal, if it keeps one)."""
    if source.endswith(".jsonl") and "://" not in source:
        return check_chain(events)

    async def seal() -> tuple[int, str] | None:
        async with await open_log(source) as log:
            return await log.sealed() if isinstance(log, Sealable) else None

    return check_chain(events, asyncio.run(seal()))


audit_app = typer.Typer(help="Questions over a log.", no_args_is_help=True)


@audit_app.command("why")
def audit_why(
    pod: Annotated[str, typer.Argument(help="namespace/name or name")],
    log: Annotated[str, typer.Option(help="Log URL or path.")] = DEFAULT_LOG,
    as_json: Annotated[bool, typer.Option("--json", help="JSON for scripts.")] = False,
) -> None:
    """Why was this pod evicted or bound (or not)? Sentences first, then the evidence."""
    from controller.cli.explain_cmd import why

    why(read_log_events(log), pod, as_json=as_json)


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
    for event in select_decisions(
        read_log_events(log),
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
    if not pod and not node:
        fail("give --pod or --node")
    events = read_log_events(log)
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

    typer.echo(render(compute_metrics(read_log_events(log))), nl=False)


@audit_app.command("summary")
def audit_summary(
    log: Annotated[str, typer.Option(help="Log URL or path.")] = DEFAULT_LOG,
) -> None:
    """Counts of records and decisions by type and reason."""
    events = read_log_events(log)
    types = Counter(e.type for e in events)
    reasons = Counter(
        (e.data.get("kind"), e.data.get("reason")) for e in events if e.type.startswith("decision.")
    )
    for name, count in sorted(types.items()):
        typer.echo(f"{name:18} {count}")
    for (kind, reason), count in sorted(reasons.items(), key=lambda kv: (str(kv[0]), kv[1])):
        typer.echo(f"  {kind} {reason}: {count}")


def register(app: typer.Typer) -> None:
    """Add simulate, demo, replay and audit."""
    app.command()(simulate)
    app.command()(demo)
    app.command("replay")(replay_cmd)
    app.add_typer(audit_app, name="audit")
