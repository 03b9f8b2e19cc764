"""`tide replay`: re-derive every decision of a log deterministically.

Three ways through one command: a log replayed as it is (paged from its store, its hash
chain checked with ``--verify``: :func:`controller.cli.reading.replay_log`); a what-if
under another configuration (``--config``: the recorded triggers re-decided, or with
``--resimulate`` the inputs re-run through the simulator); and a recording or a replay
``--from`` an offset (the state before it from the log's checkpoint when one is usable).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from controller.cli.common import fail, read_log_events, read_policy, require_file, resume_from
from controller.cli.progress import Progress
from controller.cli.reading import is_recording, replay_log
from replay.verify import ReplayReport, replay
from streams.backends import open_reader
from streams.chain import ChainReport, Sealable, check_chain
from streams.events import Event
from streams.urls import is_recording_path

ConfigOption = Annotated[Path | None, typer.Option(help="Replay with another configuration.")]
VerifyOption = Annotated[bool, typer.Option(help="Fail on the first differing decision.")]
DiffOption = Annotated[bool, typer.Option(help="List every differing decision.")]
FromOption = Annotated[
    int | None,
    typer.Option(
        "--from",
        min=0,
        help="Verify only decision points at or after this offset (the state before "
        "it comes from a checkpoint when one is usable).",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="With --config: the what-if summary as JSON.")
]
JobsOption = Annotated[
    int,
    typer.Option(
        min=1,
        help="Verify the log in this many segments at once, cut at its checkpoints, one "
        "process each (the same verdict as one process).",
    ),
]
ExecutorOption = Annotated[
    str | None,
    typer.Option(
        help="Run the segments on a Dask cluster: dask://HOST:PORT (the optional extra "
        "tide[dask]).",
    ),
]
ResimulateOption = Annotated[
    bool,
    typer.Option(
        help="With --config: re-run the log's inputs (watch events and metric samples "
        "with no cause) through the simulator under the other configuration, so its own "
        "triggers fire, and compare the two decision streams.",
    ),
]


def replay_cmd(
    log: Annotated[str, typer.Argument(help="A log URL, a .db file or a .jsonl recording.")],
    config: ConfigOption = None,
    verify: VerifyOption = False,
    diff: DiffOption = False,
    start: FromOption = None,
    as_json: JsonOption = False,
    resimulate: ResimulateOption = False,
    jobs: JobsOption = 1,
    executor: ExecutorOption = None,
) -> None:
    """Re-derive every decision of a log deterministically."""
    parallel = jobs > 1 or executor is not None
    if parallel and (resimulate or config or start is not None or is_recording(log)):
        what = "a .jsonl recording" if is_recording(log) else "--config, --resimulate or --from"
        typer.echo(f"--jobs: {what} is replayed in one process", err=True)
        parallel = False
    if resimulate:
        _resimulate(log, config, as_json=as_json, diff=diff)
        return
    override = read_policy(config).raw if config else None
    if override is None and not is_recording(log):
        require_file(log)
        if parallel:
            from controller.cli.reading import replay_jobs

            report, chain, mismatches = replay_jobs(
                log, jobs=jobs, executor=executor, stop_at_first=not diff, chain=verify
            )
            _print_replay(report, verify=verify, chain=chain, mismatches=mismatches)
            return
        report, chain = replay_log(
            log, start=start, stop_at_first=not diff, chain=verify and start is None
        )
        _print_replay(report, verify=verify, chain=chain)
        return
    events, report = _replay_read(log, override=override, start=start, diff=diff)
    if override is not None:
        from controller.cli.explain_cmd import print_whatif

        print_whatif(events, report, start=start or 0, as_json=as_json, diff=diff)
        return
    chain = _chain(log, events) if verify and start is None else None
    _print_replay(report, verify=verify, chain=chain)


def _resimulate(log: str, config: Path | None, *, as_json: bool, diff: bool) -> None:
    """``--resimulate``: the log's inputs re-run under ``config``, both streams compared."""
    if config is None:
        fail("--resimulate needs --config: the configuration to re-run the inputs under")
    from controller.cli.explain_cmd import print_resimulated

    policy = read_policy(config)
    print_resimulated(read_log_events(log), policy, source=str(config), as_json=as_json, diff=diff)


def _replay_read(
    log: str, *, override: Mapping[str, Any] | None, start: int | None, diff: bool
) -> tuple[list[Event], ReplayReport]:
    """A recording, a what-if or a replay ``--from``: the records read whole (from the
    checkpoint at or before ``start`` when one is usable) and replayed."""
    world = None
    if start is None or is_recording_path(log):
        events = read_log_events(log)
    else:
        require_file(log)
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
    return events, report


def _print_replay(
    report: ReplayReport,
    *,
    verify: bool,
    chain: ChainReport | None,
    mismatches: Sequence[str] = (),
) -> None:
    for difference in report.differences:
        typer.echo(difference.describe())
    for item in report.unaccounted:
        typer.echo(item.describe())
    if chain is not None and (chain.chained or not chain.ok):
        typer.echo(chain.describe())
    # a sealing chain without its final seal: a cut tail (or a writer that did not end)
    broken = chain is not None and (not chain.ok or chain.cut)
    for line in mismatches:  # --jobs: a checkpoint that is not the fold of its records
        typer.echo(line)
    problems = len(report.differences) + len(report.unaccounted) + broken + len(mismatches)
    # what the count is made of, so that a cut chain is never read as a decision that differs
    parts = [
        f"{count} {what}"
        for count, what in (
            (len(report.differences), "decision point(s) decided otherwise"),
            (len(report.unaccounted), "record(s) unaccounted for"),
            (int(broken), "chain broken or not sealed"),
            (len(mismatches), "checkpoint(s) not the fold of their records"),
        )
        if count
    ]
    typer.echo(
        f"replayed {report.checked} decision points, {report.decisions} recorded decisions: "
        + (f"{problems} difference(s): {'; '.join(parts)}" if problems else "identical")
    )
    if verify and problems:
        raise typer.Exit(1)


def _chain(source: str, events: list[Event]) -> ChainReport:
    """The hash chain of a whole log already read (with its seal, if it keeps one)."""
    if is_recording_path(source):
        return check_chain(events)

    async def seal() -> tuple[int, str] | None:
        async with await open_reader(source) as log:
            return await log.sealed() if isinstance(log, Sealable) else None

    return check_chain(events, asyncio.run(seal()))


def register(app: typer.Typer) -> None:
    """Add ``tide replay``."""
    app.command("replay")(replay_cmd)
