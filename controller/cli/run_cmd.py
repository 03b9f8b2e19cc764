"""`tide simulate`, `tide demo` and `tide replay`."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import sys
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Annotated

import orjson
import typer

from controller.cli.common import (
    RECORD_CHECKS,
    fail,
    read_log_events,
    read_policy,
    require_persistent,
    resume_from,
    save_checkpoint,
    set_aside_in,
)
from controller.cli.progress import Progress
from controller.cli.reading import is_recording, records, replay_log
from controller.drive.loop.virtual import Fed
from controller.policy.framework.durations import parse_duration
from controller.simulate.demo import run_demo
from controller.simulate.inputs import main_window, outlier, read_inputs
from controller.simulate.runner import Simulation
from controller.simulate.scenario import (
    ScenarioError,
    frees_usage,
    is_scenario,
    load_scenario,
    read_scenario,
)
from controller.simulate.spool import Spool
from replay.verify import ReplayReport, replay
from streams.backends import is_sqlite_log, open_log
from streams.chain import ChainReport, Sealable, check_chain, run_id
from streams.codec import decision_line
from streams.events import Event, format_time, parse_time
from streams.log import Quarantined
from streams.recording import read_batches


def _inputs(path: Path) -> tuple[list[Event], list[Quarantined]]:
    if not path.exists():
        fail(f"{path}: no such file")
    if is_scenario(path):
        try:
            events, _, _ = load_scenario(path)
        except ScenarioError as exc:
            fail(str(exc))
        return events, []
    inputs = read_inputs(path, extra=RECORD_CHECKS)
    for item in inputs.set_aside:
        typer.echo(f"set aside {item.source}:{item.line}: {item.reason}", err=True)
    return inputs.events, inputs.set_aside


#: lines decoded at once from a recording: a batch is held decoded until the loop took it
#: (a recording's snapshot of ~6 KB pods is ~20 KB each decoded)
READ_BATCH = 256


def _lazy_inputs(
    path: Path, window: tuple[datetime, datetime] | None, bad: list[Quarantined]
) -> Iterator[Event | Fed]:
    """The recording's events as they are read (with their payload bytes when the line is
    canonical); each line set aside (invalid, or outside the recording's main run
    ``window``) is reported on stderr when reached and kept in ``bad`` for the log's
    quarantine."""
    batches = read_batches(path, size=READ_BATCH, extra=RECORD_CHECKS, canonical=True)
    for batch in batches:
        for item in batch.bad:
            bad.append(item)
            typer.echo(f"set aside {item.source}:{item.line}: {item.reason}", err=True)
        for line, event, payload in zip(batch.lines, batch.events, batch.payloads, strict=True):
            if window is not None and not window[0] <= event.at <= window[1]:
                item = outlier(event, line, window, source=str(path))
                bad.append(item)
                typer.echo(f"set aside {item.source}:{item.line}: {item.reason}", err=True)
                continue
            yield event if payload is None else Fed(event, payload)


def _digest(path: Path) -> bytes:
    """A digest of the file at ``path`` (what the run read), in one streaming pass."""
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.digest()


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
    scenario = is_scenario(recording)
    bad: list[Quarantined] = []
    events: Iterable[Event] | Iterator[Event | Fed]
    if scenario or not recording.exists():
        eager, aside = _inputs(recording)
        events, bad = eager, list(aside)
        first = min((e.at for e in eager), default=None)
        last = max((e.at for e in eager), default=None)
    else:
        window = main_window(recording)
        lazy = _lazy_inputs(recording, window, bad)
        head = next(lazy, None)
        events = itertools.chain([head], lazy) if head is not None else iter(())
        first = None if head is None else head.event.at if isinstance(head, Fed) else head.at
        last = window[1] if window is not None else None
    stop = None
    if until:
        try:
            if until.startswith("+"):
                stop = first + parse_duration(until[1:]) if first is not None else None
            else:
                stop = parse_time(until)
        except ValueError as exc:
            fail(f"--until: {until!r}: {exc} (RFC 3339, or +DURATION such as +6m)")
    if scenario and stop is None:
        _, _, stop = load_scenario(recording)
    last = stop or last
    span = (last - first).total_seconds() if first and last else 0.0
    relief = False
    if scenario:
        try:
            relief = frees_usage(read_scenario(recording))
        except ScenarioError as exc:
            fail(str(exc))
    size = len(events) if isinstance(events, list) else recording.stat().st_size // 4096
    keep_all = metrics_port is not None and not log
    # a run is its configuration, its input file and its end: the same run may be written
    # again (idempotent by id), another one only with --another-run
    run = run_id(
        orjson.dumps(dict(policy.raw), option=orjson.OPT_SORT_KEYS, default=str),
        _digest(recording),
        (format_time(stop) if stop else "").encode(),
    )
    # decisions go out as they are written (a long run's are not all kept in memory),
    # except to a terminal that also shows the progress line: those are written at the end
    out = decisions.open("wb") if decisions else sys.stdout.buffer
    streamed = decisions is not None or not sys.stdout.isatty()
    try:

        def emit(decision: Event) -> None:
            out.write(decision_line(decision) + b"\n")

        with (
            Spool(None if keep_all else log, run=run, another_run=another_run) as spool,
            Progress("simulate", span, size=size) as bar,
        ):
            result = Simulation(
                policy.config,
                eviction=policy.eviction,
                config_source=",".join(str(c) for c in config),
                relief=relief,
                spool=None if keep_all else spool,
                on_decision=emit if streamed else None,
            ).run(events, until=stop, progress=bar.callback())
        for decision in result.decisions:
            emit(decision)
    finally:
        if decisions:
            out.close()
    if log:
        # a run onto an empty log folded exactly its records: its World is the checkpoint
        folded = result.world if not keep_all and spool.whole else None
        save_checkpoint(log, world=folded)
        if bad:  # the lines set aside go to the log's quarantine, as an import's do
            set_aside_in(log, bad)
    typer.echo(
        f"simulated {result.records} records, {result.decided} decisions"
        + (f"; log kept in {log}" if log else ""),
        err=True,
    )
    if metrics_port is not None:
        kept = result.log.events if keep_all else records(str(log))
        _serve_metrics(kept, metrics_port, metrics_address)
    if bad:
        raise typer.Exit(1)


def _serve_metrics(events: Iterable[Event], port: int, address: str) -> None:
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
    if override is None and not is_recording(log):
        if "://" not in log and not Path(log).exists():
            fail(f"{log}: no such log")
        report, chain = replay_log(
            log, start=start, stop_at_first=not diff, chain=verify and start is None
        )
        _print_replay(report, verify=verify, chain=chain)
        return
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
    chain = _chain(log, events) if verify and start is None else None
    _print_replay(report, verify=verify, chain=chain)


def _print_replay(report: ReplayReport, *, verify: bool, chain: ChainReport | None) -> None:
    for difference in report.differences:
        typer.echo(difference.describe())
    for item in report.unaccounted:
        typer.echo(item.describe())
    if chain is not None and (chain.chained or not chain.ok):
        typer.echo(chain.describe())
    # a sealing chain without its final seal: a cut tail (or a writer that did not end)
    broken = chain is not None and (not chain.ok or chain.cut)
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


def register(app: typer.Typer) -> None:
    """Add simulate, demo and replay."""
    app.command()(simulate)
    app.command()(demo)
    app.command("replay")(replay_cmd)
