"""`tide simulate`: the controller over a recording or a scenario, in virtual time.

A thin command over :mod:`controller.compose.simulated`: it parses the options, reads the
configuration and the inputs, and hands them to the composition, which builds the run
(the log through a spool, the step on the virtual loop, the triggers, the simulated
cluster); this module prints the decisions, the progress line, the summary and the lines
set aside, keeps the log's checkpoint and quarantine, and serves the metrics if asked.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from controller.cli.common import RECORD_CHECKS, fail, read_policy, require_persistent
from controller.cli.progress import Progress
from controller.cli.reading import records
from controller.compose.simulated import (
    Inputs,
    end_of,
    open_simulation,
    plan_simulation,
    read_inputs,
    save_checkpoint,
    set_aside_in,
)
from controller.simulate.runner import RunResult
from controller.simulate.scenario import ScenarioError
from streams.codec import decision_line
from streams.events import Event
from streams.log import Quarantined

ConfigOption = Annotated[
    list[Path],
    typer.Option(
        "--config",
        "-c",
        help="tide configuration YAML (or a ConfigMap wrapping one); may be repeated.",
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        help="Stop at this time: RFC 3339, or +DURATION after the first input (+6m, +1h30m)."
    ),
]
DecisionsOption = Annotated[
    Path | None, typer.Option(help="Write decisions here (JSON Lines); default stdout.")
]
MetricsPortOption = Annotated[
    int | None,
    typer.Option(help="Serve the eviction metrics on this port after the run (Ctrl-C ends)."),
]
MetricsAddressOption = Annotated[
    str, typer.Option(help="Address the metrics server binds (default: this host only).")
]
AnotherRunOption = Annotated[
    bool,
    typer.Option(
        "--another-run",
        help="Append to a --log that another run (other inputs or configuration) started.",
    ),
]


def _report(item: Quarantined) -> None:
    typer.echo(f"set aside {item.source}:{item.line}: {item.reason}", err=True)


def _inputs(recording: Path) -> Inputs:
    if not recording.exists():
        fail(f"{recording}: no such file")
    try:
        return read_inputs(recording, extra=RECORD_CHECKS, report=_report)
    except ScenarioError as exc:
        fail(str(exc))


def _until(until: str | None, inputs: Inputs, *, recording: Path) -> datetime | None:
    try:
        return end_of(until, inputs, path=recording)
    except ScenarioError:
        raise
    except ValueError as exc:
        fail(f"--until: {until!r}: {exc} (RFC 3339, or +DURATION such as +6m)")


@contextmanager
def _decision_output(decisions: Path | None) -> Iterator[tuple[Callable[[Event], None], bool]]:
    """Where decisions go (a file, else stdout) and whether they go out as they are written:
    a long run's are not all kept in memory, except to a terminal that also shows the
    progress line (those are written at the end)."""
    out = decisions.open("wb") if decisions else sys.stdout.buffer

    def emit(decision: Event) -> None:
        out.write(decision_line(decision) + b"\n")

    try:
        yield emit, decisions is not None or not sys.stdout.isatty()
    finally:
        if decisions:
            out.close()


def simulate(
    recording: Annotated[Path, typer.Argument(help="A JSON Lines recording or a scenario YAML.")],
    config: ConfigOption,
    until: UntilOption = None,
    decisions: DecisionsOption = None,
    log: Annotated[str | None, typer.Option(help="Also keep the whole log here (URL).")] = None,
    metrics_port: MetricsPortOption = None,
    metrics_address: MetricsAddressOption = "127.0.0.1",
    another_run: AnotherRunOption = False,
) -> None:
    """Run the controller over a recording in virtual time against the simulated cluster."""
    if log:
        require_persistent(log)
    policy = read_policy(config)
    inputs = _inputs(recording)
    stop = _until(until, inputs, recording=recording)
    keep_all = metrics_port is not None and not log
    try:
        plan = plan_simulation(
            policy,
            inputs,
            path=recording,
            until=stop,
            config_source=",".join(str(c) for c in config),
            log=log,
            keep_all=keep_all,
            another_run=another_run,
        )
    except ScenarioError as exc:
        fail(str(exc))
    with _decision_output(decisions) as (emit, streamed):
        with (
            open_simulation(plan) as run,
            Progress("simulate", plan.span, size=plan.size) as bar,
        ):
            result = run.run(on_decision=emit if streamed else None, progress=bar.callback())
        for decision in result.decisions:
            emit(decision)
    if log:
        # a run onto an empty log kept its checkpoints as it went (the spool); any other
        # is folded from the log's latest checkpoint
        if not run.spool.checkpointed:
            save_checkpoint(log, world=run.folded())
        if inputs.bad:  # the lines set aside go to the log's quarantine, as an import's do
            set_aside_in(log, inputs.bad)
    _summary(result, log)
    if metrics_port is not None:
        kept = result.log.events if keep_all else records(str(log))
        _serve_metrics(kept, metrics_port, metrics_address)
    if inputs.bad:
        raise typer.Exit(1)


def _summary(result: RunResult, log: str | None) -> None:
    typer.echo(
        f"simulated {result.records} records, {result.decided} decisions"
        + (f"; log kept in {log}" if log else ""),
        err=True,
    )


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


def register(app: typer.Typer) -> None:
    """Add ``tide simulate``."""
    app.command()(simulate)
