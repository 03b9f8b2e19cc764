"""`tide log`: JSON Lines recordings in and out of any log backend.

``import`` reads a recording onto a log, setting bad lines aside (in the log's
quarantine, and in the summary with their line numbers) and exiting 1 if there were
any, so a script notices. ``export`` writes records back out in canonical form, so an
import followed by an export reproduces a canonical recording byte for byte.
``quarantine`` lists what was set aside. ``verify`` walks the log's hash chain
(``streams/chain.py``) and names the first bad offset. ``checkpoints`` lists the
checkpoints kept with the log (``projections.checkpoints``). The work lives in
``streams.recording``; this module parses options, opens the log and reports.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Annotated, Any, NoReturn, TypeVar

import typer

from controller.cli.common import RECORD_CHECKS, SHOWN, read_log_events, require_persistent
from projections.checkpoints import Listed, listing
from projections.store import checkpoint_world
from streams.backends import not_a_sqlite_log, open_log, open_reader
from streams.backends.checkpoints import open_log_store
from streams.chain import ChainReport, Sealable, check_chain, check_log
from streams.events import EVENT_TYPES
from streams.log import EventLog, LogError, Quarantined, quarantine_of
from streams.recording import ImportSummary, export_log, import_recording
from streams.urls import DEFAULT_LOG, is_recording_path, parse_log_url

T = TypeVar("T")
PROGRESS_FROM_BYTES = 64 * 2**20  # smaller files import in a few seconds: no bar

LogOption = Annotated[
    str,
    typer.Option(
        "--log", help="Log URL: sqlite:///path.db, sqlite:////abs/path.db, or a .db path."
    ),
]

log_app = typer.Typer(
    name="log",
    help="Move JSON Lines recordings in and out of a log.",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the app."""
    app.add_typer(log_app)


@log_app.command("import")
def import_command(
    file: Annotated[
        Path,
        typer.Argument(exists=True, dir_okay=False, readable=True, help="A JSON Lines recording."),
    ],
    log: LogOption = DEFAULT_LOG,
) -> None:
    """Append a recording to a log; bad lines are set aside (exit code 1 if any)."""
    require_persistent(log)
    size = file.stat().st_size
    summary = ImportSummary()  # filled in as it goes: what was written if the log fails
    with _progress(enabled=sys.stdout.isatty() and size >= PROGRESS_FROM_BYTES, total=size) as on:

        async def run() -> ImportSummary:
            async with await _open(log, create=True) as target:
                await import_recording(
                    file, target, on_progress=on, extra=RECORD_CHECKS, summary=summary
                )
                store = await open_log_store(target.url or log, create=True)
                if store is not None:  # leave a World checkpoint for `tide state`/`replay`
                    async with store:
                        await checkpoint_world(target, store)
                return summary

        try:
            asyncio.run(run())
        except LogError as exc:
            _fail(_interrupted(log, exc, summary))
    typer.echo(
        f"imported {summary.imported}, skipped {summary.duplicates} as duplicate"
        f"{'' if summary.duplicates == 1 else 's'}, set aside {len(summary.set_aside)}"
        + (f" ({summary.conflicts} conflicting ids)" if summary.conflicts else "")
    )
    for item in summary.set_aside[:SHOWN]:
        typer.echo(f"  {_where(item)}")
    if len(summary.set_aside) > SHOWN:
        more = len(summary.set_aside) - SHOWN
        typer.echo(f"  ... and {more} more (tide log quarantine --log {log})")
    if summary.set_aside:
        raise typer.Exit(1)


@log_app.command("export")
def export_command(
    log: LogOption = DEFAULT_LOG,
    start: Annotated[int, typer.Option("--from", min=0, help="First offset.")] = 0,
    stop: Annotated[
        int | None, typer.Option("--to", min=0, help="Stop before this offset.")
    ] = None,
    types: Annotated[
        list[str] | None, typer.Option("--type", help="Only this event type (repeatable).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", dir_okay=False, help="Write here, not to stdout.")
    ] = None,
) -> None:
    """Write a log's records as a canonical JSON Lines recording."""
    unknown = sorted(set(types or ()) - set(EVENT_TYPES))
    if unknown:
        raise typer.BadParameter(
            f"unknown event type {', '.join(unknown)} (known: {', '.join(EVENT_TYPES)})",
            param_hint="--type",
        )

    async def run(dest: IO[bytes] | Path) -> int:
        async with await _open(log, create=False) as source:  # before touching --out
            if isinstance(dest, Path):
                _refuse_own_files(dest, source)
                with dest.open("wb") as stream:
                    return await export_log(
                        source, stream, start=start, stop=stop, types=types or ()
                    )
            return await export_log(source, dest, start=start, stop=stop, types=types or ())

    if out is not None:
        _run(run(out))
        return
    stdout = typer.get_binary_stream("stdout")
    try:
        _run(run(stdout))
        stdout.flush()
    except BrokenPipeError:  # `tide log export | head`: the reader left, nothing is wrong
        _silence_stdout()


@log_app.command("quarantine")
def quarantine_command(log: LogOption = DEFAULT_LOG) -> None:
    """List what was set aside, one "source:line: reason" per line."""

    async def run() -> list[Quarantined]:
        async with await _open(log, create=False) as source:
            return await quarantine_of(source).quarantine()

    items = _run(run())
    for item in items:
        typer.echo(_where(item))
    if not items:  # said, so that "nothing printed" is never read as "it did not look"
        typer.echo("nothing was set aside")


@log_app.command("checkpoints")
def checkpoints_command(log: LogOption = DEFAULT_LOG) -> None:
    """List the checkpoints kept with the log: position, log time, size, digest ok.

    Reads only. Exit 1 when one is bad (readers skip it for an earlier one)."""

    async def run() -> tuple[int, list[Listed]]:
        async with await _open(log, create=False) as source:
            store = await open_log_store(source.url or log, create=False)
            if store is None:
                return await source.head(), []
            async with store:
                return await source.head(), await listing(store, source)

    head, found = _run(run())
    if not found:
        typer.echo(f"no checkpoints kept with this log ({head} records)")
        return
    typer.echo(f"{'position':>10}  {'log time':<24} {'size':>10}  digest")
    for item in found:
        ok = "ok" if item.problem is None else f"BAD: {item.problem}"
        typer.echo(f"{item.position:>10}  {item.at or '-':<24} {item.size:>10}  {ok}")
    typer.echo(f"{len(found)} checkpoint(s); the log has {head} records")
    if any(item.problem is not None for item in found):
        raise typer.Exit(1)


@log_app.command("verify")
def verify_command(
    log: Annotated[
        str, typer.Argument(help="A log URL, a .db path or an exported .jsonl recording.")
    ] = DEFAULT_LOG,
) -> None:
    """Check the log's hash chain: exit 1 naming the first bad offset, or when a chained
    log was not marked complete (its writer did not end cleanly, or its tail was cut)."""
    if is_recording_path(log):
        report = check_chain(read_log_events(log))
        complete_known = False
    else:

        async def run() -> tuple[ChainReport, bool]:
            async with await _open(log, create=False) as source:
                return await check_log(source), isinstance(source, Sealable)

        report, complete_known = _run(run())
    typer.echo(report.describe(sealable=complete_known))
    for note in report.notes:
        typer.echo(f"  note: {note}")
    if not report.ok or report.cut or (complete_known and report.chained and not report.complete):
        raise typer.Exit(1)


def _refuse_own_files(dest: Path, log: EventLog) -> None:
    """``--out`` must not be the log itself (nor its -wal/-shm/.lock files): opening it
    for writing would truncate the log before a record is read."""
    path = getattr(log, "path", None)
    if not isinstance(path, str) or path == ":memory:":
        return
    own = [Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm", ".lock")]
    target = dest.resolve()
    for file in own:
        if target == file.resolve() or (dest.exists() and file.exists() and dest.samefile(file)):
            _fail(f"--out {dest} is the log {log.url} itself; exporting would destroy it")


def _interrupted(log: str, exc: LogError, summary: ImportSummary) -> str:
    """The one line of an import the log failed under (a broker stopped mid-way): the log,
    what went wrong, and what was on the log before it (importing again skips it)."""
    where = parse_log_url(log).display()
    reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
    written = (
        f"{summary.imported} record(s) imported and {len(summary.set_aside)} set aside "
        "before it (importing again skips what is there)"
    )
    if parse_log_url(log).scheme == "kafka":
        broker = parse_log_url(log).parts().netloc.rsplit("@", 1)[-1]
        return f"{where}: the import stopped: broker {broker}: {reason}; {written}"
    return f"{where}: the import stopped: {reason}; {written}"


def _where(item: Quarantined) -> str:
    return f"{item.source}:{item.line}: {item.reason}"


async def _open(url: str, *, create: bool) -> EventLog:
    """Open the log: to write (``create``), or to read only, refusing a missing path or
    one that is not a tide log (exit 2, one line) and writing nothing."""
    try:
        address = parse_log_url(url)
        path = address.local_file
        if create:
            return await open_log(address.text)
        if path is not None and not path.exists():
            _fail(f"{url}: no such log ({path} does not exist)")
        why = None if path is None else not_a_sqlite_log(path)
        if why is not None:
            _fail(f"{url}: {why}")
        return await open_reader(address.text)
    except (ValueError, LogError) as exc:
        _fail(f"{url}: {exc}")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, with the log's errors turned into a message and exit code 1."""
    try:
        return asyncio.run(coro)
    except LogError as exc:
        _fail(str(exc), code=2)


def _fail(message: str, code: int = 2) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@contextmanager
def _progress(*, enabled: bool, total: int) -> Iterator[Callable[[int], None] | None]:
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    columns = ("importing", BarColumn(), DownloadColumn(), TimeRemainingColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task("import", total=total)
        yield lambda position: bar.update(task, completed=position)


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the exit flush stays quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
